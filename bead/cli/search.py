"""bead search."""

from __future__ import annotations

import dataclasses

import click

from .common import echo, emit, json_option, open_memory


@click.command()
@click.argument("query")
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 1000), help="Results per corpus.")
@click.option("--facts", "corpus", flag_value="facts", help="Search facts only.")
@click.option("--raw", "corpus", flag_value="raw", help="Search raw turns only.")
@click.option("--all-versions", is_flag=True, help="Include superseded versions (as a plain retriever would).")
@click.option("--scope", help="Boost this scope, e.g. project/webshop.")
@json_option
def search(query, limit, corpus, all_versions, scope, as_json):
    """Search facts and raw turns (BM25), ranked, with scores.

    QUERY is plain text: it is quoted into a valid FTS5 query, never passed raw.
    Each result shows its relevance: its score as a share of its list's best
    (1.00); --json gives the score too (BM25; for raw turns with bead[semantic],
    BM25 over the best plus the meaning term, and the BM25 score beside it).
    """
    from ..errors import BeadError
    from ..index.query import terms
    from ..recall.rank import search as ranked

    if not terms(query, keep_stopwords=True):
        raise BeadError(
            f"nothing to search for in {query!r}: it has no words",
            "give words to search for (`bead search staging host`); `bead list` shows every key",
        )
    mem = open_memory()
    facts, raw = ranked(mem.index, query, limit=limit, corpus=corpus or "all", current_only=not all_versions, scope=scope)
    # A row the index calls current whose key has a newer version file (the index behind the files): shown as what
    # it is, a replaced value, until the index catches up.
    stale = mem.behind(h.row for h in facts if h.row["current"])
    facts = [dataclasses.replace(h, row={**h.row, "current": 0, "status": "superseded"}) if h.id in stale else h for h in facts]
    data = {
        "facts": [
            {
                "id": h.id,
                "score": float(f"{h.score:.4g}"),
                "status": h.row["status"],
                "trust": h.row["trust"],
                "current": bool(h.row["current"]),
                "body": h.text,
            }
            for h in facts
        ],
        "raw": [
            {
                "id": h.id,
                "score": float(f"{h.score:.4g}"),
                "bm25": float(f"{h.row['bm25']:.4g}"),
                "role": h.row["role"],
                "source": h.row.get("label") or "",  # who produced it: "user (typed)", "user (pasted)", ...
                "at": h.row["at"],
                "path": h.row["path"],
                "ref": h.row["ref"],
                "text": h.text,
            }
            for h in raw
        ],
    }

    # One readable scale for both lists: BM25's raw numbers depend on the corpus (a small one gives 1e-06),
    # so each result shows its score as a share of its list's best.
    for name in ("facts", "raw"):
        best = max((r["score"] for r in data[name]), default=0.0) or 1.0
        for r in data[name]:
            r["relevance"] = round(r["score"] / best, 2)

    def human(d):
        from ..display import one_line

        if corpus in (None, "facts"):
            echo(f"facts ({len(d['facts'])})")
            for h in d["facts"]:
                tag = "" if h["current"] else f" [{h['status']}]"
                if h["status"] == "dormant":
                    tag = " [dormant]"
                echo(f"  {h['relevance']:4.2f}  {h['id']}{tag}  {one_line(h['body'], 90)}")
        if corpus in (None, "raw"):
            echo(f"raw turns ({len(d['raw'])})")
            for h in d["raw"]:
                echo(f"  {h['relevance']:4.2f}  {h['id']} {h['source'] or h['role']} {h['at']}  {one_line(h['text'], 90)}")

    emit(data, as_json, human)


COMMANDS = [search]
