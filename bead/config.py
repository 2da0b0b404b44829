"""config.yaml: read strictly, written once.

A typo or a bad value is an error that names the line and the fix; bead
never falls back to a default silently. The file is created with mode 0600
when missing and never rewritten once it exists.
"""

from __future__ import annotations

import difflib
import getpass
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml

from .errors import BeadError
from .paths import Home


@dataclass(frozen=True)
class Field:
    kind: type | tuple[type, ...]
    default: Any
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], str | None] | None = None  # returns an error text
    doc: str = ""


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be greater than 0"


# The schema is data: one place says which keys exist, their types and
# defaults. Sections for services that later issues add are listed here so
# that the default file is complete and every key is validated.
SCHEMA: dict[str, Any] = {
    "owner": Field(str, None, doc="owner written on every record (default: login name)"),
    "proxy": {
        "listen": Field(str, "127.0.0.1:7077", doc="loopback address of the proxy"),
        "upstream": Field(str, "https://api.anthropic.com", doc="the real API"),
        "project": Field((str, type(None)), None, doc="project when the harness reports none"),
        "trace": Field((str, type(None)), None, doc="append one JSON line per request to this file"),
        "recall_deadline_ms": Field(int, 500, check=_positive, doc="past it, the request goes out without new memory"),
        "pinned_budget_tokens": Field(int, 2000, check=_positive),
        "cue_budget_tokens": Field(int, 1500, check=_positive),
    },
    "recall": {
        "evidence_threshold": Field((int, float), 1.2, check=_positive, doc="the default gate's strong-match bar"),
        "max_facts": Field(int, 2, check=_positive),
        "max_excerpts": Field(int, 2),
    },
    "rerank": {
        "enabled": Field(bool, False, doc="ask a chat model which candidates help (adds its latency)"),
        "timeout_ms": Field(int, 4000, check=_positive),
        "min_evidence": Field((int, float), 0.5),
        "max_candidates": Field(int, 5, check=_positive),
        # The dream model is used unless these name another one.
        "provider": Field((str, type(None)), None, choices=("ollama", "anthropic", "openai")),
        "model": Field((str, type(None)), None),
        "base_url": Field((str, type(None)), None),
        "api_key_env": Field((str, type(None)), None),
        "api_key_command": Field((str, type(None)), None),
    },
    "dream": {
        "provider": Field(str, "ollama", choices=("ollama", "anthropic", "openai")),
        "model": Field((str, type(None)), None),
        "base_url": Field((str, type(None)), None),
        "api_key_env": Field((str, type(None)), None),
        "api_key_command": Field((str, type(None)), None),
        "schedule": Field(str, "7 3 * * *", doc="cron line, local time"),
        "decay_days": Field(int, 60, check=_positive),
        "timeout_s": Field((int, float), 120, check=_positive, doc="one model call's limit"),
        "max_tokens_per_run": Field((int, type(None)), None),
    },
}

DEFAULT_TEXT = """\
# bead configuration. Every key is checked: a typo is an error, not a default.
# owner: {owner}            # written on every record; default is the login name

proxy:
  listen: 127.0.0.1:7077    # loopback only
  upstream: https://api.anthropic.com

dream:
  provider: ollama          # ollama | anthropic | openai
  model: null               # set a model to enable the nightly dream job
  # api_key_env: ANTHROPIC_API_KEY   # the NAME of a variable, never the key
  schedule: "7 3 * * *"
  decay_days: 60
"""


@dataclass
class Config:
    owner: str
    values: dict[str, Any] = field(default_factory=lambda: _defaults(SCHEMA))

    def get(self, dotted: str) -> Any:
        node: Any = self.values
        for part in dotted.split("."):
            node = node[part]
        return node


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in schema.items():
        out[name] = _defaults(spec) if isinstance(spec, dict) else spec.default
    return out


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "a whole number", bool: "true or false", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _validate(node: yaml.Node, schema: dict[str, Any], path: str, where: str) -> dict[str, Any]:
    out = _defaults(schema)
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return out
    if not isinstance(node, yaml.MappingNode):
        raise BeadError(
            f"{where} line {node.start_mark.line + 1}: {path or 'the file'} must be a mapping of keys to values",
            f"edit {where} so that it holds `key: value` lines",
        )
    seen = set()
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        key = key_node.value
        dotted = f"{path}.{key}" if path else key
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            fix = f"did you mean `{close[0]}`?" if close else f"known keys here: {', '.join(schema)}"
            raise BeadError(f"{where} line {line}: unknown key `{dotted}`", f"{fix} Fix or delete that line.")
        if key in seen:
            raise BeadError(f"{where} line {line}: `{dotted}` is set twice", "delete one of the two lines")
        seen.add(key)
        spec = schema[key]
        if isinstance(spec, dict):
            out[key] = _validate(value_node, spec, dotted, where)
            continue
        value = yaml.safe_load(yaml.serialize(value_node))
        kinds = spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)
        # YAML's `yes`/`true` are bools, and bool is an int in Python.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise BeadError(
                f"{where} line {line}: `{dotted}` must be {_type_name(spec.kind)}, not {value!r}",
                f"set `{dotted}` to {_type_name(spec.kind)} (default: {spec.default!r})",
            )
        if spec.choices and value is not None and value not in spec.choices:
            raise BeadError(
                f"{where} line {line}: `{dotted}` is {value!r}, which is not one of {', '.join(map(str, spec.choices))}",
                f"set `{dotted}` to one of: {', '.join(map(str, spec.choices))}",
            )
        if spec.check and value is not None and (problem := spec.check(value)):
            raise BeadError(f"{where} line {line}: `{dotted}` {problem}", f"change the value on line {line}")
        out[key] = value
    return out


def parse(text: str, where: str = "config.yaml") -> Config:
    """Parse and validate config text; raise BeadError naming the line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise BeadError(
            f"{where}{line} is not valid YAML: {getattr(exc, 'problem', exc)}",
            "fix the syntax on that line (indentation, a missing colon, an unclosed quote)",
        ) from None
    values = _defaults(SCHEMA) if node is None else _validate(node, SCHEMA, "", where)
    owner = values.get("owner") or getpass.getuser()
    values["owner"] = owner
    return Config(owner=owner, values=values)


def write_default(home: Home) -> bool:
    """Create config.yaml (0600) if it does not exist. Never rewrites one."""
    text = DEFAULT_TEXT.format(owner=getpass.getuser())
    try:
        fd = os.open(home.config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return True


def load(home: Home) -> Config:
    """Read the home's config.yaml, creating the default one first if missing."""
    write_default(home)
    try:
        text = home.config.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BeadError(f"{home.config} is not UTF-8 text", "save the file as UTF-8") from None
    return parse(text, where=str(home.config))
