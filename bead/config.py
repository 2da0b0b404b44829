"""config.yaml: typed settings, read strictly, written once.

The settings classes below are the schema: each field's annotation is its
type, its default is the default, and its metadata holds the allowed values,
a check and a line of documentation. The loader walks them, so a key exists
in exactly one place and code reads settings as attributes
(``config.proxy.recall_deadline_ms``).

A typo or a bad value is an error that names the line and the fix; bead
never falls back to a default silently. The file is created with mode 0600
when missing and never rewritten once it exists.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import getpass
import ipaddress
import math
import os
import re
import reprlib
import types
import typing
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from . import yamlsafe
from .errors import BeadError
from .paths import Home

if TYPE_CHECKING:
    from datetime import datetime

Check = Callable[[Any], "str | None"]  # returns an error text


def setting(default: Any, doc: str = "", choices: tuple[Any, ...] | None = None, check: Check | None = None) -> Any:
    """A leaf of the schema: its default, documentation, allowed values and check."""
    return field(default=default, metadata={"doc": doc, "choices": choices, "check": check})


def section(cls: type, key: str | None = None) -> Any:
    """A section of the schema; ``key`` is its name in the file when that is a Python keyword (``import``)."""
    return field(default_factory=cls, metadata={"key": key} if key else {})


def key_of(f: dataclasses.Field[Any]) -> str:
    """A field's key in config.yaml (its name, unless the field says otherwise)."""
    return str(f.metadata.get("key") or f.name)


def _positive(v: Any) -> str | None:
    if not math.isfinite(v):  # `.inf`, `.nan`
        return "must be a finite number"
    return None if v > 0 else "must be greater than 0"


def _up_to(limit: int, unit: str) -> Callable[[Any], str | None]:
    """A duration: greater than 0 and at most ``limit`` (``.inf`` or 1e300 seconds passed the check, then crashed every
    model call of a dream run, and a million days of decay each run after its model calls: an outside attack)."""

    def check(v: Any) -> str | None:
        return _positive(v) or (None if v <= limit else f"must be at most {limit:,} ({unit})")

    return check


def _env_name(v: Any) -> str | None:
    """A variable's name, never the key itself (which the dream's report and `bead status` would then show)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", v):
        return "must be the NAME of an environment variable (letters, digits and _), not the key: put the key in that variable"
    if len(v) >= 20 and any(c.islower() for c in v) and any(c.isupper() for c in v) and any(c.isdigit() for c in v):
        return "looks like a key, not the NAME of a variable: put the key in a variable and name that variable here"
    return None


def _proxy_listen(v: Any) -> str | None:
    """The proxy's address as `bead proxy` will take it (bead.ports.parse_listen): a loopback host:port."""
    from .errors import BeadError
    from .ports import parse_listen

    try:
        parse_listen(v)
    except BeadError as exc:
        return f"is not an address the proxy can listen on: {exc.message} ({(exc.hint or '').replace('--listen ', '')})"
    return None


def upstream_problem(v: Any) -> str | None:
    """What is wrong with an upstream base URL (``proxy.upstream``, ``--upstream``), or None: an http(s) URL with a
    host and nothing a terminal or a request line acts on (one holding an escape went through, and the proxy's
    first request ended in httpx's InvalidURL and a traceback: an outside review)."""
    from urllib.parse import urlsplit

    text = str(v)
    if any(not c.isprintable() or c.isspace() for c in text):
        return "holds a blank or a control character: give the base URL alone (https://host[:port][/path])"
    try:
        url = urlsplit(text)
        url.port  # noqa: B018 - a port out of range or not a number raises here
    except ValueError as exc:
        return f"is not a URL ({exc})"
    if url.port == 0:
        return "names port 0: give the port the API listens on"
    if url.scheme not in ("http", "https") or not url.hostname:
        return "must be an http:// or https:// URL with a host (https://api.anthropic.com)"
    return None


def _owner(v: Any) -> str | None:
    """A name on every record: one line, short (a megabyte of it made every fact larger than bead reads)."""
    if len(v) > 200 or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" for c in v):
        return "must be a name of at most 200 characters on one line"
    return None


