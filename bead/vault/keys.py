"""The vault's age key pair, and the passphrase that guards its private half.

``bead vault init`` makes the pair. The public recipient goes to
``vault/recipient.txt``: sealing needs only it, so a secret write asks for no
passphrase. The private identity goes to ``vault/identity.age``, an age file
encrypted with the person's passphrase (scrypt, through pyrage), 0600; bead
refuses to read one that others could read. Its plain text is an ordinary age
identity file (``# public key: ...`` and the key line), so the age command
line tool reads it too: ``age -d -i vault/identity.age FILE`` asks for the
passphrase and decrypts a sealed version.

Two kinds of key:

- ``pq``: the hybrid post-quantum key of age 1.3 (ML-KEM-768 + X25519,
  ``age1pq1...``). pyrage has no native support for it, so bead reaches it
  through age's plugin protocol: ``age-plugin-pq`` (shipped with age 1.3) must
  be on PATH to seal or read, and ``age-keygen -pq`` (age 1.3) makes the key.
- ``x25519``: age's classic key, native in pyrage, used when those tools are
  missing. A vault keeps the kind it was made with: an X25519 vault keeps
  working when age-plugin-pq turns up later, and a hybrid vault needs the
  plugin for as long as it exists.

pyrage is imported inside the functions that need it (``import bead.cli``
stays light), and its absence is a BeadError that names the fix.

Python cannot wipe a ``str``: bead keeps the passphrase and the decrypted
identity in local variables only, never logs or stores them, and lets them
go when the command ends.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .. import files as safe
from ..errors import BeadError, RefusedWrite
from ..paths import Home
from ..store.audit import iso
from . import bech32

log = logging.getLogger("bead.vault")

MIN_PASSPHRASE_CHARS = 12
PQ_PLUGIN = "age-plugin-pq"
KEYGEN = "age-keygen"
PQ_NAME = "pq"  # the plugin's name in age's plugin protocol
PQ_RECIPIENT_PREFIX = "age1pq1"
PQ_IDENTITY_HRP = "age-secret-key-pq-"  # age-keygen -pq writes this (native in age 1.3)
PQ_PLUGIN_IDENTITY_HRP = "age-plugin-pq-"  # the same bytes, as the plugin protocol takes them
X25519_IDENTITY_PREFIX = "AGE-SECRET-KEY-1"
KEYGEN_TIMEOUT_S = 30
LABELS = {"none": "none", "x25519": "X25519", "pq": "hybrid post-quantum (age-plugin-pq)"}
LOST_PASSPHRASE = "Keep this passphrase safe: bead cannot recover it. If you lose it, every sealed fact is lost for good."
PQ_FIX = "install age 1.3 or later, which ships age-plugin-pq, and put age-plugin-pq on PATH (https://github.com/FiloSottile/age)"
WhichFn = Callable[[str], str | None]


class VaultMissing(RefusedWrite):
    """No vault: a secret has nowhere to go but the disk in clear, so it is refused."""

    def __init__(self, home: Home):
        super().__init__(
            f"there is no vault at {home.vault}",
            "run `bead vault init` to create it (it asks for a passphrase of 12 or more characters)",
        )


class NotDecrypted(BeadError):
    """One age file did not decrypt with the vault's key: sealed to another key, damaged, or not an age file."""


class WrongPassphrase(BeadError):
    def __init__(self) -> None:
        super().__init__(
            "wrong passphrase: the vault's identity did not decrypt with it",
            "try again; if the passphrase is lost, the sealed facts cannot be recovered",
        )


def pyrage() -> Any:
    """The pyrage module, or a BeadError that says how to get it."""
    try:
        import pyrage as mod
    except ImportError:
        raise BeadError(
            "the vault needs the pyrage package (age encryption), which is not installed here",
            "install it into bead's environment (`pip install pyrage`); where pyrage publishes no wheel "
            "(Linux other than glibc x86_64/aarch64, BSDs) pip builds it from source and needs a Rust "
            "toolchain (https://rustup.rs)",
        ) from None
    return mod


# ----- what is there ---------------------------------------------------------
@dataclass(frozen=True)
class VaultInfo:
    kind: str  # none | x25519 | pq | unknown
    recipient: str | None  # the public key, as recipient.txt holds it
    plugin: str | None  # where age-plugin-pq is on PATH, if it is
    problems: tuple[tuple[str, str], ...] = field(default=())  # (problem, fix)

    @property
    def label(self) -> str:
        return LABELS.get(self.kind, self.kind)

    @property
    def exists(self) -> bool:
        return self.kind != "none"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "label": self.label,
            "recipient": self.recipient,
            "age_plugin_pq": self.plugin,
            "problems": [{"problem": p, "fix": f} for p, f in self.problems],
        }


