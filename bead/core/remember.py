""""remember X": the person asks for a fact to be kept, in their own words.

Only the person's typed text counts (never tool output, the assistant's
text, the system prompt or a harness reminder). A value the secret scan
flags is not stored. The key is proposed from the value's first words:
``user/<words>`` when it speaks of the person, else the project's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..capture.secrets import redact
from ..store.keys import MAX_SEGMENT_BYTES
from .conversation import Identity, Message, Source
from .memory import Memory

# "remember X" where a sentence starts: "remember that ...", "Then remember: ...".
# Every run is bounded, so the scan stays linear on hostile text.
_REMEMBER = re.compile(
    r"(?im)(?:^|[.!?][ \t]{1,8})(?:(?:then|and|also|please|pls)[, \t]{1,4})*remember(?:[ \t]{1,4}that)?[ \t]{0,4}"
    r"[:,\-]?[ \t]{1,4}([^\n]{3,600}?)[ \t]*(?:[.!?](?=\s|$)|$)")
_KEY_SKIP = frozenset("""a an the is are was were be been am i i'm my me mine we our you your it its this that
these those to of in on at for with and or but so that project repo please always""".split())
_FIRST_PERSON = re.compile(r"(?i)\b(i|i'm|i've|my|me|mine)\b")


@dataclass(frozen=True)
class Remembered:
    id: str | None             # the fact written, or None
    refused: str | None = None  # why nothing was written


def requests(message: Message) -> list[str]:
    """The values "remember ..." asks for in the person's typed text of ``message``."""
    out = []
    for part in message.parts:
        if part.source is Source.TYPED and part.kind == "text":
            m = _REMEMBER.search(part.text)
            if m:
                out.append(m.group(1).strip())
    return out


def propose_key(value: str, project: str | None) -> str:
    """A key for a remembered value: user/... for the person, else the project's."""
    skip = _KEY_SKIP | set(re.split(r"[-_.]", project or ""))
    words = [t for t in re.findall(r"[a-z0-9]+", value.lower()) if t not in skip][:4] or ["note"]
    slug = "-".join(re.sub(r"[^a-z0-9]", "", w) for w in words).strip("-")
    # A long word (a pasted hash, a path) must not make a key the store refuses.
    slug = slug[:MAX_SEGMENT_BYTES].strip("-") or "note"
    if _FIRST_PERSON.search(value) or not project:
        return f"user/{slug}"
    return f"project/{project}/{slug}"


def remember(mem: Memory, message: Message, ident: Identity) -> list[Remembered]:
    """Write each value the person asked to remember as a ``user_stated`` fact."""
    out = []
    for value in requests(message):
        if redact(value)[1]:
            out.append(Remembered(None, "a value that looks like a credential is not stored"))
            continue
        key = propose_key(value, ident.project)
        res = mem.write(key, value, "user" if key.startswith("user/") else "project", trust="user_stated")
        out.append(Remembered(res.fact.id))
    return out