def login_name() -> str:
    """The login name as the default owner, when it is one a record can carry (LOGNAME is anyone's text: one of
    a line break would have written settings into config.yaml); else "owner"."""
    name = getpass.getuser()
    return name if _owner(name) is None and name.strip() and name.isprintable() else "owner"


def _workers(v: Any) -> str | None:
    return None if v is None or 1 <= v <= 16 else "must be from 1 to 16 (or none: the number of cores, at most 4)"


PROVIDERS = ("ollama", "anthropic", "openai")


@dataclass(frozen=True)
class ProxySettings:
    listen: str = setting("127.0.0.1:7077", "loopback address of the proxy", check=_proxy_listen)
    upstream: str = setting("https://api.anthropic.com", "the real API", check=upstream_problem)
    openai_upstream: str = setting(
        "https://api.openai.com",
        "where requests under /openai go (any OpenAI-compatible server: the part of its base URL before /v1)",
        check=upstream_problem,
    )
    project: str | None = setting(None, "project when the harness reports none")
    trace: str | None = setting(None, "append one JSON line per request to this file")
    recall_deadline_ms: int = setting(500, "past it, the request goes out without new memory", check=_up_to(60_000, "a minute"))
    pinned_budget_tokens: int = setting(
        2000, "the most the pinned block (the first request's system prompt) holds", check=_positive
    )
    pinned_select: str = setting(
        "opening",
        "how the pinned block chooses: opening (what the conversation opens "
        "with, then the person's word, type, recent use, recency) or "
        "recency (pinned, the person's word, newest)",
        choices=("opening", "recency"),
    )
    cue_budget_tokens: int = setting(1500, "the most one turn's cue block holds", check=_positive)
    workers: int | None = setting(
        None,
        "proxy processes on the one port, each on a core of its own (none: the number of cores, at most 4)",
        check=_workers,
    )


@dataclass(frozen=True)
class StoreSettings:
    max_fact_bytes: int = setting(65536, "the largest value one fact may hold (UTF-8 bytes)", check=_positive)
    busy_timeout_ms: int = setting(
        30000,
        "how long a command waits for the index; a fact write past it still "
        "succeeds and leaves the index to `bead indexer` or `bead reindex`",
        check=_up_to(600_000, "ten minutes"),
    )


@dataclass(frozen=True)
class RecallSettings:
    evidence_threshold: float = setting(1.2, "the default gate's strong-match bar", check=_positive)
    max_facts: int = setting(2, "fact bodies one cue block holds at most", check=_positive)
    max_excerpts: int = setting(2, "raw-turn excerpts one cue block holds at most")
    pointers: int = setting(
        5,
        "keys of facts not shown that the cue block may point to per turn (key, title, trust "
        "mark; the agent opens one with get_memory or `bead show`); 0 turns pointers off",
        check=lambda v: None if v >= 0 else "must be 0 or more",
    )
    pointer_budget_tokens: int = setting(80, "the most the pointers of one turn may add to the prompt", check=_positive)
    semantic: bool = setting(
        True,
        "with bead[semantic] installed, the raw search weighs meaning as well as words (vectors the indexer "
        "computes in the background); false: words (BM25) alone. Without the extra it does nothing",
    )


@dataclass(frozen=True)
class ModelSettings:
    """Which chat model to call; the key comes from a variable or a command, never the file."""

    provider: str | None = setting(None, "who serves the model", choices=PROVIDERS)
    model: str | None = setting(
        None,
        "the model's name at that provider",
        check=lambda v: None if v is None or v.strip() else "is blank: give the model's name, or null for none",
    )
    base_url: str | None = setting(None, "the provider's API base URL (default: the provider's own)")
    api_key_env: str | None = setting(None, "the NAME of a variable holding the key", check=_env_name)
    api_key_command: str | None = setting(None, "a command that prints the key")


