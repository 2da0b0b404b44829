"""Loading suites strictly: an unknown key is an error, never ignored."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import statistics
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .. import yamlsafe
from ..core.memory import Memory
from ..core.seal import write_fact
from ..errors import BeadError
from ..index import semantic
from ..store.facts import WriteResult

FORMAT_HINT = "fix or delete that key; the suite format is in docs/evals.md, with examples in the repository's evals/"
MISSING_HINT = (
    "put `kind:` (supersession, injection, raw-recall or poisoning) and `name:` at the top; "
    "the suite format is in docs/evals.md, with examples in the repository's evals/"
)

# Allowed keys per place in a suite; `None` marks a mapping whose keys are
# free (the Messages API's own fields inside `messages`).
SHAPES: dict[str, dict[str, set[str] | None]] = {
    "supersession": {
        "": {"kind", "name", "scenarios"},
        "scenarios[]": {"name", "scope", "writes", "queries"},
        "scenarios[].writes[]": {"key", "type", "body", "trust", "sensitivity", "pinned"},
        "scenarios[].queries[]": {"query", "expect", "stale"},
    },
    "injection": {
        "": {"kind", "name", "project", "cwd", "facts", "turns"},
        "facts[]": {"key", "type", "body", "trust", "sensitivity", "pinned"},
        "turns[]": {"id", "split", "messages", "needs"},
        # inside messages the Messages API's own fields are free
        "turns[].messages[]": None,
    },
    "poisoning": {
        "": {"kind", "name", "proposals"},
        "proposals[]": {"id", "key", "type", "value", "label", "category", "split", "said", "message"},
        # a message's content is the Messages API's own: free
        "proposals[].message": None,
        "proposals[].message[]": None,
    },
    "raw-recall": {
        "": {"kind", "name", "sessions", "queries"},
        "sessions[]": {"id", "started", "turns"},
        "sessions[].turns[]": {"ref", "role", "text"},
        "queries[]": {"id", "query", "evidence", "stale", "category"},
    },
}


def _check(node: Any, shape: dict[str, set[str] | None], where: str, pattern: str, file: str) -> None:
    if isinstance(node, dict):
        allowed = shape.get(pattern)
        if allowed is not None:
            for k in node:
                if k not in allowed:
                    raise BeadError(f"{file}: unknown key `{k}` at {where or 'the top level'}", FORMAT_HINT)
        if allowed is None and pattern in shape:
            return  # a free-form mapping (Messages API content)
        for k, v in node.items():
            _check(v, shape, f"{where}.{k}" if where else k, f"{pattern}.{k}" if pattern else k, file)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _check(v, shape, f"{where}[{i}]", f"{pattern}[]", file)


def load(path: str | Path) -> dict:
    path = Path(path)
    try:
        # No anchors or aliases (no suite uses them): 1.4 KB of nested aliases expanded to a tree that took minutes
        # to check, and one that refers to itself ended in a RecursionError.
        data = yamlsafe.load_plain(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BeadError(f"no suite at {path}", "give the path of a suite YAML file") from None
    except yamlsafe.Error as exc:
        raise BeadError(f"{path} is not valid YAML: {exc}", "fix the YAML syntax (a suite uses no anchor or alias)") from None
    if not isinstance(data, dict) or "kind" not in data or "name" not in data:
        raise BeadError(f"{path}: a suite needs `kind` and `name` at the top level", MISSING_HINT)
    kind = data["kind"]
    if kind not in SHAPES:
        raise BeadError(f"{path}: kind {kind!r} is not supported", f"use one of: {', '.join(SHAPES)}")
    _check(data, SHAPES[kind], "", "", str(path))
    return data


# The modules whose constants a candidate setting may change: the ranking's. A grid file is data a person may copy
# from anywhere; a constant of another module (a path's, a command's) could make an eval touch what it must not.
TUNABLE_MODULES = ("bead.recall.", "bead.index.")


@dataclass(frozen=True)
class Setting:
    """One candidate setting of a tuning run (bead.evals.cv): a config.yaml text and module constants that
    are not configuration (``{"bead.recall.standing.OPENING_WEIGHT": 4.0}``), applied while it runs."""

    name: str = "default"
    config: str = ""
    constants: tuple[tuple[str, Any], ...] = ()

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        """The constants set while the block runs, and what the index's readers derived from the facts under
        other constants dropped on the way in and out (the pinned block's scored candidates)."""
        import importlib
        import sys

        from ..index import db

        before = []
        try:
            for dotted, value in self.constants:
                module_name, _, attr = dotted.rpartition(".")
                if not module_name.startswith(TUNABLE_MODULES) or not attr.isupper():
                    raise BeadError(
                        f"setting {self.name}: {dotted} is not a constant bead has",
                        "name a module-level constant of bead.recall or bead.index, e.g. bead.recall.standing.OPENING_WEIGHT",
                    )
                module = sys.modules.get(module_name) or importlib.import_module(module_name)
                if not hasattr(module, attr):
                    raise BeadError(
                        f"setting {self.name}: {dotted} is not a constant bead has",
                        "name a module-level constant, e.g. bead.recall.standing.OPENING_WEIGHT",
                    )
                before.append((module, attr, getattr(module, attr)))
                setattr(module, attr, value)
            db.forget_derived()
            yield
        finally:
            for module, attr, value in reversed(before):
                setattr(module, attr, value)
            db.forget_derived()


EVAL_START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


# The recall step's deadline in an eval. The proxy's (proxy.recall_deadline_ms, 500 ms) would let a busy machine
# change the figures: a search cut at its deadline fails open and the turn counts as getting nothing. The proxy's
# fail-open is tested on its own (tests/test_engine.py, tests/test_proxy_behaviour.py); an eval's latencies are
# measured either way.
RECALL_DEADLINE_S = 60.0


class TickingClock:
    """A clock that moves one second forward at every reading, from a fixed start.

    Every write of a suite then has its own time, strictly after the one
    before it (facts written within one real second no longer tie on
    ``valid_from``), and a suite gives the same figures on every run.
    """

    def __init__(self, start: datetime = EVAL_START, step: timedelta = timedelta(seconds=1)):
        self._next = start
        self._step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            now, self._next = self._next, self._next + self._step
        return now


@contextlib.contextmanager
def temp_memory(clock: Callable[[], datetime] | None = None) -> Iterator[Memory]:
    """A fresh bead home that is deleted afterwards; never the user's store.

    Its clock ticks (``TickingClock``) unless ``clock`` is given: evals are deterministic.
    """
    from ..config import Config
    from ..paths import Home

    root = Path(tempfile.mkdtemp(prefix="bead-eval-"))
    mem = Memory(Home(root / "home").ensure(), Config(owner="eval"), clock or TickingClock())
    try:
        yield mem
    finally:
        mem.close()
        shutil.rmtree(root, ignore_errors=True)


def write(mem: Memory, f: dict[str, Any]) -> WriteResult:
    """One fact of a suite (its ``facts[]`` or a scenario's ``writes[]``), written as `bead write` writes it."""
    return write_fact(
        mem,
        f["key"],
        f["body"],
        f["type"],
        trust=f.get("trust", "user_stated"),
        sensitivity=f.get("sensitivity", "private"),
        pinned=f.get("pinned"),
    )


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


# Turn vectors by text, for the process's life: a grid builds each conversation's index once per candidate.
_VECTORS: dict[bytes, Any] = {}


class _Remembered:
    """The embedding model, remembering each text's vector (the same turns are embedded once per eval run)."""

    def __init__(self, model: semantic.Model):
        self.model = model

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        keys = [hashlib.sha256(t[: semantic.EMBED_CHARS].encode("utf-8", "surrogatepass")).digest() for t in texts]
        new = [i for i, k in enumerate(keys) if k not in _VECTORS]
        if new:
            for i, v in zip(new, self.model.embed([texts[i] for i in new]), strict=True):
                _VECTORS[keys[i]] = v
        return np.stack([_VECTORS[k] for k in keys]) if keys else self.model.embed([])

    def blob(self, vec: Any) -> bytes:
        return self.model.blob(vec)


def embed_store(mem: Memory) -> int:
    """bead[semantic]: every fact's and turn's vector now, as the indexer would have computed them by the time of
    a search (nothing where the extra is off); how many were embedded."""
    model = semantic.model() if mem.index.semantic else None
    if model is None:
        return 0
    return semantic.Backfill(mem.index, _Remembered(model)).run()  # type: ignore[arg-type]
