"""Where the needed facts of the injection suite's turns rank by meaning alone, per embedding model (issue #22).

For each turn of ``evals/injection.yaml`` that needs a fact and has the person's words, the question is what the
pointers ask (``bead.recall.pointers.question``: the end of those words) and every fact of the suite plus N near
misses (``bead.evals.nearmiss``, as ``bead eval --scale N`` writes them) is ranked by cosine with it; each needed
fact's rank is printed, then the median and how many are in the first ten and twenty. The models are
``benchmarks/sweep_semantic.py``'s (``onnx-int8`` is what bead[semantic] runs; the others need that script's scratch
venv)::

    /tmp/semvenv/bin/python benchmarks/needed_ranks.py --models onnx-int8,e5small --scale 2000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from sweep_semantic import embedder  # noqa: E402

from bead.evals.scaled import distractors  # noqa: E402
from bead.evals.suite import load  # noqa: E402
from bead.index.semantic import fact_text  # noqa: E402
from bead.recall import pointers  # noqa: E402
from bead.recall.cues import extract  # noqa: E402
from bead.wire.anthropic import conversation_of  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="onnx-int8")
    ap.add_argument("--scale", type=int, default=2000)
    ap.add_argument("--suite", default=str(Path(__file__).parent.parent / "evals" / "injection.yaml"))
    args = ap.parse_args()
    suite = load(args.suite)
    real = list(suite["facts"])
    current = {f["key"]: f for f in real}  # the last entry of a key is its current value
    facts = [*current.values(), *distractors("near-miss", args.scale, str(suite["project"]), real)]
    keys = [f["key"] for f in facts]
    texts = [fact_text(f["key"], f["body"]) for f in facts]
    asked = []
    for t in suite["turns"]:
        if not t.get("needs"):
            continue
        conv = conversation_of({"model": "m", "max_tokens": 1, "system": "s", "messages": t["messages"]}, {})
        q = pointers.question(extract(conv))
        if q:
            asked.append((t["id"], t["needs"], q))
    for name in args.models.split(","):
        embed = embedder(name)
        matrix = embed(texts)
        ranks: list[int] = []
        print(f"== {name}: {len(asked)} turns with the person's words, {len(facts)} facts")
        for tid, needs, q in asked:
            order = np.argsort(-(matrix @ embed([q])[0]), kind="stable")
            place = {keys[i]: r + 1 for r, i in enumerate(order)}
            got = [place[k] for k in needs]
            ranks += got
            print(f"  {tid} {got} {q[-60:]!r}")
        print(
            f"  median {np.median(ranks):g}, in the first 10: {sum(r <= 10 for r in ranks)}, "
            f"in the first 20: {sum(r <= 20 for r in ranks)}, of {len(ranks)}"
        )


if __name__ == "__main__":
    main()
