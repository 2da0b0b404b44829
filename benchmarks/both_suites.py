"""The invoicing injection suites as one (issue #22), for cross-validation by conversation over all their turns.

evals/injection.yaml, evals/injection-2.yaml and evals/injection-3.yaml hold the same project and facts; this writes
one suite with the facts once and every turn of the suites named (by default the first two: the third is held out,
never tuned on), so that `bead eval OUT --cv 5 --grid GRID --scale 300 --scale 2000` chooses a setting on folds drawn
from them all. Nothing is asserted::

    .venv-test/bin/python benchmarks/both_suites.py /tmp/both.yaml [injection.yaml injection-2.yaml ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("injection.yaml", "injection-2.yaml")


def main() -> None:
    names = sys.argv[2:] or list(DEFAULT)
    suites = [yaml.safe_load((ROOT / "evals" / n).read_text()) for n in names]
    first = suites[0]
    if any(s["facts"] != first["facts"] or s["project"] != first["project"] for s in suites[1:]):
        raise SystemExit("the suites no longer share their project and facts: combine them by hand")
    name = "invoicing-injection-both" if len(suites) == 2 else f"invoicing-injection-{len(suites)}-suites"
    both = {**first, "name": name, "turns": [t for s in suites for t in s["turns"]]}
    Path(sys.argv[1]).write_text(yaml.safe_dump(both, sort_keys=False, allow_unicode=True))
    print(f"{len(both['turns'])} turns, {len(both['facts'])} facts -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