@dataclass(frozen=True)
class RerankSettings(ModelSettings):
    # The dream model is used for whatever of provider/model/... is left unset.
    enabled: bool = setting(False, "ask a chat model which candidates help (adds its latency)")
    mode: str = setting(
        "sync",
        "sync: the model judges before the request goes out (adds its latency); async: it "
        "judges after forwarding and its picks join the conversation's next request",
        choices=("sync", "async"),
    )
    timeout_ms: int = setting(
        4000, "the rerank call's limit; past it the default gate's choice stands", check=_up_to(600_000, "ten minutes")
    )
    min_evidence: float = setting(0.5, "a candidate's evidence below this is not shown to the model")
    max_candidates: int = setting(5, "candidates shown to the model at most", check=_positive)


def _prices(v: Any) -> str | None:
    for model, price in v.items():
        if set(price) != {"input", "output"} or any(not (p >= 0 and math.isfinite(p)) for p in price.values()):
            return (
                f"must map each model to its input and output price in USD per million tokens, e.g. "
                f"`{model}: {{input: 1.0, output: 5.0}}`"
            )
    return None


@dataclass(frozen=True)
class DreamSettings(ModelSettings):
    provider: str | None = setting("ollama", "who serves the dream's model", choices=PROVIDERS)
    schedule: str = setting("7 3 * * *", "cron line, local time")
    decay_days: int = setting(
        60, "a fact nothing wrote, injected or reinforced this long becomes dormant", check=_up_to(36_500, "100 years")
    )
    timeout_s: float = setting(120, "one model call's limit, the whole answer read", check=_up_to(86_400, "a day"))
    max_tokens_per_run: int | None = setting(
        None,
        "a run stops once its calls used this many tokens (above 0; null: no limit; a call whose server reports none counts "
        "a token per 4 characters); the rest waits for the next run",
        check=_positive,
    )
    max_run_minutes: float = setting(
        60,
        "a run starts no model call past this long (a slow server's calls each within timeout_s); the rest waits "
        "for the next run, and a second opinion not asked queues its proposal for the person",
        check=_up_to(10_080, "a week"),
    )
    prices: dict[str, dict[str, float | int]] | None = setting(
        None, "model -> {input, output}: USD per million tokens, for the cost `bead dream run --dry-run` estimates", check=_prices
    )


def _listen(v: Any) -> str | None:
    host, sep, port = v.rpartition(":")
    return None if sep and host and port.isdigit() else "must be host:port, e.g. 127.0.0.1:7078"


def _this_machine(url: str) -> bool:
    """Whether an http URL's host is this machine's loopback (a name, or an address in 127.0.0.0/8 or ::1)."""
    host = (urllib.parse.urlsplit(url).hostname or "").rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _key_set_url(v: Any) -> str | None:
    """The provider's key set: https, or http to this machine only (a local gateway, a test's provider). Over plain
    http anyone on the path (or who answers the name) serves their own keys and signs a token for any member."""
    if v.startswith("https://") or (v.startswith("http://") and _this_machine(v)):
        return None
    return "must be an https URL (http only to this machine: over the network anyone on the path could serve their own keys)"


def _issuer_url(v: Any) -> str | None:
    """An issuer with a scheme (https://id.example/): a token whose email is not verified names its member
    `<sub>@<issuer>`, which must never read as a member's address (`ana@example.com` from issuer `example.com`)."""
    return None if "://" in v else "must be the provider's URL (https://...), as its tokens' `iss` says it"


@dataclass(frozen=True)
class McpSettings:
    """The MCP servers (`bead mcp`): budgets, and the team host's HTTP listener and JWT checks."""

    recall_budget_tokens: int = setting(2000, "the most one recall answer holds", check=_positive)
    context_budget_tokens: int = setting(3000, "the most get_memory_context holds (pinned block + matches)", check=_positive)
    confirm_ttl_s: int = setting(600, "how long a confirm token of forget/seal works", check=_up_to(86_400, "a day"))
    max_concurrent: int = setting(32, "tool calls in flight at once; more are refused as overloaded (retryable)", check=_positive)
    http_listen: str = setting(
        "127.0.0.1:7078", "where `bead mcp --http` listens; a non-loopback address needs the JWT settings below", check=_listen
    )
    jwks_url: str | None = setting(None, "the identity provider's JWKS URL (signing keys; https)", check=_key_set_url)
    issuer: str | None = setting(None, "the `iss` every token must carry (a URL)", check=_issuer_url)
    audience: str | None = setting(None, "the `aud` every token must carry")
    actor_claim: str = setting(
        "email",
        "the claim that names the member, trusted only when verified_claim is true; otherwise the member is `<sub>@<issuer>`",
    )
    verified_claim: str | None = setting(
        "email_verified",
        "the claim that must be true for actor_claim to be "
        "trusted; null trusts actor_claim as the provider signs "
        "it (a claim only the provider sets)",
    )
    jwks_timeout_s: float = setting(5, "one fetch of the key set", check=_up_to(300, "five minutes"))
    projects: dict[str, list[str]] | None = setting(
        None, "member -> projects whose facts they share (`*`: every project); a member not listed has none"
    )


