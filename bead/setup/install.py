"""Install bead's three services for this platform, the shell wrapper and the rc block.

Linux: systemd user units in ``~/.config/systemd/user``, loaded with
``systemctl --user daemon-reload`` and ``enable --now``. macOS: launchd agents
in ``~/Library/LaunchAgents``, loaded with ``launchctl bootout`` and
``bootstrap``. Every step compares before it writes, so a second run changes
nothing. All commands go through one runner, which tests replace.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

from ..config import write_default
from ..errors import BeadError
from ..files import UnsafePath, atomic_write, read_bytes
from ..paths import Home
from ..ports import client_address, listener, parse_listen
from ..token import load_token

SERVICES = ("proxy", "indexer", "dream")
RC_BEGIN = "# >>> bead >>>"
RC_END = "# <<< bead <<<"

Runner = Callable[[list[str]], subprocess.CompletedProcess]


# A stop, a restart or a disable waits for the proxy's streams in flight (TimeoutStopSec=310 in bead-proxy.service).
STOP_TIMEOUT_S = 330


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    timeout = STOP_TIMEOUT_S if any(verb in cmd[:4] for verb in ("stop", "restart", "disable")) else 60
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"no answer within {timeout} s")


@dataclass
class Plan:
    platform: str  # "systemd" | "launchd"
    user_home: Path  # the person's $HOME
    home: Home  # the bead home
    bead: str  # absolute path of the bead executable
    listen: str
    services: tuple[str, ...] = SERVICES
    actions: list[str] = field(default_factory=list)

    @property
    def unit_dir(self) -> Path:
        if self.platform == "launchd":
            return self.user_home / "Library" / "LaunchAgents"
        base = os.environ.get("XDG_CONFIG_HOME") or ""
        # A relative value is not one (the XDG spec, and systemd, ignore it): it put the units in the current folder.
        return Path(base if os.path.isabs(base) else self.user_home / ".config") / "systemd" / "user"

    def unit_name(self, service: str) -> str:
        return f"com.bead.{service}.plist" if self.platform == "launchd" else f"bead-{service}.service"

    @property
    def socket_unit(self) -> str | None:
        """systemd's socket unit for the proxy's port (None: launchd, or no proxy): systemd holds the port while
        the proxy restarts, so a request meanwhile waits instead of being refused, and no other process can bind
        the port the harnesses dial."""
        return "bead-proxy.socket" if self.platform == "systemd" and "proxy" in self.services else None

    def socket_template(self) -> str:
        host, port = parse_listen(self.listen)  # loopback only, as the proxy checks the socket it is passed
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return (
            resources.files("bead.setup")
            .joinpath("units", "bead-proxy.socket")
            .read_text(encoding="utf-8")
            .replace("@LISTEN@", address)
        )

    def template(self, service: str) -> str:
        folder = "launchagents" if self.platform == "launchd" else "units"
        name = self.unit_name(service)
        text = resources.files("bead.setup").joinpath(folder, name).read_text(encoding="utf-8")
        if self.platform == "systemd":
            # A unit's words: a path with a space, a quote or "%" (a specifier) is quoted and escaped as systemd
            # reads it, or the service would run another path, or none.
            text = text.replace("Environment=BEAD_HOME=@HOME@", "Environment=@ENV_HOME@")
            return _filled(text, {"@BEAD@": _exec_words(self.bead), "@ENV_HOME@": _unit_word(f"BEAD_HOME={self.home.root}")})
        # A plist is XML: a path with "&" or "<" is escaped, or it would not parse, or would add its own strings.
        return _filled(
            text,
            {
                "@BEAD@": xml_escape(self.bead),
                "@HOME@": xml_escape(str(self.home.root)),
                "@LOG@": xml_escape(str(launchd_log(service, self.user_home))),
            },
        )

    @property
    def shell_sh(self) -> Path:
        return self.home.shell_sh

    def rc_file(self) -> Path:
        shell = os.environ.get("SHELL", "")
        return self.user_home / (".zshrc" if shell.endswith("zsh") else ".bashrc")

    def rc_block(self) -> str:
        quoted = shlex.quote(str(self.shell_sh))
        return f"{RC_BEGIN}\n[ -f {quoted} ] && . {quoted}\n{RC_END}\n"


def platform_name() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def check_executable(path: str) -> str:
    """The executable's real path (so each way of running setup writes the same units);
    refuse one that lives in a temporary directory or a throwaway environment."""
    p = Path(os.path.realpath(path))
    throwaway = [
        Path(tempfile.gettempdir()),
        Path("/tmp"),
        Path("/var/tmp"),
        Path("/dev/shm"),
        Path("/run/user"),
        Path("/private/var/folders"),
        Path.home() / ".cache",
        Path.home() / ".local" / "pipx" / ".cache",
    ]
    text = str(p)
    if any(_inside(p, t) for t in throwaway) or re.search(r"/(pip-build-env|archive-v\d|uv/environments-v\d|\.cache/uv)/", text):
        raise BeadError(
            f"refusing to install services for {p}: it lives in a temporary or throwaway environment "
            "that can disappear, and the services would stop starting",
            "install bead for good first (`sh setup_scripts/install.sh` from a checkout, or `pipx install bead`), "
            "then run `bead setup` from that installation",
        )
    return str(p)


def _inside(p: Path, parent: Path) -> bool:
    try:
        p.relative_to(parent)
        return True
    except ValueError:
        try:
            p.relative_to(parent.resolve())
            return True
        except (ValueError, OSError):
            return False


def launchd_log(service: str, user_home: Path | None = None) -> Path:
    """Where a launchd agent logs: the macOS log folder (~/Library/Logs/bead), as platformdirs names it."""
    from platformdirs.macos import MacOS

    path = MacOS("bead", appauthor=False).user_log_path / f"{service}.log"
    if user_home is not None:
        path = user_home / path.relative_to(Path.home())
    return path


def _unit_word(value: str) -> str:
    """``value`` as one word of a systemd unit line (systemd.syntax(7)): as it is when it needs nothing, else
    double-quoted with its backslashes and quotes escaped; "%" (a specifier, systemd.unit(5)) is doubled. (systemd
    expands no "$" in an executable's name or in Environment=, and refuses an executable's name that holds a quote
    or "$".)"""
    escaped = value.replace("%", "%%")
    if not any(c in escaped for c in " \t\"'\\") and escaped == value:
        return value
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


ENV = "/usr/bin/env"


def _exec_words(path: str) -> str:
    """An ExecStart= line's command for the executable ``path``. systemd refuses an executable's name that holds a
    quote, a backslash or "$" (a home at /home/o'brien: the unit would never start), and takes any as an
    argument's: such a path is run by env(1), as its argument, with "$" doubled (systemd expands it there)."""
    if not any(c in path for c in "\"'$\\"):
        return _unit_word(path)
    if "=" in path:
        # env(1) takes a first argument holding "=" for a variable to set, and would run `proxy`.
        raise BeadError(
            f"refusing to install services for the executable {path!r}: systemd cannot run a path holding a quote, a "
            "backslash or $ itself, and one holding = as well cannot go through env(1) either",
            "install bead under a path without those characters (BEAD_VENV=... sh setup_scripts/install.sh)",
        )
    return f"{ENV} " + _unit_word(path).replace("$", "$$")


_PLACEHOLDER = re.compile(r"@[A-Z_]+@")


def _filled(template: str, values: dict[str, str]) -> str:
    """``template`` (bead's own file) with each placeholder replaced by its value in one pass: a value is never read
    again for another placeholder (a home named `h @PYTHON@x` had the Python path spliced inside its quotes)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(0), m.group(0)), template)


UNIT_MAX_BYTES = 1 << 20  # a file setup compares with what it would write: larger, it is none setup wrote


def _file_bytes(path: Path, limit: int = UNIT_MAX_BYTES) -> bytes | None:
    """The bytes of the regular file at ``path`` (through a link: the person's layout), or None where there is none,
    it is no regular file (a named pipe or a device there, never waited on nor read: /dev/zero filled memory, a FIFO
    held setup) or it is longer than ``limit``. None reads as "differs": setup writes its file in that place."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, held = [], 0
        while held <= limit and (chunk := os.read(fd, 1 << 16)):
            chunks.append(chunk)
            held += len(chunk)
        return b"".join(chunks) if held <= limit else None
    finally:
        os.close(fd)


def _write_if_changed(path: Path, text: str, mode: int = 0o644, root: Path | None = None) -> bool:
    """Write ``path`` unless it already holds ``text``; ``root`` is the bead home for a file below it. A person's
    file that is not UTF-8 (an rc file in Latin-1) keeps its bytes: read and written with surrogateescape."""
    data = text.encode("utf-8", "surrogateescape")
    if root is not None:
        # Below the home: read as every file of the home is (never through a link, never a FIFO's endless wait); a
        # link or a hard link there is replaced, not followed.
        try:
            if read_bytes(path, root=root) == data:
                return False
        except (FileNotFoundError, UnsafePath):
            pass
    elif _file_bytes(path) == data:
        return False
    if root is None:
        # Outside the home (unit files, rc files): a person's own layout, links included. A folder made here is
        # 0755 whatever the umask (under umask 000, ~/.config/systemd/user came out world-writable, and another
        # user could have swapped a unit in).
        root = path.parent
        missing = [d for d in (root, *root.parents) if not d.exists()]
        for d in reversed(missing):
            d.mkdir(mode=0o755, exist_ok=True)
            os.chmod(d, 0o755)
    atomic_write(path, data, mode=mode, root=root)
    return True


NO_RC = "or run `bead setup --no-rc` and source {shell} from your shell's startup yourself"


def _rc_target(path: Path, strict: bool = True) -> Path:
    """The file to read and write for the rc file ``path``: a link's target (dotfiles kept with stow or chezmoi
    stay links), or the path itself. ``strict``: a link that leads to no file is refused (setup made its whole
    missing chain of folders, outside anything bead owns: a dotfiles link into a disk not mounted)."""
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if strict and not target.exists():
        raise BeadError(
            f"{path} is a link to {target}, which does not exist (or the link leads in a circle)",
            "create that file or fix the link, " + NO_RC.format(shell="~/.bead/shell.sh"),
        )
    return target


class RcNotAFile(BeadError):
    pass


def _rc_text(path: Path) -> str:
    """An rc file's text, its bytes as they are (CRLF line ends, bytes that are not UTF-8); "" when there is none.
    Opened without waiting: a named pipe there held setup, and `--uninstall` after it had removed the units."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RcNotAFile(
                f"{path} is not a regular file (a named pipe, a device or a folder): setup reads and rewrites your "
                "shell's rc file",
                "make it a regular file, " + NO_RC.format(shell="~/.bead/shell.sh"),
            )
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "surrogateescape")
    finally:
        os.close(fd)


def _rc_writable(path: Path, shell: Path) -> None:
    """Refuse, before anything is written, an rc file setup could not write: it is replaced through a new file beside
    it, so its folder must be writable too (an immutable file, a read-only mount). The error named the temp file."""
    if (path.exists() and not os.access(path, os.W_OK)) or not os.access(path.parent, os.W_OK | os.X_OK):
        raise BeadError(
            f"cannot write {path} (or its folder): nothing was changed",
            "make it writable, " + NO_RC.format(shell=shell),
        )


def _writable_path(what: str, value: str) -> None:
    """A path setup writes into a unit, a plist or shell.sh: a control character (a line break) cannot be quoted
    there; it would start a line of its own (an ExecStartPre= of someone's choosing)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise BeadError(
            f"refusing to install services for {what} {value!r}: it holds a control character (a line break), which "
            "a service file cannot hold",
            "use a path without control characters (move the home with BEAD_HOME, or bead to another folder)",
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # A name's bytes that are not UTF-8 (os.fsdecode keeps them as lone surrogates): systemd ignores the whole
        # line that holds them and a plist cannot hold them, so the services would not start.
        raise BeadError(
            f"refusing to install services for {what} {value.encode('utf-8', 'surrogateescape')!r}: its name holds "
            "bytes that are not UTF-8, which a service file cannot hold",
            "use a path whose name is UTF-8 (move the home with BEAD_HOME, or bead to another folder)",
        ) from None
    if any(_noncharacter(c) for c in value):
        # U+FDD0..U+FDEF and U+xFFFE/U+xFFFF: systemd reads them as not UTF-8 clean and ignores the line, and XML (a
        # plist) cannot hold U+FFFE/U+FFFF; the files were written and the services failed to load (an outside attack).
        raise BeadError(
            f"refusing to install services for {what} {value!r}: it holds a Unicode noncharacter, which a service "
            "file cannot hold",
            "use a path without it (move the home with BEAD_HOME, or bead to another folder)",
        )


def _noncharacter(c: str) -> bool:
    n = ord(c)
    return 0xFDD0 <= n <= 0xFDEF or (n & 0xFFFE) == 0xFFFE


def install(plan: Plan, load: bool = True, rc: bool = True, runner: Runner = run) -> list[str]:
    """Returns what it did, one line per change; an empty list means nothing changed."""
    acts = plan.actions
    _writable_path("the home", str(plan.home.root))
    _writable_path("the executable", plan.bead)
    _writable_path("the home folder", str(plan.user_home))
    if plan.platform == "systemd":
        _exec_words(plan.bead)  # a path no unit can run is refused before anything is written
    parse_listen(plan.listen)  # loopback host and port only, on every platform: it goes into shell.sh and the units
    # The rc file is read before anything is written: one that cannot be read stops setup with nothing half done.
    rcf = _rc_target(plan.rc_file()) if rc else None
    rc_text = _rc_text(rcf) if rcf is not None else ""
    if rcf is not None and plan.rc_block() not in rc_text:
        _rc_writable(rcf, plan.shell_sh)
    plan.home.ensure()
    if write_default(plan.home):
        acts.append(f"wrote {plan.home.config} (0600)")
    changed = []
    socket_changed = moved = False
    if plan.socket_unit is not None:
        path = plan.unit_dir / plan.socket_unit
        held = _file_bytes(path)
        before = _listen_stream(held.decode("utf-8", "replace")) if held is not None else None
        text = plan.socket_template()
        if _write_if_changed(path, text):
            acts.append(f"wrote {path}")
            socket_changed = True
            # Only a new address closes the port for a moment (the socket listens again on it); any other change
            # to the unit applies when the socket next starts.
            moved = before is not None and before != _listen_stream(text)
    for svc in plan.services:
        path = plan.unit_dir / plan.unit_name(svc)
        if _write_if_changed(path, plan.template(svc)):
            acts.append(f"wrote {path}")
            changed.append(svc)
        if plan.platform == "launchd":
            # launchd opens the log file but does not create its folder.
            launchd_log(svc, plan.user_home).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    load_token(plan.home)
    shell = _filled(
        resources.files("bead.setup").joinpath("shell.sh").read_text(encoding="utf-8"),
        {
            "@LISTEN_ARG@": shlex.quote(client_address(plan.listen)),
            "@LISTEN@": client_address(plan.listen),
            "@TOKEN@": shlex.quote(str(plan.home.proxy_token)),
            "@PYTHON@": shlex.quote(python_of(plan.bead)),
        },
    )
    if _write_if_changed(plan.shell_sh, shell, 0o600, root=plan.home.root):
        acts.append(f"wrote {plan.shell_sh}")
    if rcf is not None:
        text = rc_text
        if plan.rc_block() not in text:
            text = _strip_block(text)
            # One line break before the block, which --uninstall takes away with it: the file's own bytes,
            # with or without a final line break, are what is left.
            _write_if_changed(
                rcf, text + ("\n" if text else "") + plan.rc_block(), mode=rcf.stat().st_mode & 0o777 if rcf.exists() else 0o644
            )
            acts.append(f"added the bead block to {rcf}")
    if load:
        _load(plan, changed, runner, socket_changed, moved)
    return acts


def _listen_stream(unit: str) -> str | None:
    return next((line.partition("=")[2].strip() for line in unit.splitlines() if line.startswith("ListenStream=")), None)


def _systemctl(runner: Runner, acts: list[str], *args: str) -> None:
    cmd = ["systemctl", "--user", *args]
    _must(runner(cmd), " ".join(cmd))
    acts.append(" ".join(cmd))


def _load(plan: Plan, changed: list[str], runner: Runner, socket_changed: bool = False, moved: bool = False) -> None:
    acts = plan.actions
    if plan.platform == "systemd":

        def state(query: str, unit: str) -> str:
            return runner(["systemctl", "--user", query, unit]).stdout.strip()

        if changed or socket_changed:
            _systemctl(runner, acts, "daemon-reload")
        start_proxy = False
        failed: BeadError | None = None
        sock = plan.socket_unit
        if sock is not None and (moved or state("is-enabled", sock) != "enabled" or state("is-active", sock) != "active"):
            # The port passes to the socket unit: a proxy that holds it now (installed before the socket unit, on the
            # old address, or started without the socket when it failed) stops first, and a socket on the old
            # address closes; the proxy starts again on the socket.
            proxy = plan.unit_name("proxy")
            try:
                if state("is-active", proxy) == "active":
                    start_proxy = True  # started again below whatever happens here
                    _systemctl(runner, acts, "stop", proxy)
                if moved and state("is-active", sock) == "active":
                    _systemctl(runner, acts, "stop", sock)
                _systemctl(runner, acts, "enable", "--now", sock)
            except BeadError as exc:
                host, port = parse_listen(plan.listen)
                holder = listener(port)
                failed = BeadError(
                    f"{exc.message}" + (f"; port {port} is held by {holder}" if holder else ""),
                    "stop what holds the port (`bead up` or `bead proxy` run by hand), or choose another port with "
                    "`proxy.listen` in config.yaml; then run `bead setup` again",
                )
        for svc in plan.services:
            unit = plan.unit_name(svc)
            try:
                if svc == "proxy" and (start_proxy or failed is not None):
                    # Started whatever happened to the socket: without it, the proxy binds the port itself.
                    _systemctl(runner, acts, "enable", "--now", unit)
                    continue
                if svc not in changed and state("is-enabled", unit) == "enabled":
                    continue
                restart = svc in changed and state("is-active", unit) == "active"
                _systemctl(runner, acts, "enable", "--now", unit)
                if restart:
                    _systemctl(runner, acts, "restart", unit)
            except BeadError as exc:
                failed = failed or exc  # the other services are still enabled
        if failed is not None:
            raise failed
    else:
        domain = f"gui/{os.getuid()}"
        for svc in plan.services:
            label = f"com.bead.{svc}"
            loaded = runner(["launchctl", "print", f"{domain}/{label}"]).returncode == 0
            if loaded and svc not in changed:
                continue
            runner(["launchctl", "bootout", f"{domain}/{label}"])  # fails harmlessly when not loaded
            path = plan.unit_dir / plan.unit_name(svc)
            _must(runner(["launchctl", "bootstrap", domain, str(path)]), f"launchctl bootstrap {domain} {path}")
            acts.append(f"launchctl bootstrap {domain} {path}")


def _must(result: subprocess.CompletedProcess, what: str) -> None:
    if result.returncode != 0:
        said = [line for line in (result.stderr or result.stdout or "").splitlines() if line.strip()]
        raise BeadError(
            f"`{what}` failed: {(said[-1] if said else 'no message').strip()[:300]}",
            "check that a user session manager runs (`systemctl --user status`), or use "
            "`bead setup --no-load` and start the services with `bead up`",
        )


def _strip_block(text: str, keep: Callable[[str], bool] = lambda line: False) -> str:
    """The rc file without bead's blocks, and the line break install put before one where that gives the file
    back as it was: at its end, or where a blank line would be left (never joining two of the person's lines)."""
    # The block rc_block writes (one line between the markers): a begin marker of the person's own
    # earlier in the file never takes their lines with it.
    # ``keep(line)``: a block whose line it takes stays (another home's, at an uninstall).
    block = re.compile(rf"{re.escape(RC_BEGIN)}\r?\n([^\r\n]*)\r?\n{re.escape(RC_END)}(?:\r?\n|$)")
    pos = 0
    while (m := block.search(text, pos)) is not None:
        start, end = m.start(), m.end()
        if keep(m.group(1)):
            pos = end
            continue
        before = text[:start]
        brk = 2 if before.endswith("\r\n") else 1
        # Not the line break of a block kept just above (another home's): its end marker keeps its line's end.
        if before.endswith("\n") and (end == len(text) or before.endswith("\n\n")) and not before[:-brk].endswith(RC_END):
            start -= brk
        text = text[:start] + text[end:]
        pos = start
    return text


def _small_text(path: Path) -> str | None:
    """A regular file's text (at most 1 MB, not through a link); None for anything else."""
    try:
        # Not through a link, and never waiting on a FIFO put there: opened so, then looked at as opened.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > 1024 * 1024:
            return None
        try:
            return f.read(1024 * 1024).decode("utf-8", errors="replace")
        except OSError:
            return None


def _unit_home(text: str) -> str | None:
    """The BEAD_HOME a systemd unit's ``Environment=`` line sets, read as systemd reads it (quoted or not, ``%%`` for
    ``%``, as this version or an earlier one wrote it); None where no line sets it."""
    for line in text.splitlines():
        if not line.startswith("Environment="):
            continue
        word = line[len("Environment=") :].strip()
        if len(word) >= 2 and word[0] == word[-1] == '"':
            word = re.sub(r"\\(.)", r"\1", word[1:-1])
        word = word.replace("%%", "%")
        if word.startswith("BEAD_HOME="):
            return word[len("BEAD_HOME=") :]
    return None


def _agent_home(text: str) -> str | None:
    """The BEAD_HOME a launchd agent's plist sets; None where it sets none (or cannot be read)."""
    import plistlib

    try:
        data = plistlib.loads(text.encode("utf-8"))
    except Exception:  # noqa: BLE001 - any damage: no home read from it
        return None
    env = data.get("EnvironmentVariables") if isinstance(data, dict) else None
    value = env.get("BEAD_HOME") if isinstance(env, dict) else None
    return value if isinstance(value, str) else None


def another_homes(plan: Plan) -> list[tuple[Path, str]]:
    """The installed units or agents that serve a bead home other than ``plan.home``, with that home."""
    out: list[tuple[Path, str]] = []
    mine = os.path.normpath(str(plan.home.root))
    for svc in SERVICES:
        path = plan.unit_dir / plan.unit_name(svc)
        text = _small_text(path)
        if text is None:
            continue
        home = _unit_home(text) if plan.platform == "systemd" else _agent_home(text)
        if home is not None and os.path.normpath(home) != mine:
            out.append((path, home))
    return out


def _blocks_home(block_line: str, plan: Plan) -> bool:
    """Whether an rc block's line (``[ -f X ] && . X``) sources this home's shell.sh, however it was quoted."""
    try:
        words = shlex.split(block_line)
    except ValueError:
        return False
    return os.path.normpath(str(plan.shell_sh)) in (os.path.normpath(w) for w in words if w.startswith("/"))


def uninstall(plan: Plan, runner: Runner = run) -> list[str]:
    """Stop and remove the units or agents, the rc block and shell.sh. Those of another home are not this home's to
    remove: `BEAD_HOME=/scratch bead setup --uninstall` (a trial home, a typo) took the real install's services and
    rc block away, and left its shell.sh (an outside attack); now nothing is removed and the error says so."""
    others = another_homes(plan)
    if others:
        path, home = others[0]
        raise BeadError(
            f"{path} serves another bead home ({home}), not {plan.home.root}: nothing was removed",
            f"to remove that install, run it with that home: BEAD_HOME={shlex.quote(home)} bead setup --uninstall",
        )
    acts = plan.actions
    # The rc files are read first: one that is not a regular file (a named pipe) is said and left, before any unit goes.
    rc_texts: list[tuple[Path, str]] = []
    for rc in (plan.user_home / ".bashrc", plan.user_home / ".zshrc"):
        rcf = rc
        try:
            rcf = _rc_target(rc, strict=False)
            text = _rc_text(rcf)
            if RC_BEGIN in text:
                _rc_writable(rcf, plan.shell_sh)
            rc_texts.append((rcf, text))
        except RcNotAFile:
            acts.append(f"left {rcf} as it is: not a regular file (remove the bead block from it yourself, if any)")
        except (BeadError, OSError) as exc:  # not writable, a link in a circle: said, and the rest goes on
            why = exc.message if isinstance(exc, BeadError) else (exc.strerror or str(exc))
            acts.append(f"left {rcf} as it is: {why} (remove the bead block from it yourself)")
    units = [(plan.unit_name(svc), f"gui/{os.getuid()}/com.bead.{svc}") for svc in SERVICES]
    if plan.platform == "systemd":
        # The socket first: while it listens, a request would start the proxy again after its service stopped.
        units.insert(0, ("bead-proxy.socket", ""))
    for name, label in units:
        path = plan.unit_dir / name
        if plan.platform == "systemd":
            if path.exists():
                runner(["systemctl", "--user", "disable", "--now", name])
                acts.append(f"systemctl --user disable --now {name}")
        else:
            if path.exists():
                runner(["launchctl", "bootout", label])
                acts.append(f"launchctl bootout {label}")
        if path.exists():
            path.unlink()
            acts.append(f"removed {path}")
    if plan.platform == "systemd" and any(a.startswith("removed") for a in acts):
        runner(["systemctl", "--user", "daemon-reload"])
    for rcf, text in rc_texts:
        if RC_BEGIN in text:
            kept = _strip_block(text, keep=lambda line: not _blocks_home(line, plan))
            if kept != text:
                _write_if_changed(rcf, kept, mode=rcf.stat().st_mode & 0o777)
                acts.append(f"removed the bead block from {rcf}")
            if RC_BEGIN in kept:
                acts.append(f"left the bead block of another home in {rcf}")
    if plan.shell_sh.exists():
        plan.shell_sh.unlink()
        acts.append(f"removed {plan.shell_sh}")
    return acts


def python_of(bead: str) -> str:
    """The Python the bead executable runs on (its ``#!`` line, as pip writes it), for shell.sh's check: the one
    that ran setup may be another (a throwaway venv's), and once it was gone `claude` never used the proxy while
    the services, which run the executable, were fine. This process's own where the line names none."""
    try:
        with open(bead, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return sys.executable
    words = first[2:].decode("utf-8", "surrogateescape").split() if first.startswith(b"#!") else []
    if len(words) == 1 and os.path.isabs(words[0]) and "python" in os.path.basename(words[0]) and os.access(words[0], os.X_OK):
        return words[0]
    # pip writes a /bin/sh trampoline instead where the interpreter's path holds a space or is long: the venv's own
    # python beside the executable is the one it names.
    for name in ("python", "python3"):
        beside = os.path.join(os.path.dirname(bead), name)
        if os.access(beside, os.X_OK):
            return beside
    return sys.executable


def which_bead() -> str:
    """The bead executable this process runs from."""
    exe = shutil.which("bead")
    argv0 = Path(sys.argv[0])
    if argv0.name == "bead" and argv0.exists():
        return str(argv0.absolute())
    if exe:
        return exe
    candidate = Path(sys.executable).parent / "bead"
    if candidate.exists():
        return str(candidate)
    raise BeadError("cannot find the `bead` executable", "install bead with `sh setup_scripts/install.sh`, then run `bead setup`")