def recipient_kind(text: str) -> str:
    """x25519 or pq for a recipient string; unknown for anything else."""
    if text.startswith(PQ_RECIPIENT_PREFIX):
        return "pq"
    if text.startswith("age1") and len(text) == 62:
        return "x25519"
    return "unknown"


def recipient_kind_of(home: Home) -> str:
    """The kind of the vault's key as recipient.txt tells it; none when there is no such file."""
    try:
        text = safe.read_text(home.vault_recipient, root=home.root, errors="replace", limit=KEY_FILE_MAX_BYTES)
    except (OSError, safe.UnsafePath):
        return "none"
    return recipient_kind(next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), ""))


def _exists(home: Home, path: Any) -> bool:
    try:
        safe.check(path, root=home.root)
    except safe.UnsafePath:
        return True  # a link: something is there, and every use of it refuses
    return os.path.lexists(path)


def loose_mode(st: os.stat_result) -> str | None:
    """Why a file's mode or owner makes it unfit to hold the vault's private key; None when it is fit."""
    if st.st_uid != os.getuid():
        return f"it belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        return f"its mode is {mode:04o}, so others can read or change it (bead needs 0600)"
    return None


def info(home: Home, which: WhichFn = shutil.which) -> VaultInfo:
    """The vault's kind and what is wrong with it, from its files alone (no passphrase, no pyrage)."""
    plugin = which(PQ_PLUGIN)
    problems: list[tuple[str, str]] = []
    has_identity = _exists(home, home.vault_identity)
    try:
        text = safe.read_text(home.vault_recipient, root=home.root, errors="replace", limit=KEY_FILE_MAX_BYTES)
    except FileNotFoundError:
        if has_identity:
            problems.append(
                (
                    f"{home.vault_identity} exists without {home.vault_recipient} (an interrupted `bead vault init`)",
                    f"if nothing is sealed yet, remove {home.vault_identity} and run `bead vault init` again",
                )
            )
            return VaultInfo("unknown", None, plugin, tuple(problems))
        return VaultInfo("none", None, plugin)
    except (OSError, safe.UnsafePath) as exc:
        return VaultInfo(
            "unknown",
            None,
            plugin,
            ((f"{home.vault_recipient} cannot be read ({exc})", "replace it with the real file (bead never follows a link)"),),
        )
    recipient = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    kind = recipient_kind(recipient)
    if kind == "unknown":
        problems.append(
            (
                f"{home.vault_recipient} holds no age recipient bead knows",
                "restore the file from the `# public key:` line inside the identity",
            )
        )
    if kind == "pq" and not plugin:
        problems.append(
            ("the vault's key is hybrid post-quantum, but age-plugin-pq is not on PATH: nothing can be sealed or read", PQ_FIX)
        )
    if not has_identity:
        problems.append(
            (
                f"{home.vault_identity} is missing: sealed facts cannot be read",
                "restore it from a backup; without it the sealed facts are lost",
            )
        )
    else:
        try:
            _data, st = safe.read_with_stat(home.vault_identity, root=home.root, limit=KEY_FILE_MAX_BYTES)
            why = loose_mode(st) if stat.S_ISREG(st.st_mode) else "it is not a regular file"
        except (OSError, safe.UnsafePath) as exc:
            why = str(exc)
        if why:
            problems.append(
                (
                    f"bead refuses to use {home.vault_identity}: {why}",
                    f"run `chmod 600 {shlex.quote(str(home.vault_identity))}` (as its owner); if others could read it, they "
                    "may have a copy of the encrypted key",
                )
            )
    return VaultInfo(kind, recipient or None, plugin, tuple(problems))


# ----- the passphrase ----------------------------------------------------------
def check_passphrase(passphrase: str) -> str:
    if len(passphrase) < MIN_PASSPHRASE_CHARS:
        raise BeadError(
            f"the passphrase is {len(passphrase)} characters long; the vault needs {MIN_PASSPHRASE_CHARS} or more",
            "choose a longer one: a few unrelated words are easy to remember and hard to guess",
        )
    return passphrase


