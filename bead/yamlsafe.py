"""Safe YAML loading through libyaml's C parser when PyYAML was built with it, else PyYAML's own.

Both build Python values with the same SafeConstructor; the C parser is 10-15
times faster, which is what reading frontmatter (reindex) and the eval
suites (a BEAM conversation is half a megabyte of YAML) cost.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
Error = yaml.YAMLError

# YAML 1.1's numbers without their base-60 forms (`1:30` is 90): PyYAML builds one by multiplying a growing integer
# for each `:` part, quadratic in the scalar's length (an 800 KB `1:0:0:...` in an eval suite took 20 s of CPU, 4 MB
# would take minutes; an outside attack). A scalar of that shape is read as the text it is.
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NUMBERS = {
    _INT: re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    _FLOAT: re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
}


def _number(construct: Any) -> Any:
    """``construct`` refusing a base-60 number given its tag outright (`!!int 1:0:0`), and a number Python will not
    build (an integer of more than 4,300 digits) as a YAML error, not a ValueError."""

    def build(loader: Any, node: Any) -> Any:
        if ":" in str(node.value):
            raise ConstructorError(None, None, "a base-60 number is not read here", node.start_mark)
        try:
            return construct(loader, node)
        except ValueError as exc:
            raise ConstructorError(None, None, f"a number that cannot be read: {str(exc)[:120]}", node.start_mark) from None

    return build


def _safe_numbers(base: Any) -> Any:
    """A subclass of the loader ``base`` that reads numbers as above."""
    loader: Any = type(f"Bead{base.__name__}", (base,), {})
    loader.yaml_implicit_resolvers = {
        first: [(tag, _NUMBERS.get(tag, rx)) for tag, rx in resolvers]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    loader.add_constructor(_INT, _number(SafeConstructor.construct_yaml_int))
    loader.add_constructor(_FLOAT, _number(SafeConstructor.construct_yaml_float))
    return loader


Loader: Any = _safe_numbers(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
PyLoader: Any = _safe_numbers(yaml.SafeLoader)  # PyYAML's own parser (config.yaml: its messages name the character)


class Constructor(SafeConstructor):
    """SafeConstructor reading numbers as ``Loader`` does (for a node tree ``PyLoader`` composed)."""


Constructor.add_constructor(_INT, _number(SafeConstructor.construct_yaml_int))
Constructor.add_constructor(_FLOAT, _number(SafeConstructor.construct_yaml_float))


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
