"""Every file operation below the home, without following a link.

A path below the home is reached one component at a time from the home's
own folder, each step an ``open(..., O_NOFOLLOW | O_DIRECTORY)`` relative to
the folder before it (``dir_fd``), and the file itself is opened, renamed or
unlinked relative to its folder's descriptor. A symbolic link anywhere below
the home therefore stops the operation with ``UnsafePath`` instead of being
followed, for reads, writes, renames and deletes alike, and nothing can swap
a folder for a link between a check and the use. The home folder itself may
be a link (a person may keep ``~/.bead`` on another disk); only what is below
it is never followed.

Folders bead creates are 0700 and files 0600 whatever the umask (``mkdir``
and ``open`` modes are masked by it, and pathlib's ``parents=True`` creates
the parents 0777 & ~umask).

Temp files are named ``.<name>.<pid>-<random>.tmp``: a temp file whose
writer is gone is an orphan (``orphan_temps``), which `bead status` reports
and ``bead status --fix`` or ``bead reindex`` removes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import BeadError

DIR_MODE = 0o700
FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# ELOOP on Linux and macOS, EMLINK on FreeBSD: the last component was a link.
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK}
LINK_FIX = (
    "bead never reads, writes or deletes through a symbolic link below its home: replace the link "
    "with the real folder or file (move the target's contents into place), or remove the link; "
    "then `bead status` lists any other"
)
# .<name>.<pid>-<8 hex>.tmp (ours); .<name>.<8 chars>.tmp (tempfile.mkstemp, older bead)
_TEMP = re.compile(r"\.(.+)\.(?:(\d{1,10})-[0-9a-f]{8}|[a-z0-9_]{8})\.tmp")
LEGACY_TEMP_AGE_S = 60.0


class UnsafePath(BeadError):
    """A path below the home that bead will not follow: a link, or a file where a folder should be."""


class NotAFile(UnsafePath):
    """A FIFO, socket or device where bead reads a file: reading it could wait for ever."""


class HardLink(UnsafePath):
    """A regular file below the home with more than one name: another name of a file that may live outside it."""


def _refuse(path: Path, what: str) -> UnsafePath:
    return UnsafePath(f"refusing to follow {path}: it is {what}", LINK_FIX)


def _parts(root: Path, path: Path) -> tuple[str, ...]:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise UnsafePath(
            f"refusing {path}: it is outside the bead home {root}", "bead only reads and writes below its home"
        ) from None
    if any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"refusing {path}: it would leave the bead home", "bead only reads and writes below its home")
    return parts


def _describe(dir_fd: int, name: str) -> str:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return "not a folder"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    return "not a folder"


@contextlib.contextmanager
def opened_dir(root: Path, folder: Path, create: bool = False) -> Iterator[int]:
    """A descriptor of ``folder``, reached from ``root`` without following a link.

    Missing folders (``root`` too) are created 0700 when ``create``; otherwise FileNotFoundError.
    """
    parts = _parts(root, folder)
    try:
        fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except FileNotFoundError:
        if not create:
            raise
        os.makedirs(root, DIR_MODE, exist_ok=True)
        os.chmod(root, DIR_MODE)
        fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for i, part in enumerate(parts):
            flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
            try:
                nfd = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                try:
                    nfd = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in _LINK_ERRNOS or exc.errno == errno.ENOTDIR:
                        raise _refuse(root.joinpath(*parts[: i + 1]), _describe(fd, part)) from None
                    raise
                st = os.fstat(nfd)
                if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != DIR_MODE:
                    os.fchmod(nfd, DIR_MODE)
            except OSError as exc:
                if exc.errno in _LINK_ERRNOS or exc.errno == errno.ENOTDIR:
                    # the path so far, for the message only (built here: opening a folder is the hot path)
                    raise _refuse(root.joinpath(*parts[: i + 1]), _describe(fd, part)) from None
                raise
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def ensure_dir(path: Path, *, root: Path) -> Path:
    """A folder below the home: created 0700 if missing (parents too), never a link."""
    with opened_dir(root, path, create=True):
        return path


def check(path: Path, *, root: Path) -> None:
    """Raise UnsafePath when a folder on the way to ``path`` (or ``path``) is a link; missing is fine."""
    try:
        with opened_dir(root, path.parent):
            pass
    except FileNotFoundError:
        return
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, "a symbolic link")


def open_dir_at(dir_fd: int, name: str) -> int:
    """A descriptor of the folder ``name`` in the folder ``dir_fd``, never through a link (UnsafePath: a link or no
    folder; FileNotFoundError: nothing there)."""
    try:
        return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS or exc.errno == errno.ENOTDIR:
            raise _refuse(Path(name), _describe(dir_fd, name)) from None
        raise


def open_at(dir_fd: int, path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """``os.open`` of ``path.name`` in the folder ``dir_fd``, never through a link (0600 when created)."""
    return _open_at(dir_fd, path, flags, mode)


def _open_at(dir_fd: int, path: Path, flags: int, mode: int = FILE_MODE, pipe_ok: bool = False) -> int:
    """``pipe_ok``: a FIFO someone reads may be written (a trace path the person chose: their own named pipe)."""
    writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
    try:
        # Until it is known what file it is: non-blocking (a FIFO left there would block the open) and not
        # truncated (another user's file would lose its bytes before bead refused it).
        fd = os.open(path.name, (flags & ~os.O_TRUNC) | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            raise _refuse(path, "a symbolic link") from None
        if writing and exc.errno == errno.ENXIO:  # a FIFO no one reads (or a socket): "No such device or address"
            raise _not_writable(path) from None
        raise
    st = os.fstat(fd)
    if not writing and stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not writing and not stat.S_ISREG(st.st_mode):
        # A FIFO (or a socket, a device) where a file should be: reading it would wait for whoever holds its other
        # end, and every reader of the key (the indexer inside the index's write lock) with it.
        os.close(fd)
        raise NotAFile(f"refusing to read {path}: it is not a regular file (a FIFO, a socket or a device)", f"remove {path}")
    os.set_blocking(fd, True)
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        # A hard link is the other file itself (a ~/.bashrc linked in as a raw log would take captured text): bead
        # makes none, so one is someone's doing.
        os.close(fd)
        raise HardLink(
            f"refusing to use {path}: it is a hard link, another name of a file that may live outside bead's home "
            f"({st.st_nlink} names)",
            "bead makes no hard links: `bead status --fix` gives every hard-linked file of the home a copy of its own "
            f"(or remove {path})",
        )
    if writing:
        # Another user's file, FIFO or socket (made first at a shared path: a trace in /tmp); a device such as
        # /dev/null is the system's and takes what it is given.
        if st.st_uid != os.getuid() and not stat.S_ISCHR(st.st_mode):
            os.close(fd)
            raise UnsafePath(
                f"refusing to write {path}: it is another user's file (uid {st.st_uid})",
                "remove it, or choose a path of your own",
            )
        if (stat.S_ISFIFO(st.st_mode) and not pipe_ok) or stat.S_ISSOCK(st.st_mode):
            # What bead appends it reads back (the audit log, a trace, a raw log): lines sent to whoever holds a
            # FIFO's other end would be lost to bead, and its reads refuse the FIFO anyway.
            os.close(fd)
            raise _not_writable(path)
        if flags & os.O_CREAT and stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != mode:
            os.fchmod(fd, mode)
        if flags & os.O_TRUNC and stat.S_ISREG(st.st_mode):
            os.ftruncate(fd, 0)
    return fd


def _not_writable(path: Path) -> NotAFile:
    return NotAFile(
        f"refusing to write {path}: it is a FIFO or a socket, not a regular file", f"remove {path}; bead makes it again"
    )


def open_file(path: Path, flags: int, mode: int = FILE_MODE, *, root: Path) -> int:
    """``os.open`` of a file below ``root`` (O_NOFOLLOW on every step); with O_CREAT its folders are created."""
    with opened_dir(root, path.parent, create=bool(flags & os.O_CREAT)) as d:
        return _open_at(d, path, flags, mode)


def read_at(dir_fd: int, path: Path, limit: int | None = None) -> bytes:
    """The bytes of ``path.name`` in the folder ``dir_fd`` (never through a link); ``limit``: a file larger than
    that many bytes is refused (TooLarge) before any of it is read."""
    fd = _open_at(dir_fd, path, os.O_RDONLY)
    try:
        if limit is not None and (size := os.fstat(fd).st_size) > limit:
            raise TooLarge(f"{path} is {size} bytes, more than the {limit} bead reads of such a file")
        data = _read_all(fd, limit)
        if limit is not None and len(data) > limit:  # it grew while read: never more than the limit held
            raise TooLarge(f"{path} grew past the {limit} bytes bead reads of such a file while it was read")
        return data
    finally:
        os.close(fd)


class TooLarge(OSError):
    """A file larger than its reader takes."""


def _read_all(fd: int, limit: int | None = None) -> bytes:
    """Every byte to the end, or (``limit``) up to one byte past it, so a file that grows while read is known to."""
    chunks: list[bytes] = []
    held = 0
    while limit is None or held <= limit:
        b = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit + 1 - held))
        if not b:
            break
        chunks.append(b)
        held += len(b)
    return b"".join(chunks)


def read_bytes(path: Path, *, root: Path, limit: int | None = None) -> bytes:
    """``path``'s bytes, never through a link; ``limit``: a larger file is refused (TooLarge) unread."""
    with opened_dir(root, path.parent) as d:
        return read_at(d, path, limit)


