"""The package's layer boundaries, read from the source with `ast` (no module of bead is imported here).

store (files) and index (SQLite) are the bottom layers; core, recall, dream and evals sit on them; proxy and
cli are entry points that nothing below them may import. SQL and the index connection stay inside
bead/index, and the CLI starts without loading the server, scheduler, watcher or HTTP stacks.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "bead"
SQL = re.compile(r"\b(SELECT|INSERT|DELETE\s+FROM|PRAGMA|CREATE\s+(?:VIRTUAL\s+)?TABLE)\b")
HEAVY = (
    "quart",
    "hypercorn",
    "apscheduler",
    "watchdog",
    "httpx",
    "numpy",
    "pyrage",
    "mcp",
    "jwt",
    "starlette",
    "pydantic",
    "uvicorn",
    "prompt_toolkit",
    "jinja2",
)


def modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(PKG.parent).as_posix()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module at ``path`` (parsed once per test process: several tests walk every module)."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))))


def from_base(path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` statement of ``path`` names, relative levels resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))


@functools.cache
def imported(path: Path) -> frozenset[str]:
    """Every module name ``path`` imports, anywhere in the file (functions and TYPE_CHECKING blocks too),
    relative imports resolved; ``from X import y`` gives both X and X.y (y may be a submodule)."""
    out: set[str] = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = from_base(path, node)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" and node.args:
            if isinstance(node.args[0], ast.Constant):
                out.add(str(node.args[0].value))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            if isinstance(node.args[0], ast.Constant):
                out.add(str(node.args[0].value))
    return frozenset(out)


def violations(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for p in paths:
        for m in sorted(imported(p)):
            for f in forbidden:
                if m == f or m.startswith(f + "."):
                    bad.append(f"{rel(p)} imports {m}")
    return bad


def under(*names: str) -> list[Path]:
    out: list[Path] = []
    for n in names:
        target = PKG / n
        out += [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))
    assert out, f"nothing found under {names}"
    return out


ENTRY_POINTS = ("bead.proxy", "bead.cli", "bead.mcp", "bead.tui", "bead.dashboard")

# The layer order, from the ground up. A module may import its own tier and the tiers below it, never one
# above. Within a tier, imports may go either way but never in a circle (the cycle test below).
TIERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "ground: paths, config, errors, log, safe files, text forms, the model client, the proxy token, ports, a thread's "
        "deadline",
        (
            "bead",
            "bead.errors",
            "bead.paths",
            "bead.config",
            "bead.log",
            "bead.files",
            "bead.textform",
            "bead.yamlsafe",
            "bead.display",
            "bead.llm",
            "bead.token",
            "bead.ports",
            "bead.version",
            "bead.budget",
        ),
    ),
    ("capture: the secret scan, text cleaning, the instruction rule", ("bead.capture",)),
    ("the typed conversation", ("bead.conversation",)),
    ("store: fact, raw-log, audit, queue, episode, report and vault files (a Home and a clock)", ("bead.store", "bead.vault")),
    ("index: the derived SQLite FTS5 index", ("bead.index",)),
    ("recall: an index and a conversation in, candidates and blocks out", ("bead.recall",)),
    ("core: the application (Memory, propose, forget, seal, review, recall for a turn, reads)", ("bead.core",)),
    ("wire formats", ("bead.wire",)),
    (
        "jobs: the dream pass and worker, the indexer, the eval harness, setup",
        ("bead.dream", "bead.indexer", "bead.evals", "bead.setup"),
    ),
    (
        "servers: the proxy, the MCP servers, the review terminal, the dashboard",
        ("bead.proxy", "bead.mcp", "bead.tui", "bead.dashboard"),
    ),
    ("the command line", ("bead.cli", "bead.__main__")),
]


def tier(module: str) -> int:
    """The tier of a bead module: the longest prefix listed (``bead`` alone is the package's face)."""
    best, found = -1, -1
    for i, (_, prefixes) in enumerate(TIERS):
        for prefix in prefixes:
            if (module == prefix or (prefix != "bead" and module.startswith(prefix + "."))) and len(prefix) > best:
                best, found = len(prefix), i
    return found


def dynamic_import(node: ast.AST) -> str | None:
    """The module an ``__import__("m")`` or ``importlib.import_module("m")`` call names ("?" when the name is not
    a constant); None for any other node."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    if getattr(func, "id", None) != "__import__" and getattr(func, "attr", None) != "import_module":
        return None
    arg = node.args[0]
    return str(arg.value) if isinstance(arg, ast.Constant) else "?"


@functools.cache
def bead_imports(path: Path) -> frozenset[str]:
    """The bead modules ``path`` imports, anywhere in the file: ``from P import m`` is the submodule P.m when
    there is one (not the package P, whose ``__init__`` it need not run first), else P."""
    known = {module_name(p) for p in modules()}
    name = module_name(path)
    out: set[str] = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = from_base(path, node)
            out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
        elif (target := dynamic_import(node)) is not None:
            out.add(target)
    return frozenset(m for m in out if m in known and m != name)


def test_every_module_has_a_tier():
    """A new package must be placed in TIERS before it can pass the layer test."""
    assert [module_name(p) for p in modules() if tier(module_name(p)) < 0] == []


def test_import_resolution_sees_relative_and_absolute_imports():
    """The import reader resolves relative imports, so a boundary test cannot pass by not seeing them."""
    found = imported(PKG / "core" / "recall.py")
    assert {"bead.core.memory", "bead.recall.gate", "bead.llm", "bead.config"} <= found
    assert "bead.store.facts" in imported(PKG / "core" / "memory.py")
    assert "bead.index.db" in imported(PKG / "core" / "memory.py")


def upward(graph: dict[str, frozenset[str]]) -> list[str]:
    """Each import in ``graph`` (module -> the bead modules it imports) that runs up the tiers."""
    name = lambda m: TIERS[tier(m)][0].split(":")[0]  # noqa: E731
    return [f"{me} ({name(me)}) imports {m} ({name(m)})" for me in sorted(graph) for m in sorted(graph[me]) if tier(m) > tier(me)]


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The import circles of ``graph``, each as the trail that closes it."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                found.append(trail[trail.index(n) :] + [n] if n in trail else [m, n])
            elif n not in state:
                visit(n, trail + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def the_graph() -> dict[str, frozenset[str]]:
    return {module_name(p): bead_imports(p) for p in modules()}


def test_no_import_runs_up_the_layers():
    """Every import of a bead module, anywhere in the file (functions and TYPE_CHECKING blocks too), goes to
    the module's own tier or one below it."""
    assert upward(the_graph()) == []


def test_no_import_cycle():
    """No module reaches itself through imports (any import, anywhere in the file)."""
    assert cycles(the_graph()) == []


def test_the_checks_report_what_they_exist_for():
    """An import from the store up to core, and a circle inside one tier, are reported (the checks above can
    fail); the real graph is the one the checks read (the core imports the store)."""
    graph = the_graph()
    assert "bead.store.facts" in graph["bead.core.memory"]
    bad = {**graph, "bead.store.queue": graph["bead.store.queue"] | {"bead.core.memory"}}
    assert upward(bad) == ["bead.store.queue (store) imports bead.core.memory (core)"]
    circle = {
        **graph,
        "bead.store.facts": graph["bead.store.facts"] | {"bead.store.queue"},
        "bead.store.queue": graph["bead.store.queue"] | {"bead.store.facts"},
    }
    assert cycles(circle) and all(c[0] == c[-1] for c in cycles(circle))


def function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each import inside a function body of ``path``."""
    out = []
    for node in nodes(path):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    out += [(inner.lineno, a.name) for a in inner.names]
                elif isinstance(inner, ast.ImportFrom):
                    out.append((inner.lineno, ("." * inner.level) + (inner.module or "")))
                elif (target := dynamic_import(inner)) is not None:
                    out.append((inner.lineno, target))
    return out


def test_no_import_by_a_computed_name():
    """An import whose module name is computed cannot be checked: only the eval harness's settings, which set
    a constant of a module the grid names (bead/evals/suite.py), may import that way."""
    computed = {rel(p) for p in modules() for n in nodes(p) if dynamic_import(n) == "?"}
    assert computed <= {"bead/evals/suite.py"}


def test_a_call_that_imports_counts_as_an_import():
    calls = ['importlib.import_module("bead.cli")', '__import__("bead.dream.run")', "importlib.import_module(name)"]
    assert [dynamic_import(ast.parse(c).body[0].value) for c in calls] == ["bead.cli", "bead.dream.run", "?"]  # type: ignore[attr-defined]


def test_core_imports_only_heavy_libraries_inside_functions():
    """An import inside a function in bead/core is a heavy third-party library loaded on first use (so the CLI
    starts fast), never a bead module dodging a cycle."""
    bad = [
        f"{rel(p)}:{line}: {m}"
        for p in under("core")
        for line, m in function_imports(p)
        if m.startswith(".") or m.split(".")[0] not in HEAVY
    ]
    assert bad == []


def test_the_tiers_are_in_the_documented_order():
    """The tier lookup puts each layer where docs/design.md says: capture, conversation, store, core, entry."""
    assert tier("bead.store.facts") < tier("bead.core.memory") < tier("bead.proxy.engine")
    assert tier("bead.capture.instructions") < tier("bead.conversation") < tier("bead.store.queue")
    assert tier("bead.wire.anthropic") < tier("bead.proxy.app")


def test_the_review_terminal_and_the_dashboard_only_translate():
    """bead/tui and bead/dashboard reach memory through the application layer (core, the queue, forget, the
    vault), never the store's files or the index's SQL; neither imports another entry point, but for the two
    modules the dashboard shares with the proxy: its access checks (bead.proxy.access) and its listening socket
    (bead.proxy.serve), reused, not copied."""
    files = under("tui", "dashboard")
    assert violations(files, ("bead.store", "bead.index", "sqlite3", "pysqlite3")) == []
    assert violations(under("tui"), ENTRY_POINTS[:3] + ("bead.dashboard",)) == []
    dash = violations(under("dashboard"), ("bead.proxy", "bead.cli", "bead.mcp", "bead.tui"))
    assert dash == [
        "bead/dashboard/app.py imports bead.proxy",
        "bead/dashboard/app.py imports bead.proxy.access",
        "bead/dashboard/app.py imports bead.proxy.serve",
        "bead/dashboard/app.py imports bead.proxy.serve.listening_socket",
        "bead/dashboard/app.py imports bead.proxy.serve.run_until_signal",
    ]
    assert "bead.core.overview" in imported(PKG / "dashboard" / "app.py")
    assert "bead.core.review" in imported(PKG / "tui" / "review.py")


def test_entry_points_do_not_import_each_other():
    """The proxy and the MCP servers are entry points side by side: neither imports the other, nor the CLI, but
    for the two modules the HTTP server shares with the proxy (as the dashboard does): its access checks
    (bead.proxy.access: loopback Host, no browser, the home's owner) and its serving (bead.proxy.serve), reused,
    not copied."""
    assert violations(under("mcp"), ("bead.proxy", "bead.cli", "bead.tui", "bead.dashboard")) == [
        "bead/mcp/http.py imports bead.proxy",
        "bead/mcp/http.py imports bead.proxy.access",
        "bead/mcp/http.py imports bead.proxy.serve",
        "bead/mcp/http.py imports bead.proxy.serve.run_until_signal",
    ]
    assert violations(under("proxy"), ("bead.mcp", "bead.cli", "bead.tui", "bead.dashboard")) == []


def test_mcp_servers_only_translate():
    """bead/mcp reaches memory through the application layer only: no store or index module (files, SQL),
    no sqlite driver, no file access of its own (open, pathlib, os)."""
    files = under("mcp")
    assert violations(files, ("bead.store", "bead.index", "sqlite3", "pysqlite3", "pathlib", "os", "shutil")) == []
    for p in files:
        calls = [n for n in nodes(p) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "open"]
        assert calls == [], f"{rel(p)} opens a file"
    used = set().union(*(imported(p) for p in files))
    assert {"bead.core.query", "bead.core.remember", "bead.core.forget", "bead.core.seal", "bead.core.review"} <= used


def test_the_core_query_functions_do_no_sql_of_their_own():
    """recall, get_memory and the bundle read through the index's methods and the ranking in bead.recall."""
    for name in ("query.py", "viewer.py", "curate.py", "review.py", "overview.py", "skills.py"):
        assert violations([PKG / "core" / name], ("sqlite3", "pysqlite3")) == []


def test_no_sql_outside_the_index():
    """No module outside bead/index holds SQL keywords in a string literal."""
    assert any(
        SQL.search(n.value) for n in nodes(PKG / "index" / "db.py") if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ), "the pattern finds the index's SQL"
    bad = []
    for p in modules():
        if p.is_relative_to(PKG / "index"):
            continue
        for node in nodes(p):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
                bad.append(f"{rel(p)}:{node.lineno}: {node.value[:60]!r}")
    assert bad == []


def test_no_connection_access_outside_the_index():
    """No module outside bead/index touches an attribute named `conn` or `_conn` of anything."""
    assert any(isinstance(n, ast.Attribute) and n.attr == "_conn" for n in nodes(PKG / "index" / "db.py")), (
        "the walk finds the index's own use"
    )
    bad = []
    for p in modules():
        if p.is_relative_to(PKG / "index"):
            continue
        for node in nodes(p):
            if isinstance(node, ast.Attribute) and node.attr in ("conn", "_conn"):
                bad.append(f"{rel(p)}:{node.lineno}: .{node.attr}")
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in ("getattr", "setattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in ("conn", "_conn")
            ):
                bad.append(f"{rel(p)}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    assert bad == []


def test_cli_import_loads_no_heavy_stack():
    """`import bead.cli` in a fresh interpreter loads none of the server, scheduler, watcher, HTTP or numpy stacks."""
    code = f"import json, sys, bead.cli; print(json.dumps({{m: m in sys.modules for m in {list(HEAVY)!r}}}))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=PKG.parent)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stdout.strip().splitlines()[-1])
    assert set(loaded) == set(HEAVY)
    assert [m for m, yes in loaded.items() if yes] == []
