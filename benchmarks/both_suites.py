"""Both injection dev suites as one (issue #22), for cross-validation by conversation over all their turns.

evals/injection.yaml and evals/injection-2.yaml hold the same project and facts; this writes one suite with the
facts once and every turn of both, so that `bead eval OUT --cv 5 --grid GRID --scale 300 --scale 2000` chooses a
setting on folds drawn from both. Nothing is asserted::

    .venv-test/bin/python benchmarks/both_suites.py /tmp/both.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    first, second = (yaml.safe_load((ROOT / "evals" / n).read_text()) for n in ("injection.yaml", "injection-2.yaml"))
    if first["facts"] != second["facts"] or first["project"] != second["project"]:
        raise SystemExit("the two suites no longer share their project and facts: combine them by hand")
    both = {**first, "name": "invoicing-injection-both", "turns": first["turns"] + second["turns"]}
    Path(sys.argv[1]).write_text(yaml.safe_dump(both, sort_keys=False, allow_unicode=True))
    print(f"{len(both['turns'])} turns, {len(both['facts'])} facts -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