@dataclass(frozen=True)
class ImportSettings:
    """`bead import`: reading a harness's saved conversations."""

    max_line_bytes: int = setting(
        16 * 1024 * 1024,
        "a transcript line longer than this (bytes) is skipped and "
        "counted, never read whole; raise it to import such a line "
        "(peak memory grows with it, up to about 8 times it)",
        check=_positive,
    )


@dataclass(frozen=True)
class Config:
    owner: str = setting("", "owner written on every record (default: login name)", check=_owner)
    proxy: ProxySettings = section(ProxySettings)
    store: StoreSettings = section(StoreSettings)
    recall: RecallSettings = section(RecallSettings)
    rerank: RerankSettings = section(RerankSettings)
    dream: DreamSettings = section(DreamSettings)
    mcp: McpSettings = section(McpSettings)
    import_: ImportSettings = section(ImportSettings, key="import")  # `import` in the file

    def __post_init__(self) -> None:
        if not self.owner:
            object.__setattr__(self, "owner", login_name())


DEFAULT_TEXT = """\
# bead configuration. Every key is checked: a typo is an error, not a default.
# owner: {owner}            # written on every record; default is the login name

proxy:
  listen: 127.0.0.1:7077    # loopback only
  upstream: https://api.anthropic.com
  openai_upstream: https://api.openai.com   # for harnesses with the base URL .../openai/v1

dream:
  provider: ollama          # ollama | anthropic | openai
  model: null               # set a model to enable the nightly dream job
  # api_key_env: ANTHROPIC_API_KEY   # the NAME of a variable, never the key
  schedule: "7 3 * * *"
  decay_days: 60
"""


def _kinds(annotation: Any) -> tuple[Any, ...]:
    """The types a YAML value may have for a field annotation (``list[str]``, ``dict[str, X]`` as given)."""
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    out: list[Any] = []
    for a in args:
        out.extend((int, float) if a is float else (a,))
    return tuple(out)


def _conforms(value: Any, kind: Any) -> bool:
    """Whether a YAML value is of one type (a bool is never a number; containers are checked item by item)."""
    origin = typing.get_origin(kind)
    if origin is dict:
        k, v = typing.get_args(kind)
        return isinstance(value, dict) and all(_conforms(a, k) and _conforms(b, v) for a, b in value.items())
    if origin is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(_conforms(x, item) for x in value)
    if isinstance(value, bool) and kind is not bool:
        return False
    return isinstance(value, kind)


def _type_name(kinds: tuple[Any, ...]) -> str:
    names = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", type(None): "null"}

    plural = {str: "strings", int: "whole numbers", float: "numbers", bool: "true or false values"}

    def name(k: Any, many: bool = False) -> str:
        if isinstance(k, types.UnionType):
            return " or ".join(name(a, many) for a in typing.get_args(k))
        origin = typing.get_origin(k)
        if origin is dict:
            a, b = typing.get_args(k)
            return f"{'mappings' if many else 'a mapping'} of {name(a, True)} to {name(b, True)}"
        if origin is list:
            return f"{'lists' if many else 'a list'} of {name(typing.get_args(k)[0], True)}"
        return plural.get(k, str(k)) if many else names.get(k, getattr(k, "__name__", str(k)))

    return " or ".join(dict.fromkeys(name(k) for k in kinds))