def read_with_stat(path: Path, *, root: Path, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and the stat of the very file they were read from (its mode and owner, for a
    caller that refuses a file others can read), never through a link; ``limit`` as ``read_at``'s."""
    with opened_dir(root, path.parent) as d:
        fd = _open_at(d, path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            if limit is not None and st.st_size > limit:
                raise TooLarge(f"{path} is {st.st_size} bytes, more than the {limit} bead reads of such a file")
            data = _read_all(fd, limit)
            if limit is not None and len(data) > limit:
                raise TooLarge(f"{path} grew past the {limit} bytes bead reads of such a file while it was read")
            return data, st
        finally:
            os.close(fd)


def read_text(path: Path, *, root: Path, errors: str = "strict", limit: int | None = None) -> str:
    return read_bytes(path, root=root, limit=limit).decode("utf-8", errors=errors)


def temp_name(name: str) -> str:
    """The name of a temp file that becomes ``name`` (``.NAME.PID-HEX.tmp``, as ``orphan_temps`` reads it)."""
    return f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``: a short write (a signal, a file size limit) is written on, or raises."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_at(
    dir_fd: int, path: Path, data: bytes, mode: int = FILE_MODE, durable: bool = True, sync_dir: bool | None = None
) -> None:
    """Replace ``path.name`` in the folder ``dir_fd`` atomically: temp file, fsync, rename, fsync of the folder.

    The rename replaces a link of that name rather than following it.
    ``sync_dir=False`` keeps the data's fsync but not the folder's: after a
    crash the file is the old one or the new one, whole, and the rename may
    not have happened (for changes a later write repairs anyway).
    """
    tmp = temp_name(path.name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(fd, mode)
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    if durable if sync_dir is None else sync_dir:
        os.fsync(dir_fd)


def atomic_write(path: Path, data: bytes, mode: int = FILE_MODE, *, root: Path, durable: bool = True) -> None:
    """Write ``data`` to ``path`` (below ``root``) so that a reader sees the old or the new file."""
    with opened_dir(root, path.parent, create=True) as d:
        write_at(d, path, data, mode, durable)


def unlink(path: Path, *, root: Path) -> bool:
    """Remove ``path`` (a link is removed itself, never its target); False when it was not there."""
    try:
        with opened_dir(root, path.parent) as d:
            os.unlink(path.name, dir_fd=d)
        return True
    except FileNotFoundError:
        return False


def prune_empty(folder: Path, *, root: Path, stop: Path) -> None:
    """Remove ``folder`` and its parents up to (not including) ``stop`` while they are empty."""
    while folder != stop and folder.is_relative_to(stop):
        try:
            with opened_dir(root, folder.parent) as d:
                os.rmdir(folder.name, dir_fd=d)
        except OSError:
            return
        folder = folder.parent


def listdir(folder: Path, *, root: Path) -> list[str]:
    """The names in ``folder``; [] when it does not exist."""
    try:
        with opened_dir(root, folder) as d:
            return os.listdir(d)
    except FileNotFoundError:
        return []


def walk(
    top: Path,
    *,
    root: Path,
    links: list[Path] | None = None,
    skip_hidden_dirs: bool = True,
    others: list[Path] | None = None,
    unreadable: list[Path] | None = None,
) -> Iterator[tuple[Path, list[str], list[str]]]:
    """(folder, sub-folders, regular files) below ``top``, sorted, never through a link.

    Links found on the way (and ``top`` itself, if it or a folder above it is
    one) are appended to ``links`` when given, and skipped; so are entries
    that are none of the three (a FIFO, a socket, a device) to ``others``, and
    folders the process may not open or list (their mode) to ``unreadable``.
    """
    with contextlib.ExitStack() as stack:
        try:
            fd = stack.enter_context(opened_dir(root, top))
        except FileNotFoundError:
            return
        except UnsafePath:
            if links is not None:
                links.append(top)
            return
        yield from _walk_fd(fd, top, links, skip_hidden_dirs, others=others, unreadable=unreadable)


# How deep ``walk`` goes below its top: bead's own trees are a few folders deep (a key has at most three segments,
# a raw log's folder is its day's); a tree a thousand folders deep (someone's doing) ran Python out of stack.
MAX_WALK_DEPTH = 32


def _walk_fd(
    fd: int,
    here: Path,
    links: list[Path] | None,
    skip_hidden_dirs: bool,
    depth: int = 0,
    others: list[Path] | None = None,
    unreadable: list[Path] | None = None,
) -> Iterator[tuple[Path, list[str], list[str]]]:
    dirs: list[str] = []
    regular: list[str] = []
    try:
        it = os.scandir(fd)
    except PermissionError:
        if unreadable is not None:
            unreadable.append(here)
        return
    with it:
        for entry in it:
            try:
                if entry.is_symlink():
                    if links is not None:
                        links.append(here / entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    if not (skip_hidden_dirs and entry.name.startswith(".")):
                        dirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    regular.append(entry.name)
                elif others is not None:
                    others.append(here / entry.name)
            except OSError:
                continue
    dirs.sort()
    regular.sort()
    yield here, dirs, regular
    if depth >= MAX_WALK_DEPTH:
        return
    for name in dirs:
        try:
            sub = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
        except PermissionError:
            if unreadable is not None:
                unreadable.append(here / name)  # its mode: said, never passed over in silence
            continue
        except OSError:
            continue  # replaced by a link or removed since the listing
        try:
            yield from _walk_fd(sub, here / name, links, skip_hidden_dirs, depth + 1, others, unreadable)
        finally:
            os.close(sub)


# ----- append-only files that forget may rewrite ------------------------------
def append_line(path: Path, line: str, mode: int = FILE_MODE, *, root: Path, pipe_ok: bool = False) -> None:
    """Append one line with O_APPEND (one write, so lines never interleave).

    The append holds a shared flock on the file; ``rewrite_lines`` holds it
    exclusively, and an appender that waited while the file was replaced
    appends to the new file, so a rewrite never loses a line.
    """
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    with opened_dir(root, path.parent, create=True) as d:
        while True:
            fd = _open_at(d, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode, pipe_ok)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                try:
                    now = os.stat(path.name, dir_fd=d, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                mine = os.fstat(fd)
                if (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
                    continue  # replaced while we waited: append to the new file
                # A file cut short (a full disk, a crash mid-write) ends inside a line: this one starts on its own,
                # or both records would be one unreadable line (a conversation's cue record lost: its cache broken).
                if stat.S_ISREG(mine.st_mode) and mine.st_size and not _ends_in_newline(d, path, mine):
                    data = b"\n" + data
                write_all(fd, data)  # all of it, or an error: a short write was dropped silently
                return
            finally:
                os.close(fd)


def _ends_in_newline(dir_fd: int, path: Path, st: os.stat_result) -> bool:
    """Whether the file ``st`` describes (``path.name`` in ``dir_fd``, opened for appending) ends in a line break;
    read through a descriptor of its own (the append's is write-only), the same file or none."""
    try:
        fd = os.open(path.name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return True
    try:
        same = os.fstat(fd)
        if (same.st_dev, same.st_ino) != (st.st_dev, st.st_ino):
            return True
        return os.pread(fd, 1, st.st_size - 1) == b"\n"
    finally:
        os.close(fd)


def lines_of(text: str) -> list[str]:
    """The lines of a JSON-lines file: split at newlines only. (str.splitlines also splits at U+2028, U+2029, U+0085
    and other separators, which a JSON string written with ensure_ascii=False holds raw: it would cut a record in
    two, and a forget's rewrite would keep the pieces.)"""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def rewrite_lines(path: Path, edit: Callable[[str], str | None], *, root: Path, keep_mode: bool = False) -> int:
    """Rewrite a line file through ``edit`` (a new line, or None to drop it); the number of lines changed.

    Holds the file's flock exclusively, so concurrent ``append_line`` calls
    wait and then land in the new file.
    """
    with contextlib.ExitStack() as stack:
        try:
            d = stack.enter_context(opened_dir(root, path.parent))
            fd = _open_at(d, path, os.O_RDONLY)
        except FileNotFoundError:
            return 0
        stack.callback(os.close, fd)
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            # The path may come from a record anyone could have written (a trace named in proxy.runtime.jsonl): a
            # rewrite replaces the file, so another user's is never rewritten (an append refuses it too).
            raise UnsafePath(
                f"refusing to rewrite {path}: it is another user's file",
                "remove its name from what named it (proxy.runtime.jsonl, a setting)",
            )
        fcntl.flock(fd, fcntl.LOCK_EX)
        out: list[str] = []
        changed = 0
        for line in lines_of(_read_all(fd).decode("utf-8", errors="replace")):
            new = edit(line)
            if new != line:
                changed += 1
            if new is not None:
                out.append(new + "\n")
        if changed:
            # ``keep_mode``: a file the person made (a trace, 0644) keeps its permissions, and no more than rw; bead's
            # own files go back to FILE_MODE.
            write_at(d, path, "".join(out).encode("utf-8"), mode=stat.S_IMODE(st.st_mode) & 0o666 if keep_mode else FILE_MODE)
        return changed


# ----- temp files left by a killed writer --------------------------------------
def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if pid <= 0:
        return False  # no process: 0 and -1 name a group or every process to kill(2)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # a pid past C's int (a planted name's ten digits): none lives
        return False
    except PermissionError:
        return True
    return True


def temp_of(name: str) -> str | None:
    """The file a temp file of ours named ``name`` (with its writer's pid: ``.SKILL.md.123-0badc0de.tmp``) was to
    become (``SKILL.md``); None for any other name."""
    m = _TEMP.fullmatch(name)
    return m.group(1) if m and m.group(2) else None


def is_orphan_temp(name: str, mtime: float, now: float | None = None) -> bool:
    """A temp file of ours whose writer is gone (or, for an older name without a pid, older than a minute)."""
    m = _TEMP.fullmatch(name)
    if not m:
        return False
    if m.group(2):
        return not _alive(int(m.group(2)))
    return (now if now is not None else time.time()) - mtime > LEGACY_TEMP_AGE_S


def hard_links(top: Path, *, root: Path) -> list[Path]:
    """Regular files below ``top`` with more than one name (bead refuses them: ``_open_at``)."""
    out = []
    for folder, _dirs, names in walk(top, root=root, skip_hidden_dirs=False):
        for name in names:
            try:
                st = os.lstat(folder / name)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                out.append(folder / name)
    return out


def unshare(path: Path, *, root: Path) -> bool:
    """Give the hard-linked regular file ``path`` (below ``root``, owned by this user) a file of its own with the same
    bytes and mode, the other name keeping the old file. False when it is no longer a hard link, or it changed while
    it was copied (a writer under another lock: its write is kept, the link reported again). Bytes are copied in
    the kernel, a chunk at a time."""
    with opened_dir(root, path.parent) as d:
        fd = os.open(path.name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=d)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2 or st.st_uid != os.getuid():
                return False
            tmp = temp_name(path.name)
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, stat.S_IMODE(st.st_mode), dir_fd=d)
            try:
                offset = 0
                while offset < st.st_size:
                    n = os.copy_file_range(fd, out, st.st_size - offset, offset, offset)
                    if n == 0:
                        break
                    offset += n
                os.fsync(out)
            finally:
                os.close(out)
            now = os.stat(path.name, dir_fd=d, follow_symlinks=False)
            if (now.st_ino, now.st_size, now.st_mtime_ns) != (st.st_ino, st.st_size, st.st_mtime_ns) or offset != st.st_size:
                os.unlink(tmp, dir_fd=d)
                return False
            os.rename(tmp, path.name, src_dir_fd=d, dst_dir_fd=d)
        finally:
            os.close(fd)
    return True


def orphan_temps(top: Path, *, root: Path, any_writer: bool = False) -> list[Path]:
    """Temp files below ``top`` whose writer is gone (they may hold a value: report and remove them). With
    ``any_writer`` (the caller holds the lock every writer below ``top`` holds while its temp file exists), every
    temp file of ours: its writer's pid may be alive again as another process (a reboot, a pid namespace), and the
    file was kept for good (an outside attack)."""
    out = []
    now = time.time()
    for folder, _dirs, names in walk(top, root=root, skip_hidden_dirs=False):
        for name in names:
            if not name.endswith(".tmp"):
                continue
            p = folder / name
            try:
                mtime = os.lstat(p).st_mtime
            except OSError:
                continue
            if (any_writer and _TEMP.fullmatch(name)) or is_orphan_temp(name, mtime, now):
                out.append(p)
    return out
