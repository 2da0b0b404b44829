"""The review load that dream provenance adds, measured on the dev transcripts: prints figures, asserts nothing.

    python benchmarks/review_load.py                       # LoCoMo and BEAM suites under ../shared/evals
    python benchmarks/review_load.py SUITE.yaml ...        # other raw-recall suites

With no model here, proposals are built as a dream model would build them
from a conversation: each user turn's first sentence (of at least three
content words: greetings are not facts), citing that turn. Each turn is
first parsed and captured as the proxy does (``parts_of`` splits typed from
pasted text; one raw turn per run of parts with the same source), so a turn
that opens with a code fence or a pasted document gives a proposal that
cites pasted text. Every proposal then goes through the dream's own
``decide`` (no second opinion). Printed: the share written, queued as
``untrusted-source``, queued as ``suspicious`` (the prefilter) and rejected,
and the share of turns with any text that is not typed.

Further rows: every sentence of a user turn (a model that also takes facts
from what the person pasted: those are untrusted), and the assistant turns'
first sentences (a model that takes facts from the agent's answers: all
untrusted). Those rows are the cost of the rule on a real dream.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bead.conversation import Identity  # noqa: E402
from bead.core.capture import message_turns  # noqa: E402
from bead.dream.decide import Proposal, decide  # noqa: E402
from bead.evals.suite import temp_memory  # noqa: E402
from bead.index.query import terms  # noqa: E402
from bead.wire.anthropic import message_of  # noqa: E402

SHARED = ROOT.parent / "shared" / "evals"
_SENTENCE = re.compile(r"[^\n.!?]{1,600}[.!?]?")


def sentences(text: str, every: bool) -> list[str]:
    """The first sentence of ``text`` (or every one) with at least three content words."""
    found = [m.group(0).strip() for m in _SENTENCE.finditer(text.strip())]
    found = found if every else found[:1]
    return [s for s in found if len(terms(s)) >= 3]


def measure(paths: list[Path], role: str, every: bool = False) -> tuple[Counter[str], int, int]:
    """(decisions by action/kind, proposals, turns of ``role`` with text that is not their own)."""
    out: Counter[str] = Counter()
    proposals = not_own = 0
    ident = Identity("eval", "eval", "t", "demo")
    with temp_memory() as mem:
        for path in paths:
            suite = yaml.safe_load(path.read_text(encoding="utf-8"))
            for s_i, session in enumerate(suite.get("sessions") or []):
                sid = f"s{s_i}-{path.stem}"
                for i, t in enumerate(session.get("turns") or []):
                    message = message_of(i, {"role": t.get("role", "user"), "content": str(t.get("text", ""))})
                    turns = message_turns(message, ident)
                    if not turns:
                        continue
                    raw = mem.append_turns(sid, [(x.role, x.text, None, None, x.flags) for x in turns])
                    if t.get("role", "user") != role:
                        continue
                    own = "typed" if role == "user" else "assistant"
                    values = sentences(str(t.get("text", "")), every)
                    not_own += any(r.flags.get("source") != own for r in raw) and bool(values)
                    for value in values:
                        proposals += 1
                        d = decide(
                            mem, Proposal("project/demo/fact", "project", value, tuple(r.n for r in raw)), raw, lambda v: None
                        )
                        out[d.kind or d.action] += 1
    return out, proposals, not_own


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suites", nargs="*", type=Path)
    args = ap.parse_args()
    groups = {"LoCoMo": sorted((SHARED / "locomo").glob("*.yaml")), "BEAM": sorted((SHARED / "beam").glob("*.yaml"))}
    if args.suites:
        groups = {"given": args.suites}
    print(
        f"{'transcripts':<11} {'proposals from':<32} {'n':>5} {'written':>8} {'untrusted':>10} {'suspicious':>11} "
        f"{'rejected':>9} {'turns not all own text':>23}"
    )
    rows = (
        ("user", False, "user turns, first sentence"),
        ("user", True, "user turns, every sentence"),
        ("assistant", False, "assistant turns, first sentence"),
    )
    for name, paths in groups.items():
        for role, every, label in rows:
            counts, n, not_own = measure(paths, role, every)

            def share(k: int, of: int) -> str:
                return f"{k / of:.1%}" if of else "-"

            print(
                f"{name:<11} {label:<32} {n:>5} {share(counts['write'], n):>8} "
                f"{share(counts['untrusted-source'], n):>10} {share(counts['suspicious'], n):>11} "
                f"{share(counts['reject'] + counts['skip'], n):>9} {not_own:>23}"
            )


if __name__ == "__main__":
    main()
