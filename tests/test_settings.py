"""The typed settings of bead/config.py: the dataclasses are the schema, the loader walks them."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from bead import config
from bead.config import DEFAULT_TEXT, Config, parse
from bead.errors import BeadError

# The documented defaults (docs/configuration.md, generated from the schema; DEFAULT_TEXT).
DOCUMENTED = {
    "proxy.listen": "127.0.0.1:7077",
    "proxy.upstream": "https://api.anthropic.com",
    "proxy.openai_upstream": "https://api.openai.com",
    "proxy.project": None,
    "proxy.trace": None,
    "proxy.recall_deadline_ms": 500,
    "proxy.pinned_budget_tokens": 2000,
    "proxy.pinned_select": "opening",
    "proxy.cue_budget_tokens": 1500,
    "proxy.workers": None,
    "store.max_fact_bytes": 65536,
    "store.busy_timeout_ms": 30000,
    "recall.evidence_threshold": 1.2,
    "recall.max_facts": 2,
    "recall.max_excerpts": 2,
    "recall.pointers": 5,
    "recall.pointer_budget_tokens": 80,
    "recall.semantic": True,
    "rerank.provider": None,
    "rerank.model": None,
    "rerank.base_url": None,
    "rerank.api_key_env": None,
    "rerank.api_key_command": None,
    "rerank.enabled": False,
    "rerank.mode": "sync",
    "rerank.timeout_ms": 4000,
    "rerank.min_evidence": 0.5,
    "rerank.max_candidates": 5,
    "dream.provider": "ollama",
    "dream.model": None,
    "dream.base_url": None,
    "dream.api_key_env": None,
    "dream.api_key_command": None,
    "dream.schedule": "7 3 * * *",
    "dream.decay_days": 60,
    "dream.timeout_s": 120,
    "dream.max_tokens_per_run": None,
    "dream.max_run_minutes": 60,
    "dream.prices": None,
    "mcp.recall_budget_tokens": 2000,
    "mcp.context_budget_tokens": 3000,
    "mcp.confirm_ttl_s": 600,
    "mcp.max_concurrent": 32,
    "mcp.http_listen": "127.0.0.1:7078",
    "mcp.jwks_url": None,
    "mcp.issuer": None,
    "mcp.audience": None,
    "mcp.actor_claim": "email",
    "mcp.verified_claim": "email_verified",
    "mcp.jwks_timeout_s": 5,
    "mcp.projects": None,
    "import.max_line_bytes": 16 * 1024 * 1024,
}
# Settings whose check wants a shape (an address, a URL, a mapping): a valid value other than the default.
SHAPED = {
    "mcp.http_listen": "0.0.0.0:9000",
    "mcp.jwks_url": "https://id.example.com/jwks.json",
    "mcp.issuer": "https://id.example.com/",
    "mcp.projects": {"ana@example.com": ["shop", "billing"]},
    "dream.prices": {"claude-haiku-4-5": {"input": 1.0, "output": 5}},
    "proxy.listen": "127.0.0.1:7099",
    "proxy.upstream": "https://gateway.example.com/anthropic",
    "proxy.openai_upstream": "http://127.0.0.1:11434",
    "dream.api_key_env": "DREAM_KEY_VARIABLE",
    "rerank.api_key_env": "RERANK_KEY_VARIABLE",
}


def sections() -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(Config) if dataclasses.is_dataclass(typing.get_type_hints(Config)[f.name])]


def leaves() -> list[tuple[str, str, dataclasses.Field, typing.Any]]:
    """(section, name, field, annotation) of every setting inside a section, named as in config.yaml."""
    out = []
    for sec in sections():
        cls = typing.get_type_hints(Config)[sec.name]
        hints = typing.get_type_hints(cls)
        out += [(config.key_of(sec), f.name, f, hints[f.name]) for f in dataclasses.fields(cls)]
    return out


def get(cfg: Config, dotted: str):
    """A setting by its name in config.yaml (``import`` is the attribute ``import_``)."""
    value = cfg
    for part in dotted.split("."):
        attr = {config.key_of(f): f.name for f in dataclasses.fields(value)}[part]
        value = getattr(value, attr)
    return value


def test_documented_table_covers_every_setting():
    """Every setting of the schema has a documented default in this file's table, and no setting is missing."""
    assert {f"{s}.{n}" for s, n, _, _ in leaves()} == set(DOCUMENTED)


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "~\n"])
def test_empty_file_gives_every_documented_default(text):
    """An empty (or comment-only, or null) file gives every setting its documented default."""
    cfg = parse(text)
    got = {dotted: get(cfg, dotted) for dotted in DOCUMENTED}
    assert got == DOCUMENTED
    assert all(type(got[k]) is type(v) for k, v in DOCUMENTED.items() if v is not None and not isinstance(v, float))


