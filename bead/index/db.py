"""index.db: schema, incremental updates, rebuild and search.

Two corpora:
- ``facts``: every parseable fact version, ``current`` = 1 for the version the
  supersession rule picks. Searches for injection and ``bead search`` read
  current versions only; the eval's similarity-only mode reads all of them.
- ``raw``: one row per raw turn, the first 4,000 characters of its text.

A ``files`` table remembers each indexed file's size, mtime and SHA-256, so a
reconcile is a checksum diff rather than a rebuild.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, overload

from ..errors import BeadError
from ..store.facts import INDEXED_FIELDS as FACT_SPECS
from ..store.facts import Fact, KeyVersions
from ..store.keys import PERSON_TRUSTS, members_own
from ..store.rawlog import Turn
from ..textform import SKELETON_FORM, skeleton
from . import sqlite as sqlite_check
from .query import CJK_CHARS, RAW_QUERY_STOPWORDS, Visibility, cjk_spaced, fts_or, fts_or_query, terms

TOKEN_SAMPLE_CHARS = 400  # of a body that is not ASCII, what pinned_priors reads to reckon its tokens by
KEYS_LIKE_MAX = 500  # keys of one look-alike skeleton a write's check reads at most
# 12: raw_vec (bead[semantic]); a raw rowid is never used twice. 13: fact_vec. 14: a raw turn's project (its marker's)
SCHEMA_VERSION = 14


class AnyProject:
    """``raw_candidates``' default: turns of every project."""


ANY_PROJECT = AnyProject()
# The sha256 recorded for a version name that is no regular file (a link, a FIFO, a folder): never a digest.
ODD_ENTRY = "not-a-file"
RAW_CHARS = 4000  # of a turn's text read back for an excerpt
# Of a turn's text, what is indexed: BM25 ranks a long turn by its length as much as by its words, and the
# start of a turn says what it is about. Chosen by cross-validation over conversations (evals/grids/raw.yaml,
# docs/results.md).
INDEXED_CHARS = 1500
CONTEXT_CHARS = 200  # of the turn before, in the context column
CONTEXT_WEIGHT = 0.5
RAW_POSTINGS_BUDGET = 5_000  # matches scored per raw search, about (docs/results.md)
RAW_MIN_WINDOW = 20_000  # the newest rows a capped search always scores
CONTEXT_MAX_TURN = 1500  # a longer turn says enough by itself: its neighbours' words would dilute it (docs/results.md)
# Key text, body. Key 4 did a little better for the pointers and the pinned block (evals/grids/pointers.yaml)
# and a little worse for supersession hit@1 (one query of 21): a wash on this much data, so 2 stays (docs/results.md).
FACT_WEIGHTS = (2.0, 1.0)
# The frontmatter fields a fact row keeps, from the one declaration of a fact's fields (store.facts.FACT_FIELDS).
INDEXED_FIELDS = tuple(f.name for f in FACT_SPECS)


def key_text(key: str) -> str:
    """Key segments as words: ``project/webshop/payments-api`` -> ``webshop payments api``."""
    parts = key.split("/")
    words = parts[1:] if parts[0] in ("project", "user", "global") else parts
    return " ".join(re.split(r"[-_./]+", " ".join(words))).strip()


def sha256_file(path: Path) -> str:
    """The digest of a file of the store: never through a link, and never of a FIFO (the open would wait) or of a
    hard link (another name of a file outside the home, which bead neither reads nor writes): UnsafePath."""
    from ..files import HardLink, NotAFile

    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotAFile(f"refusing to read {path}: it is not a regular file", f"remove {path}")
    if st.st_nlink > 1:
        os.close(fd)
        raise HardLink(f"refusing to read {path}: it is a hard link", f"remove {path}, or run `bead status --fix`")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# The pinned block's rows: a model's proposal (the dream's inference, an agent's observation) never
# stands in every conversation without the person's accept (trust accepted) or pin.
PERSONS_WORD = "(pinned = 1 OR trust IN (" + ", ".join(f"'{t}'" for t in PERSON_TRUSTS) + "))"

# Index.memo, per index file.
_MEMOS: dict[str, dict[Any, Any]] = {}
# SQLite 3.51.0 and 3.51.1 (pysqlite3-binary's, which bead uses) can deadlock two threads of one process for good
# when one opens or closes a database file while another closes a WAL connection to it: closing takes the file's
# lock mutex and then the VFS's global mutex (unixIsSharingShmNode), opening and closing take them the other way
# round. Fixed in SQLite 3.51.2; seen here (a proxy's warm-up closing its connection while a request's thread opened
# one: the request never finished). bead opens and closes its index connections one at a time in a process,
# however a connection ends: Index.close, or the collector (a thread's locals freed when the thread ends, an Index
# dropped without close): see _connection_class. Re-entrant: the collector may free one inside the block.
OPEN_CLOSE = threading.RLock()
_CONNECTION: dict[Any, type] = {}


def _connection_class(module: Any) -> type:
    """The driver's Connection, closed under OPEN_CLOSE whoever closes it."""
    cls = _CONNECTION.get(module)
    if cls is None:

        class Connection(module.Connection):
            _opened = False

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self._opened = True  # a connection whose open failed is never closed (pysqlite3 crashes on it)

            def close(self) -> None:
                with OPEN_CLOSE:
                    super().close()

            def __del__(self) -> None:
                # At interpreter exit a daemon thread stopped inside the block would hold the lock for good.
                if self._opened and not sys.is_finalizing():
                    self.close()

        cls = _CONNECTION[module] = Connection
    return cls


def forget_derived() -> None:
    """Drop what every index's readers derived from the facts in this process (an eval that changes the
    constants they derive it with)."""
    for memo in _MEMOS.values():
        memo.clear()


def _file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``, not through a link; None where there is none."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class IndexBusy(BeadError):
    """Another process held the index's write lock for longer than this one waits."""

    def __init__(self, what: str = "the index"):
        super().__init__(
            f"{what} is locked by another bead process (a reindex, or the indexer catching up)",
            "run the command again in a moment; `bead status` shows whether the index is behind "
            "the files, and `bead reindex` rebuilds it",
        )


def database_errors() -> tuple[type[BaseException], ...]:
    """The driver's errors for an index that cannot be used (damaged, unreadable, locked)."""
    return (sqlite_check.module().DatabaseError,)


def _busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Stemmer:
    """The porter stemmer that matches FTS5's porter tokenizer, loaded on first use."""

    _impl: Any = None

    def stemWord(self, word: str) -> str:  # noqa: N802 - snowballstemmer's name
        if _Stemmer._impl is None:
            import snowballstemmer

            _Stemmer._impl = snowballstemmer.stemmer("porter")
        return str(_Stemmer._impl.stemWord(word))


_STEM = _Stemmer()


def stem(word: str) -> str:
    """A word as FTS5's porter tokenizer indexes it."""
    return _STEM.stemWord(word)


def _file(record: Fact | Turn) -> Path:
    """The file a fact version or turn was read from or written to (always set for those the store hands out)."""
    if record.path is None:
        raise ValueError(f"{record!r} has no file")
    return record.path


# A pinned block's facts: its project's, and the person's rules (user, feedback) kept outside every project; another
# project's facts never, whatever their type.
_PINNABLE_SCOPE = "(scope = ? OR (type IN ('user', 'feedback') AND substr(scope, 1, 8) != 'project/'))"


def _owners_clause(table: str) -> str:
    """SQL that leaves out a team host's members' own user facts (bead.store.keys.members_own): what a conversation
    of the home's own person may be given (its pinned block, its cue and pointer search). A member's `remember` of
    "I purge every queue first" was pointed to in the owner's conversations of projects the member may not even
    read, as the owner's own fact (an outside attack)."""
    # The tag's shape first (`user/` and twelve characters, then a "."), so the owner's own facts cost no call.
    return f"NOT ({table}.scope = 'user' AND substr({table}.key, 18, 1) = '.' AND bead_member({table}.key, {table}.owner))"


def _visible_clause(vis: Visibility, table: str) -> tuple[str, list[Any]]:
    """SQL that keeps the rows of ``table`` one team member may read: their own user facts, their projects'."""
    parts = [f"({table}.scope = 'user' AND {table}.owner = ? AND substr({table}.key, 1, ?) = ?)"]
    params: list[Any] = [vis.owner, len(vis.user_prefix), vis.user_prefix]
    if vis.projects is None:
        parts.append(f"substr({table}.scope, 1, 8) = 'project/'")
    elif vis.projects:
        parts.append(f"{table}.scope IN ({','.join('?' * len(vis.projects))})")
        params += [f"project/{p}" for p in vis.projects]
    return "(" + " OR ".join(parts) + ")", params


def _context(texts: dict[int, str], n: int) -> str:
    """The context column of turn ``n``: the start of the turn before it, unless ``n`` is long."""
    if len(texts.get(n, "")) > CONTEXT_MAX_TURN:
        return ""
    return texts[n - 1][:CONTEXT_CHARS] if n - 1 in texts else ""


def _project(t: Turn) -> str | None:
    """The project a raw turn was said in, as its marker names it (bead.core.capture); None where it names none."""
    project = t.flags.get("project")
    return project if isinstance(project, str) and project else None


