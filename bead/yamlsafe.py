"""Safe YAML loading through libyaml's C parser when PyYAML was built with it, else PyYAML's own.

Both build Python values with the same SafeConstructor; the C parser is 10-15
times faster, which is what reading frontmatter (reindex) and the eval
suites (a BEAM conversation is half a megabyte of YAML) cost.
"""

from __future__ import annotations

from typing import Any

import yaml

Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
Error = yaml.YAMLError


def load(text: str) -> Any:
    """``text`` as Python values (``yaml.safe_load``'s result); raises ``yaml.YAMLError``."""
    return yaml.load(text, Loader=Loader)


def load_plain(text: str) -> Any:
    """``load`` of YAML with no anchor, no alias and no key given twice in one mapping (a file's frontmatter: bead
    writes none of them). An alias repeats what its anchor holds, and nine aliases of nine aliases make a few
    hundred bytes expand to gigabytes when a value is read as text; a key given twice is read as its last value
    while a person reading the file sees the first (`trust: agent_observed` above, `trust: user_stated` far
    below). Such a text is refused (``yaml.YAMLError``) before any value is built."""
    # One frame per open collection: a mapping's keys seen so far and whether its next node is a key (None for a
    # sequence). Linear in the events.
    frames: list[tuple[set[str], list[bool]] | None] = []

    def took_node() -> None:  # a whole node stood in the open mapping's key or value place
        if frames and frames[-1] is not None:
            frames[-1][1][0] = not frames[-1][1][0]

    for event in yaml.parse(text, Loader=Loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.YAMLError("anchors and aliases are not read here: bead writes none")
        if isinstance(event, yaml.ScalarEvent):
            frame = frames[-1] if frames else None
            if frame is not None and frame[1][0]:
                if event.value in frame[0]:
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise yaml.YAMLError(f"the key {event.value[:80]!r} is given twice (again on line {line})")
                frame[0].add(event.value)
            took_node()
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            frames.append((set(), [True]) if isinstance(event, yaml.MappingStartEvent) else None)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frames.pop()
            took_node()
    return load(text)
