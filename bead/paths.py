"""Where bead keeps things: one home, ``$BEAD_HOME`` or ``~/.bead``.

Every path under the home is spelled here and nowhere else; components ask
``Home`` for their files. Logs and other per-platform places come from
platformdirs.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .errors import BeadError

MAX_VERSION = 999_999_999  # the highest number a version's file name may carry (nine digits)
VERSION_FILE = re.compile(r"v([1-9][0-9]{0,8})\.md")  # fullmatch on a file name
SEALED_FILE = re.compile(r"v([1-9][0-9]{0,8})\.md\.age")  # a sealed version's file name


FACT_STATE = ".state.json"  # a key's write state, in its folder (Home.fact_state)
# What bead keeps at the top of a home (Home's paths).
HOME_NAMES = frozenset(
    """.run audit.log config.yaml curate-mcp.json eval-results.json index.db proxy.runtime.jsonl proxy.token sessions
    shell.sh skills.jsonl store tombstones.log up.json up.lock vault""".split()
)
# Of those, the names no other program's folder holds: one of them (or store/facts, which every bead home has) marks
# a folder as a bead home. Not config.yaml, store, sessions, vault, shell.sh, audit.log, index.db, up.json: a
# project's folder may hold any of those (reviews: a config.yaml, a shell.sh or auditd's audit.log let a folder
# through, made 0700 and filled, and `bead setup --uninstall` removed the project's shell.sh).
HOME_MARKS = frozenset({"proxy.token", "tombstones.log", "proxy.runtime.jsonl", "curate-mcp.json", "skills.jsonl"})
# What a folder may hold and still count as empty: a desktop's and a file system's own clutter.
EMPTY_CLUTTER = frozenset({".DS_Store", ".localized", "lost+found", ".directory", "Thumbs.db", "desktop.ini"})
# config.yaml's top-level keys (bead.config.Config; tests/test_store_safety.py checks they agree): a folder holding only
# a config.yaml of these (bead's settings, written before the first run) is a home to be; a project's is not.
CONFIG_KEYS = frozenset({"owner", "proxy", "store", "recall", "rerank", "dream", "mcp", "import"})


def version_number(name: str) -> int | None:
    """N for a file named ``v<N>.md``; None for anything else."""
    m = VERSION_FILE.fullmatch(name)
    return int(m.group(1)) if m else None


def sealed_number(name: str) -> int | None:
    """N for a sealed version's file ``v<N>.md.age``; None for anything else."""
    m = SEALED_FILE.fullmatch(name)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Home:
    """The layout of a bead home (docs/disk.md)."""

    root: Path

    # ----- top level ---------------------------------------------------------
    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def index_db(self) -> Path:
        return self.root / "index.db"

    @property
    def audit_log(self) -> Path:
        return self.root / "audit.log"

    @property
    def embed_socket(self) -> Path:
        """Where the indexer answers other processes' questions with vectors (bead.index.semantic.QueryServer)."""
        return self.root / ".run" / "embed.sock"

    @property
    def tombstones_log(self) -> Path:
        return self.root / "tombstones.log"

    @property
    def sessions(self) -> Path:
        """Per-conversation proxy state."""
        return self.root / "sessions"

    # ----- the vault (age-encrypted; see bead/vault) ----------------------------
    @property
    def vault(self) -> Path:
        return self.root / "vault"

    @property
    def vault_recipient(self) -> Path:
        """The public key: sealing needs only this."""
        return self.vault / "recipient.txt"

    @property
    def vault_identity(self) -> Path:
        """The private key, encrypted with the person's passphrase (0600)."""
        return self.vault / "identity.age"

    @property
    def sealed_dir(self) -> Path:
        return self.vault / "sealed"

    def sealed_key_dir(self, key: str) -> Path:
        """``vault/sealed/<key>``; the key must be validated by the caller."""
        return self.sealed_dir.joinpath(*key.split("/"))

    def sealed_file(self, key: str, version: int) -> Path:
        return self.sealed_key_dir(key) / f"v{version}.md.age"

    @property
    def proxy_token(self) -> Path:
        """The secret path prefix that marks a request as the owner's (0600)."""
        return self.root / "proxy.token"

    @property
    def up_file(self) -> Path:
        """While `bead up` runs: its pid and its services' pids (`bead status` reads it)."""
        return self.root / "up.json"

    @property
    def up_lock(self) -> Path:
        """Held (flock) by the `bead up` that runs for this home: one at a time."""
        return self.root / "up.lock"

    @property
    def shell_sh(self) -> Path:
        return self.root / "shell.sh"

    @property
    def curate_mcp_config(self) -> Path:
        """The MCP configuration `bead curate` hands the harness: the curator's server (0600)."""
        return self.root / "curate-mcp.json"

    @property
    def eval_results(self) -> Path:
        """The figures of the last `bead eval` run (the dashboard shows them)."""
        return self.root / "eval-results.json"

    @property
    def skills_log(self) -> Path:
        """Every skill file `bead skills install` wrote, one JSON line per write (forget reads it)."""
        return self.root / "skills.jsonl"

    @property
    def proxy_runtime(self) -> Path:
        """Every trace file a proxy of this home was started with, one JSON line per start (forget reads it)."""
        return self.root / "proxy.runtime.jsonl"

    # ----- the store (the source of truth) -----------------------------------
    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def facts(self) -> Path:
        return self.store / "facts"

    @property
    def raw(self) -> Path:
        return self.store / "raw"

    @property
    def episodes(self) -> Path:
        return self.store / "episodes"

    @property
    def queue(self) -> Path:
        """The review queue: one JSON file per item."""
        return self.store / "queue"

    @property
    def reports(self) -> Path:
        return self.store / "reports"

    @property
    def dream_dir(self) -> Path:
        return self.store / "dream"

    @property
    def dream_state(self) -> Path:
        return self.dream_dir / "state.json"

    @property
    def dream_lock(self) -> Path:
        return self.dream_dir / ".lock"

    @property
    def store_lock(self) -> Path:
        return self.store / ".lock"

    @property
    def raw_lock(self) -> Path:
        return self.raw / ".lock"

    @property
    def import_lock(self) -> Path:
        """Held by `bead import` for its whole run: two at once each read which turns were there before either wrote."""
        return self.raw / ".import.lock"

    @property
    def queue_lock(self) -> Path:
        """Held while a review item is decided, so two decisions of one item cannot both act."""
        return self.queue / ".lock"

    def fact_dir(self, key: str) -> Path:
        """``store/facts/<key>``; the key must be validated by the caller."""
        return self.facts.joinpath(*key.split("/"))

    def fact_file(self, key: str, version: int) -> Path:
        return self.fact_dir(key) / f"v{version}.md"

    def fact_state(self, key: str) -> Path:
        """A key's small write state (last version number given out, versions already settled)."""
        return self.fact_dir(key) / FACT_STATE

    def raw_file(self, session: str, day: datetime) -> Path:
        """``store/raw/YYYY/MM/DD/<session>.md`` (the day of the session's first turn)."""
        return self.raw / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}" / f"{session}.md"

    def raw_glob(self, session: str) -> str:
        """The glob under ``raw`` that finds a session's file on any day."""
        return f"*/*/*/{session}.md"

    def episode_file(self, session: str, day: datetime) -> Path:
        return self.episodes / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}" / f"{session}.md"

    def report_file(self, day: datetime) -> Path:
        return self.reports / f"{day:%Y-%m-%d}.md"

    def queue_item(self, item_id: str) -> Path:
        return self.queue / f"{item_id}.json"

    def session_state(self, conversation_id: str) -> Path:
        return self.sessions / f"{conversation_id}.jsonl"

    def session_lock(self, conversation_id: str) -> Path:
        return self.sessions / f"{conversation_id}.lock"

    def chain_file(self, response_id: str) -> Path:
        """Which conversation a Responses API answer belongs to, for another proxy worker (proxy.workers > 1):
        named by a digest of the answer's id, which never becomes a path itself."""
        return self.sessions / ".chains" / (hashlib.sha256(response_id.encode("utf-8", "replace")).hexdigest()[:32] + ".json")

    def capture_lock(self, conversation_id: str) -> Path:
        """A conversation's capture lock (bead.core.state.Conversations.capture_lock), beside its lock."""
        return self.sessions / f".{conversation_id}.capture.lock"

    def service_log(self, service: str) -> Path:
        """Where launchd writes a service's log (macOS): the platform's log folder."""
        import platformdirs

        return Path(platformdirs.user_log_dir("bead", appauthor=False)) / f"{service}.log"

    def classify(self, path: Path) -> tuple[str, str] | None:
        """What a file under the store is: ("fact", its key), ("raw", "") or None."""
        try:
            parts = path.relative_to(self.store).parts
            str(path).encode("utf-8")
        except (ValueError, UnicodeEncodeError):
            return None  # not under the store, or a name that is not UTF-8 (none of bead's: the index cannot hold it)
        if len(parts) >= 3 and Path(*parts[:1]) == self.facts.relative_to(self.store):
            return "fact", "/".join(parts[1:-1])
        if len(parts) >= 2 and Path(*parts[:1]) == self.raw.relative_to(self.store):
            return "raw", ""
        return None

    def refuse_foreign(self) -> None:
        """Refuse a folder that holds other files and no bead home, before anything in it changes: made private and
        filled with bead's folders, it lost its mode for good (`/`, `/etc`, a shared folder's setgid bit), by any
        command, a read one too (an outside attack). A folder holding store/facts or a name only bead writes
        (HOME_MARKS) is a home; one holding nothing but a file system's clutter (EMPTY_CLUTTER) and a config.yaml of
        bead's settings (its keys, CONFIG_KEYS) is taken as one to be; anything else (a project's `src`, its own
        config.yaml or shell.sh, auditd's audit.log, a person's dotfiles) is refused."""
        try:
            names = [p.name for p in self.root.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            return
        if any(n in HOME_MARKS for n in names) or self.facts.is_dir():
            return
        # bead's own folders, made before a home's first command by a test or a hand: no mark, and no other file
        folders = {
            n for n in ("store", "sessions") if n in names and not (self.root / n).is_symlink() and (self.root / n).is_dir()
        }
        others = sorted(n for n in names if n not in EMPTY_CLUTTER and n not in folders and n != "config.yaml")
        if not others and "config.yaml" in names:
            self._refuse_foreign_config()  # the folder is bead's to be only if its settings are
        elif others and "config.yaml" in names:
            others = sorted([*others, "config.yaml"])
        if others:
            raise BeadError(
                f"the bead home {self.root} (BEAD_HOME, else ~/.bead) is a folder that holds other files "
                f"({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}) and no bead home: bead changed nothing",
                "point BEAD_HOME at a new or empty folder (bead makes it private, mode 0700) or at your bead home",
            )

    def _refuse_foreign_config(self) -> None:
        """Refuse a config.yaml that is no mapping of bead's settings' keys (CONFIG_KEYS), read as YAML alone, naming
        its first other key and line (a project's `name: myapp`, or a typo of bead's `ownr:`); mistakes in its values
        are bead.config's to say, once the folder is a home."""
        import difflib

        from . import yamlsafe
        from .files import read_text

        try:
            text = read_text(self.config, root=self.root)
            data = yamlsafe.load(text)
        except Exception:  # noqa: BLE001 - unreadable, not YAML, a link: bead.config says which and where
            return
        if data is None or (isinstance(data, dict) and set(map(str, data)) <= CONFIG_KEYS):
            return
        if not isinstance(data, dict):
            raise BeadError(
                f"{self.config} is not bead's settings (a mapping of {', '.join(sorted(CONFIG_KEYS))}), so {self.root} "
                "is no bead home yet: bead changed nothing",
                "fix the file or delete it; if the folder is a project's, point BEAD_HOME at a new or empty folder",
            )
        key = next(str(k) for k in data if str(k) not in CONFIG_KEYS)
        line = next((i for i, ln in enumerate(text.splitlines(), 1) if key and ln.startswith(key)), 1)
        near = difflib.get_close_matches(key, sorted(CONFIG_KEYS), n=1)
        raise BeadError(
            f"{self.config} line {line}: `{key}` is none of bead's settings ({', '.join(sorted(CONFIG_KEYS))}), so "
            f"{self.root} is no bead home yet: bead changed nothing",
            (f"did you mean `{near[0]}`? " if near else "")
            + "fix or delete that line; if the folder is a project's, point BEAD_HOME at a new or empty folder",
        )

    def ensure(self) -> Home:
        """Create the home (mode 0700) and its folders (0700) if missing.

        A folder that is a symbolic link is left alone: every operation
        through it refuses, and `bead status` reports it.
        """
        from .files import UnsafePath, ensure_dir

        created = not self.root.exists()
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = self.root.stat().st_uid
        if not created and owner != os.getuid():
            # Whoever made the folder owns what is in it: the token they left would be taken as the person's, the
            # proxy would take them for its owner, and shell.sh there would run in the person's shell.
            raise BeadError(
                f"the bead home {self.root} belongs to another user (uid {owner}, not your uid {os.getuid()})",
                "use a home of your own: point BEAD_HOME at a folder you create (mkdir -m 700); if this is your home "
                'and a command run as another user (sudo) made it, give it back: sudo chown -R "$USER" ' + str(self.root),
            )
        if not created:
            self.refuse_foreign()
        # mkdir's mode is masked by the umask; the home holds private memory.
        if stat.S_IMODE(self.root.stat().st_mode) != 0o700:
            try:
                os.chmod(self.root, 0o700)
            except OSError as exc:
                if exc.errno != errno.EROFS:
                    raise
                # A home on a read-only mount is still read (show, list, search); what writes says why it cannot.
        for d in (self.store, self.facts, self.raw, self.episodes, self.sessions):
            try:
                ensure_dir(d, root=self.root)
            except UnsafePath:
                continue
        return self


def user_home(env: dict[str, str] | None = None) -> Path:
    """The person's home folder (``Path.home()``), or BeadError where ``$HOME`` is set empty or relative: Python reads
    an empty one as ``/`` and a relative one as given, so `bead setup` in a container with ``HOME=`` wrote its units,
    its home and an rc block into ``/`` (as root), and with a relative one into the current folder, where nothing
    reads them, and said it was done (an outside attack)."""
    env = dict(os.environ) if env is None else env
    value = env.get("HOME")
    if value is not None and not os.path.isabs(value):
        raise BeadError(
            f"HOME is {'empty' if not value else 'a relative path (' + repr(value[:80]) + ')'}: bead cannot tell where "
            "your home folder is",
            "set HOME to your home folder's absolute path (or BEAD_HOME to bead's home), then run the command again",
        )
    return Path(value) if value else Path.home()


def home_path(value: str, env: dict[str, str] | None = None) -> Path:
    """``value`` (``$BEAD_HOME``, ``--home``) as an absolute path: a leading ``~`` or ``~/`` read against
    ``user_home`` (so an empty or relative ``HOME`` is refused, not read as ``/``), ``~user`` as the system has it,
    a relative path against the current folder."""
    if value == "~" or value.startswith("~/"):
        return (user_home(env) / value[1:].lstrip("/")).absolute()  # "~//x" too: the home's x, not /x
    return Path(value).expanduser().absolute()


def resolve_home(env: dict[str, str] | None = None) -> Home:
    """``$BEAD_HOME`` if set, else ``~/.bead`` (``user_home``). A ``BEAD_HOME`` that starts with ``~`` or ``~/``
    (quoted, so the shell left it) is read against ``user_home`` too: Python's own expansion reads an empty ``HOME``
    as nothing, and ``'~/.bead'`` became ``/.bead``."""
    env = dict(os.environ) if env is None else env
    value = env.get("BEAD_HOME")
    if value:
        return Home(home_path(value, env))
    return Home(user_home(env) / ".bead")


PATH_MAX = 4096  # bytes of a path Linux and macOS resolve: a longer one names no folder to walk


def enclosing_git(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` that holds a ``.git`` (dir or file). ``path`` may come from a
    transcript's text: one longer than PATH_MAX names no folder, and walking its parents (each a copy of its parts)
    took time and memory quadratic in its length (16 GB for a 128 KB ``cwd``)."""
    if len(str(path)) > PATH_MAX:  # characters: at least as many bytes
        return None
    for d in (path, *path.parents):
        try:
            if (d / ".git").exists():
                return d
        except OSError:
            return None
    return None
