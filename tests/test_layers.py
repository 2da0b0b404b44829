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

import pytest

PKG = Path(__file__).resolve().parent.parent / "bead"
SQL = re.compile(r"\b(SELECT|INSERT|DELETE\s+FROM|PRAGMA|CREATE\s+(?:VIRTUAL\s+)?TABLE)\b")
HEAVY = ("quart", "hypercorn", "apscheduler", "watchdog", "httpx", "sqlite_utils", "pyrage",
         "mcp", "jwt", "starlette", "pydantic", "uvicorn", "prompt_toolkit", "jinja2")


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


@functools.cache
def imported(path: Path) -> frozenset[str]:
    """Every module name ``path`` imports, anywhere in the file (functions and TYPE_CHECKING blocks too),
    relative imports resolved; ``from X import y`` gives both X and X.y (y may be a submodule)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
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


def test_import_resolution_sees_relative_and_absolute_imports():
    """The import reader resolves relative imports, so a boundary test cannot pass by not seeing them."""
    found = imported(PKG / "recall" / "pipeline.py")
    assert {"bead.core.memory", "bead.recall.gate", "bead.llm", "bead.config"} <= found
    assert "bead.store.facts" in imported(PKG / "core" / "memory.py")
    assert "bead.index.db" in imported(PKG / "core" / "memory.py")   # a TYPE_CHECKING import


def test_store_imports_no_upper_layer():
    """bead/store imports nothing from proxy, cli, core, recall or dream."""
    assert violations(under("store"), ("bead.proxy", "bead.cli", "bead.core", "bead.recall", "bead.dream")) == []


def test_vault_store_imports_no_upper_layer():
    """The vault's keys and sealed files sit beside the store: they import nothing from proxy, cli, core, recall,
    dream or the index (only vault/ops, which seals through forget, sits above core)."""
    files = [PKG / "vault" / "keys.py", PKG / "vault" / "sealed.py", PKG / "vault" / "bech32.py"]
    assert violations(files, ("bead.proxy", "bead.cli", "bead.core", "bead.recall", "bead.dream", "bead.index",
                              "bead.core.forget")) == []


def test_index_imports_no_upper_layer():
    """bead/index imports nothing from proxy, cli, core, recall or dream."""
    assert violations(under("index"), ("bead.proxy", "bead.cli", "bead.core", "bead.recall", "bead.dream")) == []


ENTRY_POINTS = ("bead.proxy", "bead.cli", "bead.mcp", "bead.tui", "bead.dashboard")


@pytest.mark.parametrize("layer", ["core", "recall", "evals", "dream", "forget.py", "vault"])
def test_application_layers_import_no_entry_point(layer):
    """core, recall, evals, dream, forget.py and the vault import nothing from an entry point: the proxy, the CLI,
    the MCP servers, the terminal review or the dashboard."""
    assert violations(under(layer), ENTRY_POINTS) == []


def test_the_review_terminal_and_the_dashboard_only_translate():
    """bead/tui and bead/dashboard reach memory through the application layer (core, the queue, forget, the
    vault), never the store's files or the index's SQL; neither imports another entry point, but for the one
    module the dashboard shares with the proxy: its access checks (bead.proxy.access), reused, not copied."""
    files = under("tui", "dashboard")
    assert violations(files, ("bead.store", "bead.index", "sqlite3", "pysqlite3", "sqlite_utils")) == []
    assert violations(under("tui"), ENTRY_POINTS[:3] + ("bead.dashboard",)) == []
    dash = violations(under("dashboard"), ("bead.proxy", "bead.cli", "bead.mcp", "bead.tui"))
    assert dash == ["bead/dashboard/app.py imports bead.proxy", "bead/dashboard/app.py imports bead.proxy.access"]
    assert "bead.core.overview" in imported(PKG / "dashboard" / "app.py")
    assert "bead.core.review" in imported(PKG / "tui" / "review.py")


def test_entry_points_do_not_import_each_other():
    """The proxy and the MCP servers are entry points side by side: neither imports the other, nor the CLI, but
    for the one module the HTTP server shares with the proxy (as the dashboard does): its access checks
    (bead.proxy.access: loopback Host, no browser, the home's owner), reused, not copied."""
    assert violations(under("mcp"), ("bead.proxy", "bead.cli", "bead.tui", "bead.dashboard")) == [
        "bead/mcp/http.py imports bead.proxy", "bead/mcp/http.py imports bead.proxy.access"]
    assert violations(under("proxy"), ("bead.mcp", "bead.cli", "bead.tui", "bead.dashboard")) == []


def test_mcp_servers_only_translate():
    """bead/mcp reaches memory through the application layer only: no store or index module (files, SQL),
    no sqlite driver, no file access of its own (open, pathlib, os)."""
    files = under("mcp")
    assert violations(files, ("bead.store", "bead.index", "sqlite3", "pysqlite3", "sqlite_utils", "pathlib",
                              "os", "shutil")) == []
    for p in files:
        calls = [n for n in nodes(p) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", None) == "open"]
        assert calls == [], f"{rel(p)} opens a file"
    used = set().union(*(imported(p) for p in files))
    assert {"bead.core.query", "bead.core.remember", "bead.core.forget", "bead.core.seal", "bead.store.queue"} <= used


def test_the_core_query_functions_do_no_sql_of_their_own():
    """recall, get_memory and the bundle read through the index's methods and the ranking in bead.recall."""
    for name in ("query.py", "viewer.py", "curate.py", "review.py", "overview.py", "skills.py"):
        assert violations([PKG / "core" / name], ("sqlite3", "pysqlite3", "sqlite_utils")) == []


def test_no_sql_outside_the_index():
    """No module outside bead/index holds SQL keywords in a string literal."""
    assert any(SQL.search(n.value) for n in nodes(PKG / "index" / "db.py")
               if isinstance(n, ast.Constant) and isinstance(n.value, str)), "the pattern finds the index's SQL"
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
    assert any(isinstance(n, ast.Attribute) and n.attr == "_conn"
               for n in nodes(PKG / "index" / "db.py")), "the walk finds the index's own use"
    bad = []
    for p in modules():
        if p.is_relative_to(PKG / "index"):
            continue
        for node in nodes(p):
            if isinstance(node, ast.Attribute) and node.attr in ("conn", "_conn"):
                bad.append(f"{rel(p)}:{node.lineno}: .{node.attr}")
            elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "setattr", "hasattr")
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and node.args[1].value in ("conn", "_conn")):
                bad.append(f"{rel(p)}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    assert bad == []


def test_cli_import_loads_no_heavy_stack():
    """`import bead.cli` in a fresh interpreter loads none of the server, scheduler, watcher, HTTP or sqlite-utils stacks."""
    code = ("import json, sys, bead.cli; "
            f"print(json.dumps({{m: m in sys.modules for m in {list(HEAVY)!r}}}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=PKG.parent)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stdout.strip().splitlines()[-1])
    assert set(loaded) == set(HEAVY)
    assert [m for m, yes in loaded.items() if yes] == []