def test_default_file_agrees_with_the_schema(monkeypatch):
    """The config.yaml bead writes the first time parses to exactly the schema's defaults."""
    monkeypatch.setenv("LOGNAME", "ana")
    assert parse(DEFAULT_TEXT.format(owner="ana")) == Config(owner="ana")


@pytest.mark.parametrize("section", ["proxy", "recall", "rerank", "dream"])
@pytest.mark.parametrize("null", ["null", "~", ""])
def test_null_section_gives_its_defaults(section, null):
    """A section set to null (or left empty) gives that section's defaults."""
    cfg = parse(f"{section}: {null}\n")
    defaults = Config(owner="x")
    assert getattr(cfg, section) == getattr(defaults, section)
    assert getattr(cfg, section) == type(getattr(defaults, section))()


def test_null_section_beside_a_set_one():
    """A null section does not disturb the settings of another section in the same file."""
    cfg = parse("proxy: null\nrecall:\n  max_facts: 4\n")
    assert cfg.recall.max_facts == 4 and cfg.proxy.listen == DOCUMENTED["proxy.listen"]


@pytest.mark.parametrize("dotted", [k for k, v in DOCUMENTED.items() if isinstance(v, float)] + ["dream.timeout_s"])
def test_float_setting_accepts_an_int(dotted):
    """A number setting (annotated float) takes a whole number, keeping its value."""
    section, name = dotted.split(".")
    assert get(parse(f"{section}:\n  {name}: 3\n"), dotted) == 3


def test_whole_number_setting_refuses_a_fraction():
    """A whole-number setting refuses 2.5 with an error naming the key and the expected type."""
    with pytest.raises(BeadError) as e:
        parse("recall:\n  max_facts: 2.5\n")
    assert "recall.max_facts" in e.value.message and "whole number" in e.value.message


def test_positive_check_refuses_zero():
    """A setting checked positive refuses 0, naming the key and the line."""
    with pytest.raises(BeadError) as e:
        parse("proxy:\n  listen: 127.0.0.1:1\n  recall_deadline_ms: 0\n")
    assert "line 3" in e.value.message and "proxy.recall_deadline_ms" in e.value.message
    assert "greater than 0" in e.value.message


def test_config_fills_owner_from_login_name(monkeypatch):
    """`Config()` without an owner takes the login name; an explicit owner is kept."""
    monkeypatch.setenv("LOGNAME", "ana-login")
    assert Config().owner == "ana-login"
    assert parse("recall:\n  max_facts: 1\n").owner == "ana-login"
    assert Config(owner="ben").owner == "ben"
    assert parse("owner: ben\n").owner == "ben"


@pytest.mark.parametrize(
    "text, bad, suggestion",
    [
        ("rerank:\n  timeout_msec: 10\n", "rerank.timeout_msec", "timeout_ms"),
        ("dream:\n  api_key_enf: KEY\n", "dream.api_key_enf", "api_key_env"),
        ("recall:\n  max_fact: 1\n", "recall.max_fact", "max_facts"),
        ("proxy:\n  cue_budget_token: 9\n", "proxy.cue_budget_token", "cue_budget_tokens"),
    ],
)
def test_unknown_nested_key_suggests_the_closest_name(text, bad, suggestion):
    """A misspelt key inside a section is an error naming it, whose hint suggests the closest real key."""
    with pytest.raises(BeadError) as e:
        parse(text)
    assert f"unknown key `{bad}`" in e.value.message and "line 2" in e.value.message
    assert f"did you mean `{suggestion}`?" in e.value.hint


def test_unknown_key_without_a_close_name_lists_the_known_ones():
    """A key like no real one gets the list of the section's keys."""
    with pytest.raises(BeadError) as e:
        parse("recall:\n  zzzzzz: 1\n")
    assert "known keys here: evidence_threshold, max_facts, max_excerpts" in e.value.hint


