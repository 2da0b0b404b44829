"""Candidate gate: logistic regression over evidence features, learned on the dev split.

Run from the repository root (it imports bead from there):

    python evals/learned_gate.py          # leave-one-turn-out CV on dev, then the test split once

Features per (turn, fact): the reference evidence score, its rank and margin,
the strongest shared term per cue source, specific shared terms and their
coverage of the fact, the fact's type, whether the tool output shows an
error, whether the person's text is a bare acknowledgement. Trained in pure
Python (no numpy) with L2 and a weight on the rare positives. This candidate
lost on dev (docs/results.md), so the proxy does not use it; the script
stays so that the figure can be reproduced.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from learned_gate_features import load, prob, train, vec  # noqa: E402

L2, POS_WEIGHT, THRESHOLD, MAX_FACTS, CANDIDATES = 0.1, 5.0, 0.6, 2, 12


def xy(turns):
    X, y = [], []
    for _tid, _split, needs, cands in turns:
        for c in cands[:CANDIDATES]:
            X.append(vec(c))
            y.append(1 if c["key"] in needs else 0)
    return X, y


def score(turns, models):
    needed = injected = hits = false = 0
    for (_tid, _split, needs, cands), model in zip(turns, models, strict=False):
        ranked = sorted(((prob(model, vec(c)), c["key"]) for c in cands), reverse=True)
        chosen = [k for p, k in ranked[:MAX_FACTS] if p >= THRESHOLD]
        needed += len(needs)
        injected += len(chosen)
        hits += len(needs & set(chosen))
        false += bool(set(chosen) - needs)
    return (
        f"recall {hits / needed:.2f}  precision {hits / injected if injected else 0:.2f}  "
        f"false-injection turns {false / len(turns):.0%}  ({injected} injected)"
    )


def main() -> None:
    data = load()
    dev = [d for d in data if d[1] == "dev"]
    test = [d for d in data if d[1] == "test"]
    cv_models = [train(*xy(dev[:i] + dev[i + 1 :]), l2=L2, pos_w=POS_WEIGHT, epochs=300) for i in range(len(dev))]
    print("dev, leave-one-turn-out:", score(dev, cv_models))
    full = train(*xy(dev), l2=L2, pos_w=POS_WEIGHT, epochs=300)
    print("test, trained on all of dev:", score(test, [full] * len(test)))


if __name__ == "__main__":
    main()
