"""The SQLite that bead runs on, and the checks that it is new enough."""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any

from ..errors import BeadError

MIN_VERSION = (3, 43, 0)  # FTS5 secure-delete (3.42), contentless-delete tables for raw turns (3.43)
FIX = (
    "install bead's dependencies again (`pip install --force-reinstall bead`); on x86_64 Linux "
    "this brings pysqlite3-binary, elsewhere use a Python whose sqlite3 module links SQLite 3.43 or newer"
)


@lru_cache(maxsize=1)
def module() -> Any:
    """The sqlite3 module bead uses: pysqlite3 (a current SQLite, x86_64 Linux) when installed, else the
    interpreter's own."""
    try:
        return importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        return importlib.import_module("sqlite3")


@lru_cache(maxsize=1)
def check() -> str:
    """Return the SQLite version; raise BeadError if FTS5 or secure-delete is missing."""
    sqlite3 = module()
    version = tuple(int(x) for x in sqlite3.sqlite_version.split("."))
    if version < MIN_VERSION:
        raise BeadError(
            f"SQLite {sqlite3.sqlite_version} is too old: bead needs 3.43+ for FTS5 secure-delete, "
            "which forget relies on to leave no bytes behind, and contentless-delete tables (the raw index)",
            FIX,
        )
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(a)")
    except sqlite3.OperationalError:
        raise BeadError(f"SQLite {sqlite3.sqlite_version} was built without FTS5", FIX) from None
    try:
        conn.execute("INSERT INTO t(t, rank) VALUES('secure-delete', 1)")
    except sqlite3.OperationalError:
        raise BeadError(f"SQLite {sqlite3.sqlite_version} lacks FTS5's secure-delete option", FIX) from None
    finally:
        conn.close()
    return sqlite3.sqlite_version
