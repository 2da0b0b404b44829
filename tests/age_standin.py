"""A stand-in for age 1.3's `age-plugin-pq` and `age-keygen -pq`, for tests on machines without age 1.3.

It speaks age's real plugin protocol (C2SP age-plugin: the recipient-v1 and
identity-v1 state machines over stdin/stdout), so pyrage runs it exactly as
it would run the real plugin, and its keys have the real shapes
(``age1pq1...`` recipients, ``AGE-SECRET-KEY-PQ-1...`` identities, converted
to ``AGE-PLUGIN-PQ-1...`` for the protocol). What it does NOT do is ML-KEM:
it wraps the file key with a pad derived from the key (SHA-256), which is no
protection at all. It proves bead's plumbing (detection, the identity
conversion, the plugin calls through pyrage), not the real cryptography.

Run as ``age_standin.py plugin --age-plugin=recipient-v1|identity-v1``,
``age_standin.py keygen -pq``, or ``age_standin.py old-keygen ...`` (an
age-keygen older than 1.3, which knows no -pq).
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bead.vault import bech32  # noqa: E402

TAG = "standin-pq"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def recipient_data(seed: bytes) -> bytes:
    return hashlib.sha256(b"standin-recipient" + seed).digest()


def pad(rdata: bytes, n: int) -> bytes:
    return hashlib.sha256(b"standin-wrap" + rdata).digest()[:n]


def xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


# ----- the wire format: "-> type args...", then a base64 body in lines of 64, the last one shorter -----
def read_stanza(inp) -> tuple[list[str], bytes]:
    header = inp.readline()
    if not header:
        raise EOFError
    words = header.decode().rstrip("\n").split(" ")
    assert words[0] == "->", header
    lines = []
    while True:
        line = inp.readline().decode().rstrip("\n")
        lines.append(line)
        if len(line) < 64:
            break
    return words[1:], unb64("".join(lines))


def write_stanza(out, words: list[str], body: bytes = b"") -> None:
    text = b64(body)
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    if not lines or len(lines[-1]) == 64:
        lines.append("")
    out.write(("-> " + " ".join(words) + "\n" + "\n".join(lines) + "\n").encode())
    out.flush()


def recipient_v1(inp, out) -> None:
    recipients: list[str] = []
    file_keys: list[bytes] = []
    while True:
        words, body = read_stanza(inp)
        if words[0] == "add-recipient":
            recipients.append(words[1])
        elif words[0] == "wrap-file-key":
            file_keys.append(body)
        elif words[0] == "done":
            break
    for i, fk in enumerate(file_keys):
        for r in recipients:
            _hrp, rdata = bech32.decode(r)
            write_stanza(out, ["recipient-stanza", str(i), TAG, b64(rdata[:8])], xor(fk, pad(rdata, len(fk))))
            read_stanza(inp)  # ok
    write_stanza(out, ["done"])


def identity_v1(inp, out) -> None:
    seeds: list[bytes] = []
    stanzas: list[tuple[int, list[str], bytes]] = []
    while True:
        words, body = read_stanza(inp)
        if words[0] == "add-identity":
            seeds.append(bech32.decode(words[1])[1])
        elif words[0] == "recipient-stanza":
            stanzas.append((int(words[1]), words[2:], body))
        elif words[0] == "done":
            break
    done: set[int] = set()
    for index, (tag, *args), body in stanzas:
        if tag != TAG or index in done:
            continue
        for seed in seeds:
            rdata = recipient_data(seed)
            if args and args[0] == b64(rdata[:8]):
                write_stanza(out, ["file-key", str(index)], xor(body, pad(rdata, len(body))))
                read_stanza(inp)  # ok
                done.add(index)
                break
    write_stanza(out, ["done"])


def keygen(args: list[str]) -> int:
    if "-pq" not in args:
        print("the stand-in only makes -pq keys", file=sys.stderr)
        return 2
    seed = os.urandom(32)
    recipient = bech32.encode("age1pq", recipient_data(seed))
    identity = bech32.encode("age-secret-key-pq-", seed).upper()
    print(f"# created: {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}\n# public key: {recipient}\n{identity}")
    return 0


def main(argv: list[str]) -> int:
    mode, args = argv[0], argv[1:]
    if mode == "keygen":
        return keygen(args)
    if mode == "old-keygen":
        print("flag provided but not defined: -pq", file=sys.stderr)
        return 2
    machine = next((a.split("=", 1)[1] for a in args if a.startswith("--age-plugin=")), "")
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    if machine == "recipient-v1":
        recipient_v1(inp, out)
    elif machine == "identity-v1":
        identity_v1(inp, out)
    else:
        print(f"unknown state machine {machine!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