def _other_value(name: str, spec: dataclasses.Field, annotation, section: str = "") -> typing.Any:
    """A valid value for a setting that differs from its default."""
    if f"{section}.{name}" in SHAPED:
        return SHAPED[f"{section}.{name}"]
    kinds = config._kinds(annotation)
    choices = spec.metadata.get("choices")
    if choices:
        return next(c for c in choices if c != spec.default)
    if bool in kinds:
        return not spec.default
    if float in kinds:
        return 2.75
    if int in kinds:
        return (spec.default or 0) + 7
    return f"value-of-{name}"


def test_every_field_of_every_section_is_reachable_as_an_attribute():
    """Each setting of each section, set in the file to a non-default value, is read back as `config.section.name`."""
    wanted: dict[str, typing.Any] = {}
    lines = []
    for section, items in {k: [x for x in leaves() if x[0] == k] for k in map(config.key_of, sections())}.items():
        lines.append(f"{section}:")
        for _, name, spec, annotation in items:
            value = _other_value(name, spec, annotation, section)
            wanted[f"{section}.{name}"] = value
            text = repr(value) if isinstance(value, (str, dict)) else str(value).lower()
            lines.append(f"  {name}: {text}")
    cfg = parse("\n".join(lines) + "\n")
    assert len(wanted) == len(DOCUMENTED)
    for dotted, value in wanted.items():
        assert get(cfg, dotted) == value, dotted
        assert get(cfg, dotted) != DOCUMENTED[dotted], dotted


def test_settings_are_frozen():
    """Settings cannot be changed after loading: code reads them, never writes them."""
    cfg = parse("")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.recall.max_facts = 9  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.owner = "x"  # type: ignore[misc]


def test_the_import_section_is_import_in_the_file():
    """`import` is a Python keyword: the section is the attribute `import_`, and `import` in config.yaml."""
    cfg = parse("import:\n  max_line_bytes: 65536\n")
    assert cfg.import_.max_line_bytes == 65536 and parse("import: null\n").import_ == Config(owner="x").import_
    with pytest.raises(BeadError) as e:
        parse("import_:\n  max_line_bytes: 1\n")
    assert "unknown key `import_`" in e.value.message and "did you mean `import`?" in e.value.hint
    with pytest.raises(BeadError) as e:
        parse("import:\n  max_line_bytes: 0\n")
    assert "`import.max_line_bytes` must be greater than 0" in e.value.message
    with pytest.raises(BeadError) as e:
        parse("import:\n  max_line_bytes: 1\nimport:\n  max_line_bytes: 2\n")
    assert "`import` is set twice" in e.value.message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("dream:\n  timeout_s: .inf\n", "`dream.timeout_s` must be a finite number"),
        ("dream:\n  timeout_s: 1.0e+300\n", "`dream.timeout_s` must be at most 86,400 (a day)"),
        ("dream:\n  decay_days: 1000000\n", "`dream.decay_days` must be at most 36,500 (100 years)"),
        ("recall:\n  evidence_threshold: .nan\n", "`recall.evidence_threshold` must be a finite number"),
        ("dream:\n  prices:\n    m: {input: .inf, output: 1}\n", "`dream.prices` must map each model"),
        ("proxy:\n  recall_deadline_ms: 99999999999999999999\n", "`proxy.recall_deadline_ms` must be at most 60,000"),
    ],
)
def test_a_number_that_would_overflow_where_it_is_used_is_refused_on_its_line(text, said):
    """`.inf` or 1e300 seconds passed the check and crashed every model call of a dream run; a million days of decay
    crashed each run after its model calls, so every run spent tokens again (an outside attack). Such a number is an
    error naming the key, as 0 is."""
    with pytest.raises(BeadError) as e:
        parse(text)
    assert said in e.value.message and "line" in e.value.message


@pytest.mark.parametrize(("key", "line"), [("? [proxy]\n: 1\n", 3), ("? {a: 1}\n: 1\n", 3), ("proxy:\n  ? [listen]\n  : 1\n", 4)])
def test_a_list_or_a_mapping_as_a_key_is_an_error_naming_its_line(key, line):
    """A key YAML reads as a list or a mapping crashed every command in a traceback (an outside attack)."""
    with pytest.raises(BeadError) as e:
        parse("recall:\n  max_facts: 1\n" + key)
    assert "must be a plain name" in e.value.message and f"line {line}" in e.value.message