# ----- making the key pair ------------------------------------------------------
class _Callbacks:
    """What age's plugin protocol may ask of bead. age-plugin-pq asks nothing; a message is logged."""

    def display_message(self, message: str) -> None:
        log.info("age plugin: %s", message)

    def confirm(self, message: str, yes_string: str, no_string: str | None) -> bool | None:
        return None

    def request_public_string(self, description: str) -> str | None:
        return None

    def request_passphrase(self, description: str) -> str | None:
        return None


class _NoHybridKeygen(Exception):
    """age-keygen is missing or cannot make hybrid keys (older than age 1.3)."""


def _x25519_identity(now: datetime) -> tuple[str, str]:
    ident = pyrage().x25519.Identity.generate()
    recipient = str(ident.to_public())
    return f"# created: {iso(now)}\n# public key: {recipient}\n{ident}\n", recipient


def _hybrid_identity(keygen: str) -> tuple[str, str]:
    """``age-keygen -pq``: (identity file text, recipient). The key travels through a pipe, never a file."""
    try:
        p = subprocess.run([keygen, "-pq"], capture_output=True, text=True, timeout=KEYGEN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _NoHybridKeygen(str(exc)) from None
    if p.returncode != 0:
        raise _NoHybridKeygen((p.stderr.strip().splitlines() or [f"exit code {p.returncode}"])[0])
    recipient = next(
        (line.split(":", 1)[1].strip() for line in p.stdout.splitlines() if line.lower().startswith("# public key:")), ""
    )
    identity = next(
        (line.strip() for line in p.stdout.splitlines() if line.strip().upper().startswith(PQ_IDENTITY_HRP.upper() + "1")), ""
    )
    if recipient_kind(recipient) != "pq" or not identity:
        raise _NoHybridKeygen("its output holds no hybrid post-quantum key")
    _plugin_identity_string(identity)  # parses, or ValueError
    return p.stdout if p.stdout.endswith("\n") else p.stdout + "\n", recipient


@dataclass(frozen=True)
class Created:
    kind: str
    recipient: str
    note: str | None = None  # why the kind is not the one asked for or expected

    @property
    def label(self) -> str:
        return LABELS[self.kind]


def init(
    home: Home,
    passphrase: str,
    kind: str = "auto",
    which: WhichFn = shutil.which,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Created:
    """Make the vault's key pair: hybrid post-quantum when age-plugin-pq and an age-keygen that makes hybrid
    keys are on PATH (``kind="auto"``), else X25519; ``kind`` "pq" or "x25519" insists on one."""
    check_passphrase(passphrase)
    if kind not in ("auto", "pq", "x25519"):
        raise BeadError(f"kind {kind!r} is not one of auto, pq, x25519", "use --kind auto, pq or x25519")
    if _exists(home, home.vault_recipient) or _exists(home, home.vault_identity):
        raise BeadError(
            f"a vault already exists at {home.vault}",
            "`bead vault status` shows it; a second key pair would strand what the first one sealed",
        )
    mod = pyrage()
    note = None
    text = recipient = ""
    plugin, keygen = which(PQ_PLUGIN), which(KEYGEN)
    if kind in ("auto", "pq"):
        why = None if plugin and keygen else "age-plugin-pq is not on PATH" if not plugin else "age-keygen is not on PATH"
        if why is None:
            try:
                text, recipient = _hybrid_identity(str(keygen))
            except (_NoHybridKeygen, ValueError) as exc:
                why = f"{keygen} cannot make a hybrid key ({exc}); age 1.3 or later can"
        if why and kind == "pq":
            raise BeadError(f"cannot make a hybrid post-quantum key: {why}", PQ_FIX)
        if why and plugin:
            note = f"age-plugin-pq is on PATH, but {why}: made an X25519 key instead"
    made = "pq" if recipient else "x25519"
    if not recipient:
        text, recipient = _x25519_identity(clock())
    sealed_identity = mod.passphrase.encrypt(text.encode("utf-8"), passphrase)
    del text
    # The identity first: recipient.txt is what says a vault exists, so it comes last.
    safe.atomic_write(home.vault_identity, sealed_identity, root=home.root)
    safe.atomic_write(home.vault_recipient, f"{recipient}\n".encode(), root=home.root)
    return Created(made, recipient, note)


# ----- sealing (the public key) and reading (the private key) --------------------
def _plugin_missing(home_kind: str) -> BeadError:
    return BeadError(f"the vault's key is {LABELS[home_kind]}, and age-plugin-pq is not on PATH", PQ_FIX)


def recipient(home: Home, which: WhichFn = shutil.which) -> Any:
    """The pyrage recipient to seal to (public key only: no passphrase)."""
    vi = info(home, which)
    if vi.kind == "none":
        raise VaultMissing(home)
    if vi.recipient is None or vi.kind == "unknown":
        problem, fix = vi.problems[0] if vi.problems else (f"{home.vault_recipient} is unusable", "")
        raise BeadError(problem, fix)
    data, st = safe.read_with_stat(home.vault_recipient, root=home.root, limit=KEY_FILE_MAX_BYTES)
    if stat.S_IMODE(st.st_mode) & 0o022 or st.st_uid != os.getuid():
        raise BeadError(
            f"refusing to seal to {home.vault_recipient}: others can change it (mode "
            f"{stat.S_IMODE(st.st_mode):04o}), so it may hold someone else's key",
            "check the key in it against `# public key:` in the identity, then "
            f"`chmod 600 {shlex.quote(str(home.vault_recipient))}`",
        )
    mod = pyrage()
    if vi.kind == "pq":
        if not vi.plugin:
            raise _plugin_missing("pq")
        try:
            rec = mod.plugin.Recipient.from_str(vi.recipient)
            return mod.plugin.RecipientPluginV1(PQ_NAME, [rec], [], _Callbacks())
        except (mod.RecipientError, mod.EncryptError) as exc:
            raise BeadError(f"cannot seal to the vault's hybrid key: {exc}", PQ_FIX) from None
    try:
        return mod.x25519.Recipient.from_str(vi.recipient)
    except mod.RecipientError as exc:
        raise BeadError(
            f"{home.vault_recipient} holds no valid X25519 recipient ({exc})",
            "restore the file from the `# public key:` line inside the identity",
        ) from None


def encrypt(data: bytes, to: Any) -> bytes:
    """``data`` encrypted to the recipient ``to``: an age file (binary)."""
    mod = pyrage()
    try:
        return bytes(mod.encrypt(data, [to]))
    except mod.EncryptError as exc:
        if shutil.which(PQ_PLUGIN) is None and "plugin" in str(exc).lower():
            raise _plugin_missing("pq") from None
        raise BeadError(f"age encryption failed: {exc}", "run `bead vault status` to check the vault") from None


def _plugin_identity_string(native: str) -> str:
    """``AGE-SECRET-KEY-PQ-1...`` (age 1.3's own form) as the plugin identity ``AGE-PLUGIN-PQ-1...``."""
    hrp, data = bech32.decode(native)
    if hrp != PQ_IDENTITY_HRP:
        raise ValueError("not a hybrid post-quantum identity")
    return bech32.encode(PQ_PLUGIN_IDENTITY_HRP, data).upper()


# How an age file starts: binary (as bead writes the identity), or armored (`age -a`)
AGE_HEADERS = (b"age-encryption.org/v1\n", b"-----BEGIN AGE ENCRYPTED FILE-----")
KEY_FILE_MAX_BYTES = 64 * 1024  # recipient.txt and identity.age: a key is a line (a gigabyte there was read whole)


def read_identity(home: Home) -> bytes:
    """The encrypted identity's bytes, refused when others can read it or it is not the person's."""
    try:
        data, st = safe.read_with_stat(home.vault_identity, root=home.root, limit=KEY_FILE_MAX_BYTES)
    except FileNotFoundError:
        if not _exists(home, home.vault_recipient):
            raise VaultMissing(home) from None
        raise BeadError(
            f"{home.vault_identity} is missing: sealed facts cannot be read",
            "restore it from a backup; without it the sealed facts are lost",
        ) from None
    except OSError as exc:  # a folder where the file should be, an I/O error
        raise BeadError(
            f"cannot read {home.vault_identity} ({exc.strerror or type(exc).__name__}): sealed facts cannot be read",
            "restore the file from a backup; without it the sealed facts are lost",
        ) from None
    if not data.lstrip().startswith(AGE_HEADERS):
        raise BeadError(
            f"{home.vault_identity} is not an age-encrypted identity (damaged, or replaced): sealed facts cannot be read",
            "restore it from a backup; without it the sealed facts are lost",
        )
    why = loose_mode(st)
    if why:
        raise BeadError(
            f"refusing to use {home.vault_identity}: {why}",
            f"run `chmod 600 {shlex.quote(str(home.vault_identity))}` (as its owner); if others could read it, they may "
            "have a copy of the encrypted key, so consider sealing anew under a new vault",
        )
    return data


def _no_core_dump() -> None:
    """From here on this process writes no core dump, and on Linux no other process of the person may read its
    memory (ptrace, /proc/PID/mem): it is about to hold the decrypted identity, which Python cannot wipe."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
        except (OSError, AttributeError):
            pass


def unlock(home: Home, passphrase: str) -> list[Any]:
    """The vault's identities (pyrage objects) for reading sealed versions: needs the passphrase. The process writes
    no core dump from here on (``_no_core_dump``)."""
    _no_core_dump()
    if recipient_kind_of(home) == "pq" and shutil.which(PQ_PLUGIN) is None:
        raise _plugin_missing("pq")  # said before the passphrase's second of scrypt, not after
    data = read_identity(home)
    mod = pyrage()
    try:
        text = bytes(mod.passphrase.decrypt(data, passphrase)).decode("utf-8")
    except mod.DecryptError as exc:
        # age checks the passphrase against the header's MAC ("Decryption failed"); a file cut short or changed
        # after its header ("Incomplete header", "decryption error") is damaged whatever the passphrase.
        if str(exc) == "Decryption failed":
            raise WrongPassphrase() from None
        raise BeadError(
            f"{home.vault_identity} is damaged ({exc}); the passphrase is not what failed: sealed facts cannot be read",
            "restore it from a backup; without it the sealed facts are lost",
        ) from None
    except UnicodeDecodeError:
        raise BeadError(
            f"{home.vault_identity} decrypted to no identity text (damaged, or replaced): sealed facts cannot be read",
            "restore it from a backup; without it the sealed facts are lost",
        ) from None
    identities: list[Any] = []
    public = ""
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith("# public key:"):
            public = line.split(":", 1)[1].strip()
        if not line or line.startswith("#"):
            continue
        upper = line.upper()
        try:
            if upper.startswith(PQ_IDENTITY_HRP.upper() + "1") or upper.startswith(PQ_PLUGIN_IDENTITY_HRP.upper() + "1"):
                if shutil.which(PQ_PLUGIN) is None:
                    raise _plugin_missing("pq")
                plugin_form = line if upper.startswith(PQ_PLUGIN_IDENTITY_HRP.upper()) else _plugin_identity_string(line)
                ident = mod.plugin.Identity.from_str(plugin_form)
                identities.append(mod.plugin.IdentityPluginV1(PQ_NAME, [ident], _Callbacks()))
            elif upper.startswith(X25519_IDENTITY_PREFIX):
                identities.append(mod.x25519.Identity.from_str(line))
        except (ValueError, mod.IdentityError, mod.DecryptError) as exc:
            raise BeadError(
                f"the vault's identity holds a key bead cannot use ({type(exc).__name__})",
                "run `bead vault status`; for a hybrid key, age-plugin-pq must be on PATH",
            ) from None
    del text
    if not identities:
        raise BeadError("the vault's identity holds no age key", "restore vault/identity.age from a backup")
    if not public and len(identities) == 1 and isinstance(identities[0], mod.x25519.Identity):
        public = str(identities[0].to_public())
    named = info(home).recipient
    if public and named and named != public:
        # Sealing needs no passphrase, so it reads only recipient.txt: one put there by someone else (any program
        # running as the person) has every secret sealed since go to their key. Said at the first unlock after.
        raise BeadError(
            f"{home.vault_recipient} names another key ({named[:24]}...) than the vault's identity "
            f"({public}): secrets sealed since it changed are sealed to that key, not to yours",
            f"write {public} into {home.vault_recipient}, then run `bead vault status`; seal those secrets again",
        )
    return identities


def decrypt(data: bytes, identities: list[Any], what: str) -> bytes:
    """The plain bytes of one age file (``what`` names it in an error)."""
    mod = pyrage()
    try:
        return bytes(mod.decrypt(data, identities))
    except mod.DecryptError as exc:
        if shutil.which(PQ_PLUGIN) is None and "plugin" in str(exc).lower():
            raise _plugin_missing("pq") from None
        raise NotDecrypted(
            f"{what} did not decrypt with the vault's key ({exc})",
            "it was sealed to another key, or the file is damaged; `age -d` shows the same",
        ) from None