# A value shown in an error stays short whatever the file holds (aliases can nest a few bytes of YAML
# into millions of items).
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict = 2, 80, 80, 6, 6


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, worked out once per section: it evaluates every annotation's text again
    on each call (half of reading a config file's CPU, and the tests and a few commands read one often)."""
    return typing.get_type_hints(cls)


def _validate(node: yaml.Node, cls: type, path: str, where: str) -> Any:
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return cls()
    if not isinstance(node, yaml.MappingNode):
        raise BeadError(
            f"{where} line {node.start_mark.line + 1}: {path or 'the file'} must be a mapping of keys to values",
            f"edit {where} so that it holds `key: value` lines",
        )
    fields = {key_of(f): f for f in dataclasses.fields(cls)}
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):  # `? [proxy]`: a list or a mapping as a key
            raise BeadError(
                f"{where} line {line}: a key in {path or 'the file'} must be a plain name, not a list or a mapping",
                f"write `name: value` on line {line}",
            )
        key = key_node.value
        dotted = f"{path}.{key}" if path else key
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1)
            fix = f"did you mean `{close[0]}`?" if close else f"known keys here: {', '.join(fields)}"
            raise BeadError(f"{where} line {line}: unknown key `{dotted}`", f"{fix} Fix or delete that line.")
        if fields[key].name in values:
            raise BeadError(f"{where} line {line}: `{dotted}` is set twice", "delete one of the two lines")
        spec = fields[key]
        hint = hints[spec.name]
        if dataclasses.is_dataclass(hint):
            values[spec.name] = _validate(value_node, typing.cast(type, hint), dotted, where)
            continue
        try:
            value = yamlsafe.Constructor().construct_document(value_node)
        except (yaml.YAMLError, ValueError, KeyError, TypeError) as exc:  # `!foo x`, `!!int abc`, `!!bool maybe`
            raise BeadError(
                f"{where} line {line}: `{dotted}` has a value YAML cannot build: "
                f"{getattr(exc, 'problem', None) or exc.__class__.__name__}",
                f"write a plain value on line {line} (default: {spec.default!r})",
            ) from None
        kinds = _kinds(hint)
        # YAML's `yes`/`true` are bools, and bool is an int in Python.
        if not any(_conforms(value, k) for k in kinds):
            raise BeadError(
                f"{where} line {line}: `{dotted}` must be {_type_name(kinds)}, not {_SHOWN.repr(value)}",
                f"set `{dotted}` to {_type_name(kinds)} (default: {spec.default!r})",
            )
        choices = spec.metadata.get("choices")
        if choices and value is not None and value not in choices:
            raise BeadError(
                f"{where} line {line}: `{dotted}` is {_SHOWN.repr(value)}, which is not one of {', '.join(map(str, choices))}",
                f"set `{dotted}` to one of: {', '.join(map(str, choices))}",
            )
        check = spec.metadata.get("check")
        if check and value is not None and (problem := check(value)):
            raise BeadError(f"{where} line {line}: `{dotted}` {problem}", f"change the value on line {line}")
        values[spec.name] = value
    return cls(**values)


@functools.lru_cache(maxsize=4)
def _compose(text: str) -> Any:
    """The YAML node tree of ``text``. PyYAML's own parser, not libyaml's: it reads what bead always accepted
    (`{a:[b]}`, tabs are errors) and its messages say which character is wrong. It costs about 2 ms for the
    default file, paid once per text: a process that opens its home again (each test, the dashboard's requests)
    validates the same tree into a new Config; the tree itself is only read."""
    return yaml.compose(text, Loader=yamlsafe.PyLoader)


def parse(text: str, where: str = "config.yaml") -> Config:
    """Parse and validate config text; raise BeadError naming the line."""
    try:
        node = _compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise BeadError(
            f"{where}{line} is not valid YAML: {getattr(exc, 'problem', exc)}",
            "fix the syntax on that line (indentation, a missing colon, an unclosed quote)",
        ) from None
    except RecursionError:
        raise _too_deep(where) from None
    if node is None:
        return Config()
    try:
        return typing.cast(Config, _validate(node, Config, "", where))
    except RecursionError:
        raise _too_deep(where) from None