def _digest(t: Turn, text: str, context: str) -> bytes:
    """8 bytes that change when anything a raw row holds or indexes changes (not the text: a hash of it)."""
    h = hashlib.blake2b(digest_size=8)
    for part in (t.role, t.at, t.ref or "", _project(t) or "", text, context):
        h.update(str(part).encode("utf-8", "surrogatepass") + b"\0")
    return h.digest()


_FACT_COLUMNS = ", ".join(
    f"{f.name} {'INTEGER' if f.integer else 'TEXT'}" + (" PRIMARY KEY" if f.name == "id" else "") for f in FACT_SPECS
)
_GENERATION = "BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE name = 'facts_generation'; END"
# The index's tables, one statement each. A change here rebuilds an old index (SCHEMA_DIGEST below).
_SCHEMA = (
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE files (path TEXT PRIMARY KEY, kind TEXT, size INTEGER, mtime_ns INTEGER, sha256 TEXT)",
    f"CREATE TABLE facts ({_FACT_COLUMNS}, scope TEXT, current INTEGER, path TEXT, key_text TEXT, body TEXT, skeleton TEXT)",
    # A new key that reads like a stored one is refused (Memory.write): one lookup of its skeleton.
    "CREATE INDEX idx_facts_skeleton ON facts(skeleton)",
    "CREATE INDEX idx_facts_key_version ON facts(key, version)",
    # The current row of a key, found without reading its other versions (a write's flag update).
    "CREATE INDEX facts_current ON facts(key) WHERE current = 1",
    # The pinned block's two kinds of candidates (the person's facts, the project's):
    # SQLite reads each through its own index instead of scanning every row.
    "CREATE INDEX idx_facts_type_current ON facts(type, current)",
    "CREATE INDEX idx_facts_scope_current ON facts(scope, current)",
    # The facts' words: an external-content FTS5 table that triggers keep current (content="facts" as
    # sqlite-utils writes it, so its detect_fts() finds the table).
    """CREATE VIRTUAL TABLE facts_fts USING fts5(key_text, body, tokenize='porter', content="facts")""",
    # Its words are the columns' with each CJK character apart (bead_fts: bead.index.query.cjk_spaced, a function
    # every connection of Index has), the same in the 'delete' as in the insert. So FTS5's own 'rebuild' (which reads
    # the columns as they are) and its 'integrity-check' against them do not apply; `bead reindex` rebuilds.
    "CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN "
    "INSERT INTO facts_fts (rowid, key_text, body) VALUES (new.rowid, bead_fts(new.key_text), bead_fts(new.body)); END",
    "CREATE TRIGGER facts_ad AFTER DELETE ON facts BEGIN "
    "INSERT INTO facts_fts (facts_fts, rowid, key_text, body) "
    "VALUES ('delete', old.rowid, bead_fts(old.key_text), bead_fts(old.body)); END",
    "CREATE TRIGGER facts_au AFTER UPDATE ON facts BEGIN "
    "INSERT INTO facts_fts (facts_fts, rowid, key_text, body) "
    "VALUES ('delete', old.rowid, bead_fts(old.key_text), bead_fts(old.body)); "
    "INSERT INTO facts_fts (rowid, key_text, body) VALUES (new.rowid, bead_fts(new.key_text), bead_fts(new.body)); END",
    # Any change to a fact row counts: readers that cache what they derive from the facts (the recall
    # gate's IDF, the pinned block's scored candidates) compare this number, not the rows.
    f"CREATE TRIGGER facts_generation_insert AFTER INSERT ON facts {_GENERATION}",
    f"CREATE TRIGGER facts_generation_update AFTER UPDATE ON facts {_GENERATION}",
    f"CREATE TRIGGER facts_generation_delete AFTER DELETE ON facts {_GENERATION}",
    # Recent use of facts (the agent's recalls through MCP, reinforcements), from audit.log: the
    # pinned block counts them. Keys only; forget drops a key's rows.
    "CREATE TABLE uses (key TEXT, kind TEXT, at TEXT)",
    "CREATE INDEX idx_uses_at ON uses(at)",
    "CREATE INDEX idx_uses_key ON uses(key)",
    # Raw turns: where each one's text is in its file, not the text (the files are the truth; the
    # index stays smaller than them). Its words are in raw_fts, which stores no text (contentless) and
    # deletes by tombstone (contentless_delete; checkpoint merges the words of deleted rows away).
    "CREATE TABLE raw_files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE)",
    # AUTOINCREMENT: a rowid names one turn's text for the index's whole life (a vector computed for a row that
    # forget then replaced can never be taken for the new row's); a rebuild carries the sequence over. ``digest``
    # (8 bytes of a hash of what the row indexes) lets a file's re-read keep the rows it did not change.
    "CREATE TABLE raw (rowid INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, n INTEGER NOT NULL, "
    "role TEXT, at TEXT, ref TEXT, file INTEGER NOT NULL, off INTEGER, len INTEGER, digest BLOB, project TEXT)",
    "CREATE UNIQUE INDEX raw_session_n ON raw(session, n)",
    # A conversation's excerpts come from its own project's turns and from turns of none (raw_candidates).
    "CREATE INDEX raw_project ON raw(project)",
    "CREATE INDEX raw_file ON raw(file)",
    # A turn is found by its own words and, at half weight, by the start of the turn before it (the
    # answer to "when did X" is often the turn after X).
    "CREATE VIRTUAL TABLE raw_fts USING fts5(text, context, tokenize='porter', content='', contentless_delete=1)",
    "INSERT INTO raw_fts(raw_fts, rank) VALUES ('rank', 'bm25(1.0, {context_weight})')",
    # bead[semantic]: each current fact's embedding (its key's words and body), for the pointers' order; gone with
    # the fact's row, or when its text changes (a hand edit of a version file).
    "CREATE TABLE fact_vec (id TEXT PRIMARY KEY, vec BLOB NOT NULL)",
    "CREATE TRIGGER fact_vec_ad AFTER DELETE ON facts BEGIN DELETE FROM fact_vec WHERE id = old.id; END",
    "CREATE TRIGGER fact_vec_au AFTER UPDATE OF body, key_text ON facts BEGIN DELETE FROM fact_vec WHERE id = old.id; END",
    # bead[semantic]: each raw turn's embedding (float16, bead.index.semantic), written by the indexer in the
    # background; deleted with the turn's row (forget, seal, a rewritten file). Empty without the extra.
    "CREATE TABLE raw_vec (rowid INTEGER PRIMARY KEY, vec BLOB NOT NULL)",
    # Per-term document counts of raw turns, for the recall gate's IDF.
    "CREATE VIRTUAL TABLE raw_vocab USING fts5vocab(raw_fts, col)",
    # Deleted rows leave the full-text segments at once (forget).
    "INSERT INTO facts_fts(facts_fts, rank) VALUES ('secure-delete', 1)",
    "INSERT INTO raw_fts(raw_fts, rank) VALUES ('secure-delete', 1)",
)


# What the index's tables are, as built: an index whose stored digest differs is rebuilt (as for a new SCHEMA_VERSION,
# which stays for changes the statements do not show, such as what a column holds).
def schema_statements() -> tuple[str, ...]:
    """The statements that build the index, with the raw search's weights as the module has them now (an eval
    that tries other weights builds its temporary indexes with them)."""
    return tuple(s.replace("{context_weight}", repr(float(CONTEXT_WEIGHT))) for s in _SCHEMA)


# The characters bead_fts sets apart are part of what the facts' words are: a change to them rebuilds the index (its
# triggers' 'delete' must give FTS5 the words its insert gave).
SCHEMA_DIGEST = hashlib.sha256("\n".join([*schema_statements(), CJK_CHARS]).encode()).hexdigest()[:16]


def index_files(path: Path) -> tuple[Path, ...]:
    """The index and the files SQLite keeps beside it: its WAL, its shared memory, and the rollback journal a
    crash before WAL mode (or a journal_mode change) can leave, which SQLite reads back at the next open."""
    return tuple(path.with_name(path.name + end) for end in ("", "-wal", "-shm", "-journal"))


