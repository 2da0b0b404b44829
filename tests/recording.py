"""What the harness recorders (tests/fixtures/*/record.py) share: running one scenario of a real CLI, and writing the
requests it sent, scrubbed, one JSON line each."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakes import Recorded


def run_scenario(tag: str, cmd: list[str], cwd: Path, env: dict[str, str], typed: str | None = None) -> None:
    """Run one scenario (``typed``: what is typed on stdin, else none); say its exit status, and its output's end
    when it failed."""
    stdin: dict[str, Any] = {"input": typed} if typed is not None else {"stdin": subprocess.DEVNULL}
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **stdin)
    print(f"{tag}: exit {p.returncode}", file=sys.stderr)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:], file=sys.stderr)


def write_records(
    out_path: str, records: list[dict], scrub: Callable[[str], str], harness: str, version: str, body_text: bool = False
) -> None:
    """One JSON line per recorded request (``records``: dicts of ``tag``, ``request`` and the scripted ``response``),
    every text through ``scrub`` (the credential, the scratch paths); ``harness`` names the version's field."""
    with open(out_path, "w", encoding="utf-8") as out:
        for rec in records:
            r: Recorded = rec["request"]
            body = scrub(r.body.decode("utf-8")).encode("utf-8")
            response = rec.get("response")
            line: dict[str, Any] = {
                "tag": rec["tag"],
                harness: version,
                "method": r.method,
                "path": r.path,
                "headers": [[k, scrub(v)] for k, v in r.headers],
                "body_b64": base64.b64encode(body).decode(),
                **({"body_text": body.decode("utf-8")} if body_text else {}),
                "body_len": len(body),
                "body_sha256": hashlib.sha256(body).hexdigest(),
                "response": json.loads(scrub(json.dumps(response))) if response is not None else None,
            }
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{len(records)} requests from {harness} {version} -> {out_path}", file=sys.stderr)
