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
    """``load`` of YAML with no anchor and no alias (a file's frontmatter: bead writes none). An alias repeats
    what its anchor holds, and nine aliases of nine aliases make a few hundred bytes expand to gigabytes when a
    value is read as text; such a text is refused (``yaml.YAMLError``) before any value is built."""
    for event in yaml.parse(text, Loader=Loader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.YAMLError("anchors and aliases are not read here: bead writes none")
    return load(text)