def _create(path: Path) -> None:
    """The index's file, created 0600 where there is none (SQLite would create it with the umask's mode, and the
    index holds memory text); an existing one is never opened here. Closing any descriptor of a file drops every
    POSIX lock the process holds on it, SQLite's too: the indexer's second connection (the embedding pass) opening
    and closing the file this way left its first unlocked, so another program's SQLite (an `sqlite3` shell) closing
    last deleted the WAL the indexer still wrote to: its writes were lost, the index corrupted, and a sealed value
    kept in the deleted WAL (an outside attack). A FIFO put there after the caller's check is not waited on: the
    open does not block, and fails."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK, 0o600)
    except FileExistsError:
        # Looked at again without opening it: a link put there since the caller's check would be followed by SQLite
        # (the open above with O_NOFOLLOW refused it), creating the index and its WAL beside the link's target.
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise BeadError(
                f"refusing to open {path}: it is a symbolic link or not a regular file",
                f"remove it (the index is derived: `bead reindex` builds it again at {path})",
            ) from None
        return
    os.close(fd)  # a file no connection of this process can have open: it did not exist a moment ago


class Index:
    def __init__(self, path: Path, store_root: Path, busy_timeout_ms: int = 30000):
        sqlite_check.check()
        self.path = path
        self.store_root = store_root
        sqlite3 = sqlite_check.module()
        self._errors = sqlite3.OperationalError
        self._integrity = sqlite3.IntegrityError
        # SQLite creates files with the umask's mode; the index holds memory text.
        # It follows links, so none of its files may be one.
        for p in index_files(path):
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    raise BeadError(
                        f"refusing to open {p}: it is a symbolic link",
                        f"delete the link (the index is derived: `bead reindex` builds it again at {path})",
                    )
                if not stat.S_ISREG(st.st_mode):
                    # A FIFO (or a socket, a device, a folder): opening it would wait for whoever holds its other end,
                    # every command and the indexer with it (past SIGTERM: the open is retried).
                    raise BeadError(
                        f"refusing to open {p}: it is not a regular file (a FIFO, a socket, a device or a folder)",
                        f"remove {p} (the index is derived: `bead reindex` builds it again at {path})",
                    )
                if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                    # SQLite writes its WAL and shared memory in place: through a hard link, into the other file.
                    raise BeadError(
                        f"refusing to open {p}: it is a hard link, another name of a file that may live outside "
                        f"bead's home ({st.st_nlink} names)",
                        f"delete {p} (the index is derived: `bead reindex` builds it again at {path}), or run "
                        "`bead status --fix`, which gives every hard-linked file of the home a copy of its own",
                    )
        with OPEN_CLOSE:  # the file, its WAL and its shared memory are opened here
            _create(path)
            self._conn = sqlite3.connect(
                str(path),
                timeout=busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
                factory=_connection_class(sqlite3),
            )
            self._conn.create_function("bead_fts", 1, cjk_spaced, deterministic=True)  # the facts' triggers
            self._conn.create_function("bead_member", 2, lambda k, o: int(members_own(k, o)), deterministic=True)
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            # Zero freed pages so deleted text does not linger in the file.
            self._conn.execute("PRAGMA secure_delete=ON")
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self.identity = _file_identity(path)  # the file opened: another one there later is another index (replaced)
        self._raw_deleted = False
        self._raw_high = 0  # the highest raw rowid of the index _drop_all dropped (carried over by _create)
        # bead[semantic]: whether the raw search rescores its candidates with the turns' vectors (Memory sets it
        # from recall.semantic), and whether a search may wait for the model to load (the proxy's may not).
        self.semantic = False
        self.semantic_wait = True
        # Set (the proxy): questions' vectors come from the indexer's QueryServer at this socket, never a model of
        # this process's own.
        self.semantic_socket: Path | None = None
        # What readers derived from the facts, shared by every connection of this process to this
        # file, valid while ``facts_state()`` stays the same (the pinned block's scored candidates).
        if len(_MEMOS) >= 64 and str(path) not in _MEMOS:
            _MEMOS.clear()  # a process that opens many homes (tests, evals) keeps only recent ones
        self.memo: dict[Any, tuple[tuple[str, int], Any]] = _MEMOS.setdefault(str(path), {})
        try:
            self.fresh = self._ensure_schema()
            # An index this connection has just created empty: the marks it had then (``reset`` keeps it while
            # they stay the same, so a new home's index is not built twice, once here and once by its rebuild).
            self._pristine = self._marks() if self.fresh else None
        except BaseException:
            self.close()  # under OPEN_CLOSE, not whenever the collector gets to it
            raise

    def close(self) -> None:
        self._conn.close()  # under OPEN_CLOSE (_connection_class)

    @property
    def in_transaction(self) -> bool:
        """Whether this connection is inside a transaction (``write_tx``): it is not let go then."""
        return bool(self._conn.in_transaction)

    def replaced(self) -> bool:
        """Whether the index file this connection opened is no longer the one at its path (deleted, or another built
        in its place): a connection kept on a deleted file writes where no one reads, and holds its bytes (a
        forgotten value in its WAL) until it closes."""
        return _file_identity(self.path) != self.identity

    @contextlib.contextmanager
    def _savepoint(self) -> Iterator[None]:
        """A block inside a transaction that is undone alone if it fails."""
        name = f"bead_{os.urandom(8).hex()}"
        self._conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            # An error that already ended the whole transaction leaves no savepoint to go back to.
            if self._conn.in_transaction:
                self._conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                self._conn.execute(f"RELEASE SAVEPOINT {name}")
            raise
        else:
            self._conn.execute(f"RELEASE SAVEPOINT {name}")

    def _tables(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]

    @contextlib.contextmanager
    def write_tx(self) -> Iterator[None]:
        """A write transaction that takes the write lock up front.

        A deferred transaction that reads first and then writes cannot wait
        for another writer in WAL mode (SQLITE_BUSY at once); BEGIN IMMEDIATE
        waits for the busy timeout instead. Nested blocks use savepoints.
        """
        if self._conn.in_transaction:
            with self._savepoint():
                yield
            return
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except self._errors as exc:
            if _busy(exc):
                raise IndexBusy() from None
            raise
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @contextlib.contextmanager
    def busy_timeout(self, ms: int) -> Iterator[None]:
        """Wait at most ``ms`` for the write lock inside the block (a write's catch-up budget)."""
        before = self._conn.execute("PRAGMA busy_timeout").fetchone()[0]
        self._conn.execute(f"PRAGMA busy_timeout={max(0, int(ms))}")
        try:
            yield
        finally:
            self._conn.execute(f"PRAGMA busy_timeout={int(before)}")

    # ----- schema ---------------------------------------------------------
    def _schema_version(self) -> int | None:
        if "meta" not in self._tables():
            return None
        row = self._conn.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone()
        return int(row[0]) if row else None

    def _current(self) -> bool:
        """Whether the index was built by this schema: its version and the digest of its statements (a fact
        field added to the declaration changes the statements, so an old index is rebuilt without a bump)."""
        if self._schema_version() != SCHEMA_VERSION:
            return False
        row = self._conn.execute("SELECT value FROM meta WHERE name='schema_digest'").fetchone()
        return bool(row) and row[0] == SCHEMA_DIGEST

    def unbuilt(self) -> None:
        """Mark the index as not built by this schema, so the next open creates it again and rebuilds it: a first
        rebuild that failed (a file it could not read) left it empty but current, and every search after found
        nothing until `bead reindex` (an adversarial pass)."""
        with self.write_tx():
            self._conn.execute("DELETE FROM meta WHERE name='schema_digest'")

    def _ensure_schema(self) -> bool:
        """Create the schema; True when this call (re)created the index empty."""
        if self._current():
            self._migrate_skeletons()
            return False
        with self.write_tx():
            # Another process may have built it while we waited for the lock.
            if self._current():
                return False
            self._drop_all()
            self._create()
        return True

    def _migrate_skeletons(self) -> None:
        """The stored keys' look-alike skeletons made again where an older bead made them another way
        (``SKELETON_FORM``): one UPDATE per key, once, in place; the rest of the index (its vectors: hours of a
        model's work on a large store) stays as it is. The full-text trigger of an updated row is set aside
        meanwhile (a skeleton is no text it indexes), so the lock is held for the skeletons alone."""
        form = "SELECT value FROM meta WHERE name='skeleton_form'"
        row = self._conn.execute(form).fetchone()
        if row and row[0] == SKELETON_FORM:
            return
        with self.write_tx():
            row = self._conn.execute(form).fetchone()
            if row and row[0] == SKELETON_FORM:
                return
            keys = [r[0] for r in self._conn.execute("SELECT DISTINCT key FROM facts")]
            trigger = next(s for s in schema_statements() if s.startswith("CREATE TRIGGER facts_au "))
            self._conn.execute("DROP TRIGGER IF EXISTS facts_au")
            made = [(skeleton(k), k) for k in keys]
            self._conn.executemany("UPDATE facts SET skeleton = ?1 WHERE key = ?2 AND skeleton IS NOT ?1", made)
            self._conn.execute(trigger)
            self._conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('skeleton_form', ?)", [SKELETON_FORM])

    def _drop_all(self) -> None:
        # The highest raw rowid used so far goes on: a vector computed before the rebuild can never be stored
        # for a row that took the same number after it (put_vectors checks built_at too).
        self._raw_high = self._raw_rowid_high()
        # Dropping an FTS5 table drops its shadow tables (`*_fts_data`, ...).
        for name in self._tables():
            if not name.startswith("sqlite_") and "_fts_" not in name:
                self._conn.execute(f"DROP TABLE IF EXISTS [{name}]")

    def _raw_rowid_high(self) -> int:
        tables = set(self._tables())
        high = 0
        if "sqlite_sequence" in tables:
            high = int(self._conn.execute("SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'raw'").fetchone()[0])
        if "raw" in tables:
            high = max(high, int(self._conn.execute("SELECT coalesce(max(rowid), 0) FROM raw").fetchone()[0]))
        return high

    def _create(self) -> None:
        # Plain statements: building the tables through sqlite-utils cost ~4 ms per new index (it reads
        # the schema back after each step), paid by every new home and every test. Not executescript:
        # it would COMMIT the caller's write transaction first.
        for statement in schema_statements():
            self._conn.execute(statement)
        if self._raw_high:
            self._conn.execute("INSERT INTO sqlite_sequence(name, seq) VALUES ('raw', ?)", [self._raw_high])
        self._conn.executemany(
            "INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)",
            [
                ("schema_version", str(SCHEMA_VERSION)),
                ("schema_digest", SCHEMA_DIGEST),
                ("built_at", str(time.time())),
                ("facts_generation", "0"),
                ("skeleton_form", SKELETON_FORM),
            ],
        )

    def _marks(self) -> tuple[int, int]:
        """(other connections' commits, this connection's row changes) so far: while both stay the same, nothing
        has been written to the file."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0]), self._conn.total_changes

    def reset(self) -> None:
        with self.write_tx():
            if self._pristine is not None and self._marks() == self._pristine:
                # Created empty by this connection and written by no one since (the write lock is held): dropping
                # and creating every table again would build the same empty index, at ~2 ms of CPU.
                return
            self._pristine = None
            owed = self._owed()  # a forget or seal running now (or stopped) still owes its checkpoint after a rebuild
            self._drop_all()
            self._create()
            if owed:
                self._conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('checkpoint_owed', '1')")

    # ----- writes ---------------------------------------------------------
    def _insert(self, table: str, rows: Iterable[dict]) -> None:
        """INSERT OR REPLACE with a fixed column list.

        sqlite-utils' insert_all introspects the table on every call, which
        costs more than the insert itself on the per-write path.
        """
        rows = list(rows)
        if not rows:
            return
        cols = list(rows[0])
        sql = f"INSERT OR REPLACE INTO [{table}] ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        self._conn.executemany(sql, [[r[c] for c in cols] for r in rows])

    def rel(self, path: Path) -> str:
        return path.relative_to(self.store_root).as_posix()

    def _remember_file(self, path: Path, kind: str, sha: str | None = None, seen: tuple[int, int, str] | None = None) -> None:
        """The file's fingerprint as indexed: ``seen`` (size, mtime, sha256 of the bytes that were read), else the file
        as it is now."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            # A link is never read (bead status reports it). A version name that is one is remembered as such: it
            # withholds its key while it is the newest, and reconcile must see it go (bead.index.rebuild.diff).
            if kind == "fact":
                self._insert("files", [{"path": self.rel(path), "kind": kind, "size": -1, "mtime_ns": -1, "sha256": ODD_ENTRY}])
            return
        size, mtime_ns, digest = seen if seen is not None else (st.st_size, st.st_mtime_ns, sha or sha256_file(path))
        self._insert("files", [{"path": self.rel(path), "kind": kind, "size": size, "mtime_ns": mtime_ns, "sha256": digest}])

    def _forget_file(self, rel: str) -> None:
        self._conn.execute("DELETE FROM files WHERE path = ?", [rel])

    @staticmethod
    def _fact_row(f: Fact, current: bool, rel: str) -> dict[str, Any]:
        return {
            **{name: getattr(f, name) for name in INDEXED_FIELDS},
            "pinned": int(f.pinned),
            "scope": f.scope,
            "current": int(current),
            "path": rel,
            "key_text": key_text(f.key),
            "body": f.body,
            "skeleton": skeleton(f.key),
        }

    def sync_key(self, kv: KeyVersions, key_dir: Path) -> None:
        """Make the rows of one key match its files (``key_dir`` is the key's folder)."""
        with self.write_tx():
            old = [r[0] for r in self._conn.execute("SELECT path FROM facts WHERE key = ?", [kv.key])]
            self._conn.execute("DELETE FROM facts WHERE key = ?", [kv.key])
            for rel in old:
                self._forget_file(rel)
            prefix = self.rel(key_dir) + "/"
            # A primary-key range, not LIKE: it uses the index.
            self._conn.execute("DELETE FROM files WHERE path >= ? AND path < ?", [prefix, prefix[:-1] + "0"])
            cur = kv.served  # none while the newest file cannot be read: no row of the key is current
            if not kv.numbers:
                self._conn.execute("DELETE FROM uses WHERE key = ?", [kv.key])
            rows = [self._fact_row(f, f is cur, self.rel(_file(f))) for f in kv.facts if f.sensitivity != "secret"]
            self._insert("facts", rows)
            for p in kv.files:
                self._remember_file(p, "fact")

    def add_version(self, fact: Fact, marked: Iterable[Fact] = ()) -> bool:
        """A new version's row, and the status of the versions its write marked, without rewriting the key's rows.

        Current is the highest version in the index, so two writers of one
        key that commit out of order still leave the newest current. The
        file is checked inside the transaction: a forget that deleted it
        meanwhile has removed the rows already, or will after this commits.
        Returns False when the file is gone.
        """
        path = _file(fact)
        with self.write_tx():
            if not os.path.lexists(path):
                return False
            top = self._conn.execute("SELECT max(version) FROM facts WHERE key = ? AND id != ?", [fact.key, fact.id]).fetchone()[
                0
            ]
            newest = top is None or fact.version > top
            if fact.sensitivity != "secret":
                row = self._fact_row(fact, newest, self.rel(path))
                if not newest and row["status"] == "current":
                    row["status"] = "superseded"  # a newer version's write, committed first, marked its file so
                self._insert("facts", [row])
            self._remember_file(path, "fact")
            for old in marked:
                self._conn.execute("UPDATE facts SET status = ? WHERE id = ? AND status != ?", [old.status, old.id, old.status])
                self._remember_file(_file(old), "fact")
            if newest:
                # Only rows whose flag changes are touched (an update re-indexes a row's text).
                self._conn.execute(
                    "UPDATE facts SET current = 0 WHERE key = ? AND current = 1 AND version != ?", [fact.key, fact.version]
                )
        return True

    def add_turns(self, turns: Iterable[Turn]) -> None:
        """Index freshly appended turns and refresh their file's fingerprint.

        A turn's context is the start of the turn before it, so an append
        never changes a row already indexed (the previous turn is read back
        from its file when it came in an earlier append).
        """
        turns = list(turns)
        if not turns:
            return
        with self.write_tx():
            by_session: dict[str, list[Turn]] = {}
            for t in turns:
                by_session.setdefault(t.session, []).append(t)
            for session, ts in by_session.items():
                texts = {t.n: t.text for t in ts}
                prev = ts[0].n - 1
                if prev not in texts:
                    before = self._turn_texts(session, [prev])
                    texts.update(before)
                self._insert_turns(ts, texts)
            for path in {_file(t) for t in turns}:
                # Hashing the whole file on every append would cost O(size);
                # with no sha256, a later size or mtime change counts as modified.
                st = path.stat()
                mine = sorted((t for t in turns if _file(t) == path), key=lambda t: t.offset)
                start = mine[0].offset - len((mine[0].marker() + "\n").encode("utf-8"))
                end = mine[-1].offset + mine[-1].size + 1
                was = self._conn.execute("SELECT size FROM files WHERE path = ?", [self.rel(path)]).fetchone()
                # Only where these turns are all the file has beyond what the index had (another process's turn,
                # appended before or after them and not indexed, would be taken for seen): else the next reconcile
                # reads the file again.
                after = start in ((0,) if was is None else (int(was[0]), int(was[0]) + 1))  # (+1: a cut file's line break)
                if after and end == st.st_size:
                    self._insert(
                        "files",
                        [{"path": self.rel(path), "kind": "raw", "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": ""}],
                    )

    def _file_id(self, rel: str) -> int:
        row = self._conn.execute("SELECT id FROM raw_files WHERE path = ?", [rel]).fetchone()
        if row:
            return int(row[0])
        return int(self._conn.execute("INSERT INTO raw_files(path) VALUES (?)", [rel]).lastrowid)

    def _insert_turns(self, turns: list[Turn], texts: dict[int, str], replace: bool = True) -> None:
        """Rows for ``turns`` (their texts by number in ``texts``, for the context column). ``replace``
        first drops rows a turn's (session, n) already has; a file's rows that were just deleted need not."""
        # Two turns of one number (a sync tool merged two copies of a file, a hand edit): the later one is indexed, as
        # a (session, n) another file holds too is below; both in one batch stopped every reindex and forget of the home
        # with a UNIQUE error (a review).
        if len({(t.session, t.n) for t in turns}) < len(turns):
            turns = list({(t.session, t.n): t for t in turns}.values())
        files: dict[Path, int] = {}
        rows, fts = [], []
        # The highest rowid ever used (sqlite_sequence: AUTOINCREMENT's record), not the highest now.
        rowid = int(self._conn.execute("SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'raw'").fetchone()[0])
        for t in turns:
            path = _file(t)
            if path not in files:
                files[path] = self._file_id(self.rel(path))
            if t.offset < 0:
                raise ValueError(f"turn {t.session}#{t.n} has no offset in its file")
            if replace:
                self._delete_raw_rows("session = ? AND n = ?", [t.session, t.n])
            rowid += 1
            text, context = t.text[:INDEXED_CHARS], _context(texts, t.n)
            digest = _digest(t, text, context)
            rows.append((rowid, t.session, t.n, t.role, t.at, t.ref, files[path], t.offset, t.size, digest, _project(t)))
            fts.append((rowid, cjk_spaced(text), cjk_spaced(context)))
        try:
            self._conn.executemany(
                "INSERT INTO raw(rowid, session, n, role, at, ref, file, off, len, digest, project) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
        except self._integrity:
            if replace:
                raise
            # A (session, n) another file holds too (a copied file): one at a time, the later one wins.
            return self._insert_turns(turns, texts, replace=True)
        self._conn.executemany("INSERT INTO raw_fts(rowid, text, context) VALUES (?, ?, ?)", fts)

    def _delete_raw_rows(self, where: str, params: list[Any]) -> None:
        # raw_fts deletes by tombstone: the words stay in its segments until they merge (checkpoint does).
        self._raw_deleted = True
        # Kept in the database too, with the delete: a process that dies before its checkpoint leaves the merge to
        # the next checkpoint of any process (a forget run again).
        self._conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('raw_optimize', '1')")
        self._conn.execute(f"DELETE FROM raw_vec WHERE rowid IN (SELECT rowid FROM raw WHERE {where})", params)
        self._conn.execute(f"DELETE FROM raw_fts WHERE rowid IN (SELECT rowid FROM raw WHERE {where})", params)
        self._conn.execute(f"DELETE FROM raw WHERE {where}", params)

    def sync_raw_file(self, path: Path, turns: list[Turn], seen: tuple[int, int, str] | None = None) -> None:
        """Make the file's rows match ``turns``. A row whose turn indexes the same (its digest) stays, with its rowid
        and vector (its place in the file updated if an edit before it moved it): a file read again after an append
        (one its writer could not index) inserts only the new turns."""
        rel = self.rel(path)
        texts = {t.n: t.text for t in turns}
        with self.write_tx():
            row = self._conn.execute("SELECT id FROM raw_files WHERE path = ?", [rel]).fetchone()
            have: dict[tuple[str, int, bytes], tuple[int, int, int]] = {}
            if row:
                have = {
                    (str(s), int(n), bytes(d or b"")): (int(rid), int(off), int(size))
                    for rid, s, n, off, size, d in self._conn.execute(
                        "SELECT rowid, session, n, off, len, digest FROM raw WHERE file = ?", [row[0]]
                    )
                }
            new, keep, moved = [], set(), []
            for t in turns:
                got = have.get((t.session, t.n, _digest(t, t.text[:INDEXED_CHARS], _context(texts, t.n))))
                if got is None:
                    new.append(t)
                    continue
                keep.add(got[0])
                if (got[1], got[2]) != (t.offset, t.size):  # the same turn, moved by an edit before it (a redaction)
                    moved.append((t.offset, t.size, got[0]))
            self._conn.executemany("UPDATE raw SET off = ?, len = ? WHERE rowid = ?", moved)
            gone = [v[0] for v in have.values() if v[0] not in keep]
            for i in range(0, len(gone), 500):
                chunk = gone[i : i + 500]
                self._delete_raw_rows(f"rowid IN ({','.join('?' * len(chunk))})", chunk)
            if new:
                self._insert_turns(new, texts, replace=False)
            if path.exists():
                self._remember_file(path, "raw", seen=seen)
            else:
                self._conn.execute("DELETE FROM raw_files WHERE path = ?", [rel])
                self._forget_file(rel)

    def drop_raw_file(self, rel: str) -> None:
        with self.write_tx():
            row = self._conn.execute("SELECT id FROM raw_files WHERE path = ?", [rel]).fetchone()
            if row:
                self._delete_raw_rows("file = ?", [row[0]])
                self._conn.execute("DELETE FROM raw_files WHERE id = ?", [row[0]])
            self._forget_file(rel)

    # ----- raw text, read back from the files ---------------------------------
    @overload
    def _read_span(self, rel: str, off: int, size: int) -> str: ...
    @overload
    def _read_span(self, rel: str, off: int, size: int, with_label: str) -> tuple[str, str]: ...
    def _read_span(self, rel: str, off: int, size: int, with_label: str | None = None) -> str | tuple[str, str]:
        """A turn's text (its first RAW_CHARS characters) from its file; "" when the file is gone or changed. With
        ``with_label`` (the turn's role): and who produced it, from its marker line (bead.store.rawlog.label_of)."""
        from .. import files as safe
        from ..store.rawlog import MARKER_READ, label_of, marker_flags, read_turn_text

        want = min(size, RAW_CHARS * 4)
        text, flags = "", {}
        try:
            # From the home down (the store's folder is the home's "store"): a link put in place of the store
            # itself is refused as every other link below the home is, never followed.
            fd = safe.open_file(self.store_root / rel, os.O_RDONLY, root=self.store_root.parent)
        except (OSError, BeadError):
            fd = -1
        if fd >= 0:
            try:
                text = read_turn_text(os.pread(fd, want, off))[:RAW_CHARS]
                if with_label is not None and off > 0:
                    back = min(off, MARKER_READ)
                    flags = marker_flags(os.pread(fd, back, off - back), from_start=back == off)
            finally:
                os.close(fd)
        return text if with_label is None else (text, label_of(with_label, flags))

    def _turn_texts(self, session: str, numbers: list[int]) -> dict[int, str]:
        marks = ",".join("?" * len(numbers))
        rows = self._conn.execute(
            f"SELECT r.n, f.path, r.off, r.len FROM raw r JOIN raw_files f ON f.id = r.file "
            f"WHERE r.session = ? AND r.n IN ({marks})",
            [session, *numbers],
        ).fetchall()
        return {int(n): self._read_span(rel, off, size) for n, rel, off, size in rows}

    # ----- raw turns' vectors (bead[semantic]) ---------------------------------
    def raw_unembedded(self, limit: int, above: int = 0, upto: int | None = None) -> list[dict[str, Any]]:
        """Up to ``limit`` raw rows with ``above < rowid <= upto`` that have no vector yet, newest first, each with
        its ``rowid`` and ``text`` (read back from its file)."""
        rows = self._rows(
            "SELECT r.rowid AS rowid, f.path AS path, r.off, r.len FROM raw r JOIN raw_files f ON f.id = r.file "
            "WHERE r.rowid > ? AND r.rowid <= ? AND NOT EXISTS (SELECT 1 FROM raw_vec v WHERE v.rowid = r.rowid) "
            "ORDER BY r.rowid DESC LIMIT ?",
            [above, self.raw_size() if upto is None else upto, limit],
        )
        return self.fill_raw_text(rows, labels=False)

    def put_vectors(self, vectors: Iterable[tuple[int, bytes]], built_at: str) -> int:
        """Store (rowid, vector) pairs whose turn still has its row (one deleted meanwhile gets none: a rowid is
        never used again, so a vector always belongs to the text it was computed from), unless the index was
        rebuilt since ``built_at`` (when the rows were read). How many were stored."""
        return self._put_checked(
            "INSERT OR REPLACE INTO raw_vec(rowid, vec) SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM raw WHERE rowid = ?1)",
            vectors,
            built_at,
        )

    def facts_unembedded(self, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` current, awake, non-secret facts without a vector: ``id``, ``key``, ``body``."""
        return self._rows(
            "SELECT f.id, f.key, f.body FROM facts f WHERE f.current = 1 AND f.status != 'dormant' "
            "AND f.sensitivity != 'secret' AND NOT EXISTS (SELECT 1 FROM fact_vec v WHERE v.id = f.id) LIMIT ?",
            [limit],
        )

    def put_fact_vectors(self, vectors: Iterable[tuple[str, bytes, str, str]], built_at: str) -> int:
        """Store (fact id, vector, key, body) where the fact's current, awake, non-secret row still has that key and
        body (an id names a new text after a forget and a new write, or a hand edit), unless the index was rebuilt
        since ``built_at``. How many were stored."""
        return self._put_checked(
            "INSERT OR REPLACE INTO fact_vec(id, vec) SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM facts WHERE id = ?1 "
            "AND key IS ?3 AND body IS ?4 AND current = 1 AND status != 'dormant' AND sensitivity != 'secret')",
            vectors,
            built_at,
        )

    def _put_checked(self, sql: str, rows: Iterable[tuple[Any, ...]], built_at: str) -> int:
        """Run ``sql`` for each row in one write transaction, unless the index was rebuilt since ``built_at``."""
        with self.write_tx():
            if self.built_at() != built_at:
                return 0
            before = self._conn.total_changes
            self._conn.executemany(sql, list(rows))
            return self._conn.total_changes - before

    def keys_named(self, name: str, limit: int = 20) -> list[str]:
        """Current keys whose last segment is ``name`` (a pointer's bare name: bead.core.query.resolve_key)."""
        rows = self._conn.execute(
            "SELECT DISTINCT key FROM facts WHERE current = 1 AND substr(key, -?1) = ?2 ORDER BY key LIMIT ?3",
            (len(name) + 1, "/" + name, limit),
        )
        return [str(k) for (k,) in rows]

    def fact_vector_mark(self) -> int:
        """Changes whenever a fact vector is stored (a new rowid each time; deletes follow fact changes, which
        ``facts_state`` tells): with it, what was derived from every fact vector is known to be current."""
        return int(self._conn.execute("SELECT coalesce(max(rowid), 0) FROM fact_vec").fetchone()[0])

    def pointable_fact_vectors(self) -> list[tuple[str, str, str, bytes]]:
        """(id, key, scope, vector) of every current fact a pointer may name: not dormant, not secret, no team
        member's own user fact (those took the places of the owner's among the nearest, which are read back after)."""
        rows = self._conn.execute(
            "SELECT f.id, f.key, f.scope, v.vec FROM facts f JOIN fact_vec v ON v.id = f.id WHERE f.current = 1 "
            f"AND f.status != 'dormant' AND f.sensitivity != 'secret' AND {_owners_clause('f')}"
        )
        return [(str(i), str(k), str(sc or ""), bytes(v)) for i, k, sc, v in rows]

    def fact_vectors(self, ids: list[str]) -> dict[str, bytes]:
        """The stored vectors of the facts ``ids`` (facts without one are left out)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {str(i): bytes(v) for i, v in self._conn.execute(f"SELECT id, vec FROM fact_vec WHERE id IN ({marks})", ids)}

    def raw_vectors(self, rowids: list[int]) -> dict[int, bytes]:
        """The stored vectors of ``rowids`` (rows without one are left out)."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self._conn.execute(f"SELECT rowid, vec FROM raw_vec WHERE rowid IN ({marks})", rowids)
        return {int(r): bytes(v) for r, v in rows}

    def vector_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM raw_vec").fetchone()[0])

    def fact_vector_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM fact_vec").fetchone()[0])

    def built_at(self) -> str:
        """When this index was built (a rebuild changes it; rowids start again)."""
        return self.facts_state()[0]

    def record_uses(self, keys: Iterable[str], kind: str, at: str) -> None:
        """One row per key: it was recalled by the agent, or reinforced, at ``at``."""
        rows = [{"key": k, "kind": kind, "at": at} for k in dict.fromkeys(keys)]
        if rows:
            with self.write_tx():
                self._insert("uses", rows)

    def record_use_rows(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Rows of ``uses`` as (key, kind, at) for keys that have fact rows (rebuild)."""
        with self.write_tx():
            known = {k for (k,) in self._conn.execute("SELECT DISTINCT key FROM facts")}
            self._insert("uses", [{"key": k, "kind": kind, "at": at} for k, kind, at in rows if k in known])

    def recent_uses(self, since: str = "") -> dict[str, int]:
        """How often each key was used (recalled, reinforced) at or after ``since``."""
        return {k: int(n) for k, n in self._conn.execute("SELECT key, count(*) FROM uses WHERE at >= ? GROUP BY key", [since])}

    def checkpoint(self, keep_owed: Callable[[], bool] | None = None) -> bool:
        """Merge raw_fts after deletes (its segments keep a deleted row's words until merged; forget needs them
        gone) and empty the WAL, so deleted text leaves the -wal file too. False when a reader (a backup, an
        ``sqlite3`` shell) kept it from finishing within the busy timeout: until it has, the database file
        still holds what the WAL's pages overwrite. ``keep_owed``: whether a forget or seal runs in another process
        (it may delete more before its own checkpoint: its flag, ``owe_checkpoint``, stays); asked inside the write
        lock, so a forget that sets its flag after the answer sets it after the flag is cleared."""
        if self._raw_deleted or self.merge_pending():
            with self.write_tx():
                self._conn.execute("INSERT INTO raw_fts(raw_fts) VALUES('optimize')")
                self._conn.execute("DELETE FROM meta WHERE name = 'raw_optimize'")
            self._raw_deleted = False
        busy, _log, _done = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy and self._owed():
            with self.write_tx():
                if keep_owed is None or not keep_owed():
                    self._conn.execute("DELETE FROM meta WHERE name = 'checkpoint_owed'")
        return not busy

    def owe_checkpoint(self) -> None:
        """A forget or seal is about to delete rows whose text must leave the file: until a checkpoint has emptied the
        WAL (``checkpoint``), the record says one is owed, for `bead status` to report and `--fix` to finish, if the
        process stops in between (killed: the text stayed in index.db with nothing saying so)."""
        with self.write_tx():
            self._conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('checkpoint_owed', '1')")

    def owes_checkpoint(self) -> bool:
        """Whether a forget or seal stopped (or runs) before its checkpoint (``owe_checkpoint``)."""
        return self._owed()

    def _owed(self) -> bool:
        return self._conn.execute("SELECT 1 FROM meta WHERE name = 'checkpoint_owed'").fetchone() is not None

    def merge_pending(self) -> bool:
        """Raw rows were deleted (here or by a process that died before its checkpoint) and the full-text index
        still holds their words, or a forget or seal stopped before its checkpoint (``owe_checkpoint``): a
        checkpoint clears them away."""
        return self._conn.execute("SELECT 1 FROM meta WHERE name IN ('raw_optimize', 'checkpoint_owed')").fetchone() is not None

    # ----- reads ----------------------------------------------------------
    def counts(self) -> dict:
        one = lambda sql: self._conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "fact_versions": one("SELECT count(*) FROM facts"),
            "current_facts": one("SELECT count(*) FROM facts WHERE current = 1"),
            "raw_turns": one("SELECT count(*) FROM raw"),
            "files": one("SELECT count(*) FROM files"),
        }

    def breakdown(self) -> dict[str, Any]:
        """Current facts by type and trust, raw turns per session count, and the days facts and turns arrived on
        (the dashboard's counts and its growth plot)."""
        return {
            "by_type_trust": self._rows(
                "SELECT type, trust, count(*) AS n FROM facts WHERE current = 1 GROUP BY type, trust ORDER BY type, trust", []
            ),
            "sessions": int(self._conn.execute("SELECT count(DISTINCT session) FROM raw").fetchone()[0]),
            "versions_by_day": self._rows(
                "SELECT substr(valid_from, 1, 10) AS day, count(*) AS n FROM facts GROUP BY day ORDER BY day", []
            ),
            "turns_by_day": self._rows("SELECT substr(at, 1, 10) AS day, count(*) AS n FROM raw GROUP BY day ORDER BY day", []),
        }

    def small_cache(self, kib: int) -> None:
        """Hold at most ``kib`` KiB of pages in this connection's cache (SQLite's default is 2,000 KiB): the proxy
        keeps one connection a thread in every worker, and the OS's page cache holds the file for all of them."""
        self._conn.execute(f"PRAGMA cache_size={-abs(int(kib))}")

    def pragmas(self) -> dict[str, Any]:
        """The connection settings forget and concurrency rely on (for status and tests)."""
        one = lambda name: self._conn.execute(f"PRAGMA {name}").fetchone()[0]  # noqa: E731
        return {name: one(name) for name in ("journal_mode", "secure_delete", "busy_timeout")}

    def fact_columns(self) -> dict[str, str]:
        """The facts table's columns and their declared types (for status and tests)."""
        return {str(r[1]): str(r[2]) for r in self._conn.execute("PRAGMA table_info(facts)")}

    def integrity_check(self) -> str:
        return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])

    def schema_version(self) -> int | None:
        return self._schema_version()

    def facts_state(self) -> tuple[str, int]:
        """(when the index was built, its facts generation): changes with every change to a fact row, and
        when the index is built anew (which starts the generation over)."""
        got = dict(self._conn.execute("SELECT name, value FROM meta WHERE name IN ('built_at', 'facts_generation')"))
        return str(got.get("built_at", "")), int(got.get("facts_generation", 0))

    def reconciled_ns(self) -> int:
        """When the last reconcile of the whole store began (else when the index was built), in nanoseconds."""
        got = dict(self._conn.execute("SELECT name, value FROM meta WHERE name IN ('reconciled_ns', 'built_at')"))
        try:
            return int(got["reconciled_ns"]) if "reconciled_ns" in got else int(float(got.get("built_at", 0)) * 1e9)
        except ValueError:
            return 0

    def set_reconciled_ns(self, ns: int) -> None:
        with self.write_tx():
            self._conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('reconciled_ns', ?)", [str(ns)])

    def facts_generation(self) -> int:
        """A number that changes with every change to a fact row, whoever made it (triggers keep it)."""
        row = self._conn.execute("SELECT value FROM meta WHERE name = 'facts_generation'").fetchone()
        return int(row[0]) if row else 0

    def raw_size(self) -> int:
        """About how many raw turns are indexed (max rowid: O(1), an upper bound)."""
        return int(self._conn.execute("SELECT coalesce(max(rowid), 0) FROM raw").fetchone()[0])

    def raw_doc_freq(self, terms: list[str]) -> dict[str, int]:
        """Raw turns containing each term, through FTS5's vocabulary (porter stems, as indexed)."""
        stems = {t: _STEM.stemWord(t) for t in terms}
        if not stems:
            return {}
        marks = ",".join("?" * len(set(stems.values())))
        counts = dict(
            self._conn.execute(
                f"SELECT term, doc FROM raw_vocab WHERE col = 'text' AND term IN ({marks})", list(set(stems.values()))
            ).fetchall()
        )
        return {t: int(counts.get(s, 0)) for t, s in stems.items()}

    def sessions_like(self, base: str) -> list[str]:
        """``base`` and its subagent sessions (``base-<hash>``), via the session index."""
        rows = self._conn.execute(
            "SELECT DISTINCT session FROM raw WHERE session = ? "
            "UNION SELECT DISTINCT session FROM raw WHERE session >= ? AND session < ?",
            [base, base + "-", base + "."],
        )  # '.' sorts right after '-'
        return [r[0] for r in rows]

    def holds_as_is(self, path: Path) -> bool:
        """Whether the index took ``path`` as it is now: its size and modification time are the ones recorded when its
        rows were last written (reconcile's rule for a raw log: bead.index.rebuild.diff)."""
        row = self._conn.execute("SELECT size, mtime_ns FROM files WHERE path = ?", [self.rel(path)]).fetchone()
        try:
            st = os.lstat(path)
        except OSError:
            return False
        return row is not None and stat.S_ISREG(st.st_mode) and (int(row[0]), int(row[1])) == (st.st_size, st.st_mtime_ns)

    def file_fingerprints(self) -> dict[str, tuple[int, int, str, str]]:
        return {
            r[0]: (r[1], r[2], r[3], r[4]) for r in self._conn.execute("SELECT path, size, mtime_ns, sha256, kind FROM files")
        }

    def fact_candidates(
        self,
        query: str,
        limit: int,
        current_only: bool = True,
        include_dormant: bool = True,
        visible: Visibility | None = None,
        in_project: str | None = None,
        only_scope: str | None = None,
    ) -> list[dict[str, Any]]:
        """Fact rows that match ``query``, best BM25 first, each with its ``bm25`` score (higher is better).

        ``visible`` keeps only the rows one member of a team host may read (None: every row). ``in_project``
        (``project/<name>``, or "" for a conversation of no project) keeps the rows that conversation may be
        given: that project's, the person's and global ones, so that another project's facts, which never reach
        it, do not take the places of the ``limit`` best. ``only_scope`` keeps that scope's rows alone.
        """
        fts = fts_or_query(query)
        if not fts:
            return []
        where = ["facts_fts MATCH ?"]
        params: list[Any] = [fts]
        if current_only:
            where.append("f.current = 1")
        if not include_dormant:
            where.append("f.status != 'dormant'")
        if visible is not None:
            clause, more = _visible_clause(visible, "f")
            where.append(clause)
            params += more
        if in_project is not None:
            where.append("(substr(f.scope, 1, 8) != 'project/' OR f.scope = ?)")
            params.append(in_project)
            if visible is None:
                where.append(_owners_clause("f"))
        if only_scope is not None:
            where.append("f.scope = ?")
            params.append(only_scope)
        sql = (
            f"SELECT f.*, bm25(facts_fts, {FACT_WEIGHTS[0]}, {FACT_WEIGHTS[1]}) AS rank "
            "FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?"
        )
        return self._scored(sql, [*params, limit])

    def raw_candidates(
        self,
        query: str,
        limit: int,
        exclude_sessions: Iterable[str] = (),
        with_text: bool = True,
        project: str | None | AnyProject = ANY_PROJECT,
    ) -> list[dict[str, Any]]:
        """Raw turn rows that match ``query``, best BM25 first, each with its ``bm25`` score and its ``text``
        (read back from its file; ``with_text=False`` leaves that to ``fill_raw_text``, for the rows kept).
        ``project``: only turns said in that project or in none (a conversation's, as its facts are: one client's
        words never reach another's conversation); ANY_PROJECT, every turn (the person's own search).

        FTS5 scores every row that holds a query word before it can take the
        top k, so the work grows with the history. Scoring is capped at about
        RAW_POSTINGS_BUDGET postings, newest first: when the query's words
        (by their document counts) would match more rows than that, all of
        them are scored only over the newest rows the budget covers, and the
        query's rare words, whose matches are few, over the rest (their
        rows' scores then miss the common words' part). Newer wins anyway;
        a rare word still finds its turn however old.
        """
        words = terms(query, extra=RAW_QUERY_STOPWORDS) or terms(query) or terms(query, keep_stopwords=True)
        # One token each ("key_text" is two), so that every quoted term is a single word.
        words = list(dict.fromkeys(p for w in words for p in w.split("_") if p))
        fts = fts_or(words)
        if not fts:
            return []
        exclude = set(exclude_sessions)
        own = project is not ANY_PROJECT

        def theirs(row: dict[str, Any]) -> bool:
            return own and row["project"] is not None and row["project"] != project

        # Excluded sessions and other projects' turns are filtered from an over-fetch: rank inside FTS5 first, then
        # fetch only the top rows (joining before the LIMIT reads every matching row of `raw`).
        fetch = limit + (limit + 40 if exclude or own else 0)
        n = self.raw_size()
        df = self.raw_doc_freq(words) if n > RAW_POSTINGS_BUDGET else {}
        total = sum(df.values())
        lo = 0
        rare: list[str] = []
        if total <= RAW_POSTINGS_BUDGET:
            scored = self._raw_top(fts, fetch, 0)
        else:
            lo = max(n - max(int(RAW_POSTINGS_BUDGET * n / total), RAW_MIN_WINDOW), 0)
            scored = self._raw_top(fts, fetch, lo)
            spent = 0
            for w in sorted(words, key=lambda w: df.get(w, 0)):
                if df.get(w, 0) == 0 or spent + df[w] > RAW_POSTINGS_BUDGET // 2:
                    continue
                rare.append(w)
                spent += df[w]
            if rare and lo > 0:
                scored += self._raw_top(fts_or(rare), fetch, 0, lo)
                scored.sort(key=lambda r: r[1])
        rows = self._raw_rows([rid for rid, _ in scored])
        left_out = sum(1 for r in rows.values() if r["session"] in exclude or theirs(r))
        if left_out and len(scored) >= fetch and len(scored) - left_out < limit:
            # The excluded sessions or other projects' turns may fill the over-fetch (a long current session, a
            # busier project): ask again without them, in the window and among the older turns' rare words alike
            # (a review: a project whose turns are all old was found by the rare words' search alone, unfiltered).
            kept = self._raw_top(fts, fetch, lo, exclude=exclude, project=project)
            if rare and lo > 0:
                kept += self._raw_top(fts_or(rare), fetch, 0, lo, exclude=exclude, project=project)
            scored = sorted(dict(scored + kept).items(), key=lambda r: r[1])
            rows = self._raw_rows([rid for rid, _ in scored])
        out = []
        for rid, rank in scored:
            row = rows.get(rid)
            if row is None or row["session"] in exclude or theirs(row):
                continue
            row["bm25"] = -rank
            row["rowid"] = rid
            out.append(row)
            if len(out) >= limit:
                break
        return self.fill_raw_text(out) if with_text else out

    def fill_raw_text(self, rows: list[dict[str, Any]], labels: bool = True) -> list[dict[str, Any]]:
        """Each raw row's ``text``, read back from its file (its first RAW_CHARS characters), and with ``labels``
        its ``label``: who produced it as its marker says ("user (typed)", "user (pasted)", "user (tool output)":
        bead.store.rawlog.label), which the row's ``role``, the wire's, does not tell."""
        for r in rows:
            if "text" in r:
                continue
            if labels:
                r["text"], r["label"] = self._read_span(r["path"], r["off"], r["len"], with_label=r.get("role") or "")
            else:
                r["text"] = self._read_span(r["path"], r["off"], r["len"])
        return rows

    def _raw_top(
        self,
        fts: str,
        fetch: int,
        lo: int,
        hi: int | None = None,
        exclude: AbstractSet[str] = frozenset(),
        project: str | None | AnyProject = ANY_PROJECT,
    ) -> list[tuple[int, float]]:
        """(rowid, rank) of the best ``fetch`` matches with ``lo < rowid <= hi``; with ``exclude`` or a ``project``
        (raw_candidates), not the turns of those sessions or of another project, read through each match's row (a
        lookup a match, within the postings budget)."""
        params: list[Any]
        if hi is None:
            sql, params = "raw_fts.rowid > ?", [lo]
        else:
            sql, params = "raw_fts.rowid > ? AND raw_fts.rowid <= ?", [lo, hi]
        if not exclude and project is ANY_PROJECT:
            query = f"SELECT raw_fts.rowid, rank FROM raw_fts WHERE raw_fts MATCH ? AND {sql} ORDER BY rank LIMIT ?"
            return [(int(r), float(k)) for r, k in self._conn.execute(query, [fts, *params, fetch])]
        if exclude:
            sql += f" AND r.session NOT IN ({','.join('?' * len(exclude))})"
            params += sorted(exclude)
        if project is not ANY_PROJECT:
            # A conversation of no project sees the turns of none (SQL's `project != NULL` is no answer: a review).
            if isinstance(project, str):
                sql += " AND (r.project IS NULL OR r.project = ?)"
                params.append(project)
            else:
                sql += " AND r.project IS NULL"
        query = (
            # CROSS JOIN: SQLite takes the full-text matches first and looks each one's row up by its rowid. Without
            # statistics (bead runs no ANALYZE) it chose to walk the project's rows and ask FTS5 once for each: 11 s
            # instead of 0.1 s at 40,000 turns (a review).
            "SELECT raw_fts.rowid, rank FROM raw_fts CROSS JOIN raw r ON r.rowid = raw_fts.rowid "
            f"WHERE raw_fts MATCH ? AND {sql} ORDER BY rank LIMIT ?"
        )
        return [(int(r), float(k)) for r, k in self._conn.execute(query, [fts, *params, fetch])]

    def raw_terms_beyond_ascii(self) -> list[tuple[str, int]]:
        """Each term of the raw turns' own text that holds a character past ASCII (`ёлка`, and `michał` or `nguyễn`,
        which a range from the first such character missed: a review), as the tokenizer keeps them (case-folded, some
        Latin letters without their marks), with the number of turns that hold it. SQLite's GLOB reads each term."""
        rows = self._conn.execute("SELECT term, doc FROM raw_vocab WHERE col = 'text' AND term GLOB '*[^ -~]*'")
        return [(str(t), int(d)) for t, d in rows]

    def raw_rows_saying(self, word: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` raw turn rows whose own text (not the turn before it, the context column) holds ``word``
        as the index reads it (its Porter stem), in no order; without their text (``fill_raw_text``)."""
        term = fts_or(terms(word, keep_stopwords=True))
        if not term:
            return []
        rowids = [
            int(r[0])
            for r in self._conn.execute("SELECT rowid FROM raw_fts WHERE raw_fts MATCH ? LIMIT ?", [f"text : ({term})", limit])
        ]
        rows = self._raw_rows(rowids)
        return [rows[i] for i in rowids if i in rows]

    def raw_rows_with_phrase(self, words: list[str], limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` raw turn rows whose own text says ``words`` in a row as the index reads them (Porter stems,
        whatever stands between them), in no order; without their text (``fill_raw_text``)."""
        said = [t for w in words for t in re.findall(r"\w+", w.lower())]
        if not said:
            return []
        phrase = '"' + (cjk_spaced(" ".join(said)) or "") + '"'  # one FTS5 phrase: its words in this order, as indexed
        rowids = [
            int(r[0])
            for r in self._conn.execute("SELECT rowid FROM raw_fts WHERE raw_fts MATCH ? LIMIT ?", [f"text : {phrase}", limit])
        ]
        rows = self._raw_rows(rowids)
        return [rows[i] for i in rowids if i in rows]

    def _raw_rows(self, rowids: list[int]) -> dict[int, dict[str, Any]]:
        """Raw rows by rowid, each with its ``id``, ``path`` and place in the file (``off``, ``len``)."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self._rows(
            "SELECT r.rowid AS rowid, r.session || '#' || r.n AS id, r.session, r.n, r.role, r.at, r.ref, r.project, "
            f"f.path AS path, r.off, r.len FROM raw r JOIN raw_files f ON f.id = r.file WHERE r.rowid IN ({marks})",
            rowids,
        )
        return {int(r.pop("rowid")): r for r in rows}

    def pinned_candidates(self, project: str | None, limit: int = 400, visible: Visibility | None = None) -> list[dict[str, Any]]:
        """Current facts for a conversation's pinned block: the person's (user, feedback) and the project's; never
        another project's, of any type.

        Pinned first, then the newest; never dormant or secret, and only the
        person's word (stated, accepted) or a fact the person pinned: what an
        agent observed or the dream inferred reaches a conversation only
        through a cue block, labelled, never the standing block. The budget holds at most a few hundred lines, so
        SQLite sorts and limits. ``visible`` keeps only what one member of a
        team host may read.
        """
        clause, more = _visible_clause(visible, "facts") if visible is not None else (_owners_clause("facts"), [])
        return self._rows(
            "SELECT * FROM facts WHERE current = 1 AND status != 'dormant' AND sensitivity != 'secret' "
            f"AND {_PINNABLE_SCOPE} AND {PERSONS_WORD} AND {clause} "
            "ORDER BY pinned DESC, trust NOT IN ('user_stated', 'accepted'), valid_from DESC, key, version DESC LIMIT ?",
            [f"project/{project}" if project else "", *more, limit],
        )

    def pinned_priors(self, project: str | None, limit: int = 5000, visible: Visibility | None = None) -> list[dict[str, Any]]:
        """The same candidates as ``pinned_candidates``, unsorted, with only what scoring reads (no body):
        ``id, key, type, trust, pinned, valid_from``, the body's length in characters (``chars``) and, where it is not
        ASCII, its first TOKEN_SAMPLE_CHARS characters (``sample``). ``facts_by_id`` fetches the chosen ones whole."""
        clause, more = _visible_clause(visible, "facts") if visible is not None else (_owners_clause("facts"), [])
        return self._rows(
            "SELECT id, key, type, trust, pinned, valid_from, length(body) AS chars, "
            f"CASE WHEN length(CAST(body AS BLOB)) != length(body) THEN substr(body, 1, {TOKEN_SAMPLE_CHARS}) END AS sample "
            "FROM facts "
            "WHERE current = 1 AND status != 'dormant' "
            f"AND sensitivity != 'secret' AND {_PINNABLE_SCOPE} AND {PERSONS_WORD} "
            f"AND {clause} LIMIT ?",
            [f"project/{project}" if project else "", *more, limit],
        )

    def facts_by_id(self, ids: list[str]) -> list[dict[str, Any]]:
        """Whole fact rows for ``ids``, in that order (ids without a row are left out)."""
        found: dict[str, dict[str, Any]] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            for r in self._rows(f"SELECT * FROM facts WHERE id IN ({','.join('?' * len(chunk))})", chunk):
                found[r["id"]] = r
        return [found[i] for i in ids if i in found]

    def superseded_shown(
        self, ids: Iterable[str], project: str | None = None, changed: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """The current rows of the keys of ``ids`` (fact ids, ``key@vN``) whose current version is not the one named
        there, or is but ``changed`` says its value is not what was shown (a version file edited in place): what a
        conversation was shown and has since been replaced. Awake, not secret, not another project's than
        ``project``; one indexed lookup."""
        shown = {i for i in ids if "@v" in i and not i.startswith("raw:")}
        keys = sorted({i.rsplit("@v", 1)[0] for i in shown})
        out: list[dict[str, Any]] = []
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            out += self._rows(
                f"SELECT * FROM facts WHERE current = 1 AND key IN ({','.join('?' * len(chunk))}) "
                "AND status != 'dormant' AND sensitivity != 'secret'",
                chunk,
            )
        own = f"project/{project}" if project else None
        keep = [
            r
            for r in out
            if (r["id"] not in shown or (changed is not None and changed(r)))
            and (not r["scope"].startswith("project/") or r["scope"] == own)
        ]
        return sorted(keep, key=lambda r: r["key"])

    def fact_counts(self) -> dict[str, int]:
        """Current facts by status, and how many of them are pinned (bead's summary)."""
        out = {
            str(status): int(n)
            for status, n in self._conn.execute("SELECT status, count(*) FROM facts WHERE current = 1 GROUP BY status")
        }
        out["pinned"] = int(self._conn.execute("SELECT count(*) FROM facts WHERE current = 1 AND pinned = 1").fetchone()[0])
        return out

    def context_facts(self, scopes: Iterable[str], limit: int) -> list[dict[str, Any]]:
        """The newest current, awake facts of the given scopes (``user``, ``project/x``, ...)."""
        scopes = list(scopes)
        if not scopes:
            return []
        marks = ",".join("?" * len(scopes))
        return self._rows(
            f"SELECT * FROM facts WHERE current = 1 AND status != 'dormant' AND scope IN ({marks}) "
            "ORDER BY valid_from DESC, key, version DESC LIMIT ?",
            [*scopes, limit],
        )

    def all_fact_bodies(self) -> list[tuple[str, str]]:
        """(key, body) of every fact row, superseded versions included (forget looks at them all)."""
        return [(k, b) for k, b in self._conn.execute("SELECT key, body FROM facts")]

    def fact_bodies(self, key: str) -> list[str]:
        """The bodies of every row of ``key`` (forget finds what an interrupted forget left in the index)."""
        return [b for (b,) in self._conn.execute("SELECT body FROM facts WHERE key = ?", [key])]

    def current_bodies(self) -> list[tuple[str, str]]:
        """(key, body) of every current fact."""
        return [(k, b) for k, b in self._conn.execute("SELECT key, body FROM facts WHERE current = 1")]

    def has_key(self, key: str) -> bool:
        return self._conn.execute("SELECT 1 FROM facts WHERE key = ? LIMIT 1", [key]).fetchone() is not None

    def keys_like(self, skeleton: str, key: str) -> list[tuple[str, bool]]:
        """Stored keys, other than ``key``, whose look-alike skeleton is ``skeleton`` (bead.textform.skeleton), each
        with whether any of its versions is the person's word (``PERSON_TRUSTS``): the person's first, then in key
        order, at most KEYS_LIKE_MAX (an agent's many keys of one skeleton, versions of one another, cannot push the
        person's out of sight)."""
        rows = self._conn.execute(
            f"SELECT key, max(trust IN ({', '.join('?' * len(PERSON_TRUSTS))})) AS persons FROM facts "
            "WHERE skeleton = ? AND key != ? GROUP BY key ORDER BY persons DESC, key LIMIT ?",
            [*PERSON_TRUSTS, skeleton, key, KEYS_LIKE_MAX],
        ).fetchall()
        return [(str(r[0]), bool(r[1])) for r in rows]

    def persons_key(self, key: str) -> bool:
        """Whether any version of ``key`` is the person's word (``PERSON_TRUSTS``)."""
        row = self._conn.execute(
            f"SELECT 1 FROM facts WHERE key = ? AND trust IN ({', '.join('?' * len(PERSON_TRUSTS))}) LIMIT 1",
            [key, *PERSON_TRUSTS],
        ).fetchone()
        return row is not None

    def current_fact_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM facts WHERE current = 1").fetchone()[0])

    @contextlib.contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        """Interrupt any query of this connection still running ``seconds`` from now.

        The interrupted query raises the driver's OperationalError; the
        caller decides what that means (the proxy fails open).
        """
        end = time.monotonic() + seconds
        self._conn.set_progress_handler(lambda: 1 if time.monotonic() > end else 0, 2000)
        try:
            yield
        finally:
            self._conn.set_progress_handler(None, 0)

    def _scored(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        """Rows of a query that selects FTS5's ``rank`` (lower is better), with ``bm25`` = -rank added."""
        rows = self._rows(sql, params)
        for r in rows:
            r["bm25"] = -r.pop("rank")
        return rows

    def _rows(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        cur = self._conn.execute(sql, params)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, v, strict=True)) for v in cur.fetchall()]