def _too_deep(where: str) -> BeadError:
    """Lists or mappings nested hundreds deep (a kilobyte of brackets): PyYAML's parser recurses, and every command
    ended in a traceback of thousands of lines."""
    return BeadError(
        f"{where} nests lists or mappings too deep to read (hundreds of levels)",
        "bead's settings are at most three levels deep: remove the nested brackets (docs/configuration.md)",
    )


def write_default(home: Home) -> bool:
    """Create config.yaml (0600) if it does not exist, whole or not at all (a full disk left an empty one for good:
    an outside attack): written to a temp file, then linked to its name, which never replaces one. Never rewrites
    one."""
    from .files import temp_name, write_all

    if home.config.exists() or home.config.is_symlink():
        return False
    text = DEFAULT_TEXT.format(owner=login_name()).encode("utf-8")
    tmp = home.config.with_name(temp_name(home.config.name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        try:
            write_all(fd, text)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, home.config, follow_symlinks=False)
        except FileExistsError:
            return False
        return True
    finally:
        tmp.unlink(missing_ok=True)


def load(home: Home) -> Config:
    """Read the home's config.yaml, creating the default one first if missing."""
    from .files import read_text

    home.refuse_foreign()  # a folder of other files gets no config.yaml (commands that load before Home.ensure)
    write_default(home)
    try:
        text = read_text(home.config, root=home.root)
    except UnicodeDecodeError:
        raise BeadError(f"{home.config} is not UTF-8 text", "save the file as UTF-8") from None
    return parse(text, where=str(home.config))


# ----- the configuration reference (docs/configuration.md is generated from the schema) ------------------

REFERENCE_START = "<!-- generated by bead.config.reference(): do not edit by hand -->"
REFERENCE_END = "<!-- end of the generated reference -->"


def _yaml_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("\n...").strip()
    return str(value)


def reference() -> str:
    """Every setting of the schema as Markdown: one table per section (key, type, default, what it does)."""

    def rows(cls: type) -> list[str]:
        out = ["| key | type | default | what it does |", "|---|---|---|---|"]
        for f in dataclasses.fields(cls):
            if "doc" not in f.metadata:
                continue
            hints = typing.get_type_hints(cls)
            doc = str(f.metadata.get("doc") or "")
            choices = f.metadata.get("choices")
            if choices:
                doc += ("; " if doc else "") + "one of " + ", ".join(f"`{c}`" for c in choices)
            kind = _type_name(typing.get_args(hints[f.name]) if isinstance(hints[f.name], types.UnionType) else (hints[f.name],))
            default = "the login name" if f.name == "owner" else f"`{_yaml_value(f.default)}`"
            out.append(f"| `{key_of(f)}` | {kind} | {default} | {doc.replace('|', '&#124;')} |")
        return out

    lines = [REFERENCE_START, "", "## Top level", "", *rows(Config)]
    for f in dataclasses.fields(Config):
        if "doc" in f.metadata:
            continue
        cls = typing.get_type_hints(Config)[f.name]
        lines += ["", f"## `{key_of(f)}`", ""]
        if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
            lines += [" ".join(cls.__doc__.split()), ""]
        lines += rows(cls)
    return "\n".join([*lines, "", REFERENCE_END]) + "\n"


def schedule_problem(schedule: str, now: datetime) -> str | None:
    """Why ``schedule`` (``dream.schedule``) can never run a pass: not a cron line, or one with no time to come
    (the 31st of February); None when it will."""
    from apscheduler.triggers.cron import CronTrigger

    try:
        trigger = CronTrigger.from_crontab(schedule, timezone=now.astimezone().tzinfo)
    except ValueError as exc:
        return f"dream.schedule {schedule!r} is not a cron line ({exc})"
    if trigger.get_next_fire_time(None, now.astimezone()) is None:
        return f"dream.schedule {schedule!r} names no time that comes"
    return None


SCHEDULE_FIX = "set dream.schedule in config.yaml to five fields, minute hour day month weekday (the default: '7 3 * * *')"
