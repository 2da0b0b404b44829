"""Where the needed facts rank by meaning alone when a fact's vector is of other parts of it (issue #22).

For each turn of the three injection suites that needs a fact and has the person's words, the question is what the
pointers ask (``bead.recall.pointers.question``) and every fact of the suite plus N near misses (``bead eval --scale
N``'s) is ranked by cosine with it, the fact's vector being of: its key's words and body (``kb``, what the indexer
stores), its key's words alone (``k``), its body alone (``b``), the body's first twelve words (``first``), or the best
or a sum of those. Prints each view's median rank of the needed facts and the share in the first 5, 10 and 20::

    .venv-test/bin/python benchmarks/fact_views.py --scale 2000
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
from bead.index.semantic import fact_text, key_text  # noqa: E402
from bead.recall import pointers  # noqa: E402
from bead.recall.cues import extract  # noqa: E402
from bead.wire.anthropic import conversation_of  # noqa: E402

SUITES = ["injection.yaml", "injection-2.yaml", "injection-3.yaml"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=2000)
    args = ap.parse_args()
    embed = embedder("onnx-int8")
    for name in SUITES:
        suite = load(Path(__file__).parent.parent / "evals" / name)
        real = list(suite["facts"])
        current = {f["key"]: f for f in real}  # the last entry of a key is its current value
        facts = [*current.values(), *distractors("near-miss", args.scale, str(suite["project"]), real)]
        keys = [f["key"] for f in facts]
        asked = []
        for t in suite["turns"]:
            conv = conversation_of({"model": "m", "max_tokens": 1, "system": "s", "messages": t["messages"]}, {})
            q = pointers.question(extract(conv)) if t.get("needs") else ""
            if q:
                asked.append((t["needs"], q))
        questions = embed([q for _, q in asked])
        views = {
            "kb": embed([fact_text(f["key"], f["body"]) for f in facts]),
            "k": embed([key_text(f["key"]) for f in facts]),
            "b": embed([f["body"] for f in facts]),
            "first": embed([" ".join(f["body"].split()[:12]) for f in facts]),
        }
        sims = {v: questions @ m.T for v, m in views.items()}
        sims["max(k,b)"] = np.maximum(sims["k"], sims["b"])
        sims["max(kb,k)"] = np.maximum(sims["kb"], sims["k"])
        sims["kb+k/2"] = sims["kb"] + 0.5 * sims["k"]
        sims["max(kb,k,first)"] = np.maximum(sims["max(kb,k)"], sims["first"])
        print(f"== {name}: {len(asked)} turns with the person's words, {len(facts)} facts")
        for view, s in sims.items():
            ranks = []
            for i, (needs, _) in enumerate(asked):
                place = {keys[j]: r + 1 for r, j in enumerate(np.argsort(-s[i], kind="stable"))}
                ranks += [place[k] for k in needs]
            r = np.array(ranks)
            print(
                f"  {view:16s} median {np.median(r):6.1f}  first 5 {np.mean(r <= 5):.2f}  "
                f"first 10 {np.mean(r <= 10):.2f}  first 20 {np.mean(r <= 20):.2f}"
            )


if __name__ == "__main__":
    main()
