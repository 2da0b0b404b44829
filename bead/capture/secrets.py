"""The secret scan: credentials become ``[REDACTED:<rule>]`` before any write."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import re2
import yaml

# Every pattern runs on text an attacker may have written (a pasted README,
# a tool's output), so every one runs on RE2: time linear in the text, never
# the backtracking blow-up of Python's `re` on a crafted input.
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 64 << 20

# Values that look like assignments of a secret but name one instead.
_PLACEHOLDER = re2.compile(
    r"(?i)^(?:x{4,}|\*{3,}|<[^>]*>|\$\{?[A-Z_][A-Z0-9_]*\}?|changeme|redacted.*|example.*|your[_\-].*|dummy.*"
    r"|placeholder.*|null|none|true|false)$", _OPTIONS
)


def compile_linear(pattern: str) -> Any:
    """A pattern compiled for RE2 (linear time); an error names the pattern."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise ValueError(f"pattern {pattern[:60]!r} is not valid RE2 syntax: {exc}") from None


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: Any   # a compiled RE2 pattern
    group: int = 0
    entropy: float = 0.0
    min_len: int = 0
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    rule: str
    start: int
    end: int


def shannon(value: str) -> float:
    if not value:
        return 0.0
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


@lru_cache(maxsize=1)
def rules() -> tuple[Rule, ...]:
    data = yaml.safe_load(resources.files("bead.capture").joinpath("rules.yaml").read_text(encoding="utf-8"))
    return tuple(
        Rule(id=r["id"], pattern=compile_linear(r["pattern"]), group=r.get("group", 0),
             entropy=r.get("entropy", 0.0), min_len=r.get("min_len", 0),
             keywords=tuple(k.lower() for k in r["keywords"]))
        for r in data["rules"]
    )


def scan(text: str) -> list[Finding]:
    """Non-overlapping findings, earliest first (earlier rules win a tie)."""
    found: list[Finding] = []
    # gitleaks' prefilter: a rule's regex runs only when one of its keywords
    # occurs. Substring tests (fast search) beat one big alternation here.
    lower = text.lower()
    for rule in rules():
        if not any(k in lower for k in rule.keywords):
            continue
        for m in rule.pattern.finditer(text):
            value = m.group(rule.group)
            if value is None:
                continue
            if rule.min_len and len(value) < rule.min_len:
                continue
            if rule.entropy and (shannon(value) < rule.entropy or _PLACEHOLDER.match(value)):
                continue
            found.append(Finding(rule.id, m.start(rule.group), m.end(rule.group)))
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    out: list[Finding] = []
    for f in found:
        if out and f.start < out[-1].end:
            continue
        out.append(f)
    return out


def redact(text: str) -> tuple[str, list[str]]:
    """(text with every finding replaced, rule ids found)."""
    findings = scan(text)
    if not findings:
        return text, []
    parts, last = [], 0
    for f in findings:
        parts.append(text[last:f.start])
        parts.append(f"[REDACTED:{f.rule}]")
        last = f.end
    parts.append(text[last:])
    return "".join(parts), [f.rule for f in findings]
