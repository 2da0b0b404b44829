"""The vault under attack, and in careless hands: what an adversary or a slip could get out of it.

Each test is one attack, on real files, real SQLite and real age encryption:
a value's hash left on disk, the passphrase inherited by a child process,
links under vault/, hostile key names, a crafted or damaged sealed file,
files made under umask 0, forgetting a sealed key, two writers at once.
The vault comes from test_vault's template (a low scrypt work factor).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import test_vault
from conftest import REPO, all_bytes_under, reading_index
from test_vault import PASSPHRASE, PP, PP_ENV, SECRET, SECRET2, TOKEN, leftovers, sealed_files

from bead import files as safe
from bead.core.seal import write_secret
from bead.paths import Home
from bead.store.audit import value_hash
from bead.vault import keys as vault_keys

# test_vault's fixtures, by name: a home with a copy of the session's vault (low scrypt work factor)
vault_template, vault = test_vault.vault_template, test_vault.vault


def files_holding(root: Path, *needles: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p, data in all_bytes_under(root).items() if any(n in data for n in needles))


# ----- a value's hash is the value, for a PIN ----------------------------------------------
def test_a_sealed_pin_leaves_no_hash_on_disk_that_a_brute_force_would_find(bead, mem, vault):
    """A secret write and a seal used to tombstone the value: SHA-256 of "4711" is reversed in 10^4 tries."""
    mem.write("user/card-pin", "2580", "user")  # plaintext first, then sealed
    mem.close()  # no reader of this test's holds the index open: the seal's checkpoint empties the WAL (index_emptied)
    assert bead("seal", "user/card-pin").code == 0
    res = bead("write", "user/bank-pin", "-", "--type", "user", "--sensitivity", "secret", input="4711")
    assert res.code == 0, res.err
    disk = b"\n".join(all_bytes_under(vault.root).values())
    found = {f"{n:04d}" for n in range(10_000) if value_hash(f"{n:04d}").encode() in disk}
    assert found == set(), "every 4-digit PIN's hash was tried against every file under the home"
    # As a number of its own: a key's .state.json holds the folder's time in nanoseconds, 19 digits in which any four
    # stand once in a few hundred runs (this test failed so once).
    said = [p for p, data in all_bytes_under(vault.root).items() if re.search(rb"(?<![0-9])(?:4711|2580)(?![0-9])", data)]
    assert said == []


# ----- the passphrase ---------------------------------------------------------------------
def test_a_passphrase_given_by_environment_variable_is_not_inherited_by_the_tools_bead_starts(
    bead, bead_home, tmp_path, monkeypatch
):
    """age-keygen (vault init) and age-plugin-pq (every unlock) are processes: they got the variable."""
    dump = tmp_path / "child-env.txt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "age-keygen").write_text(f'#!/bin/sh\nenv > "{dump}"\necho "no -pq here" >&2\nexit 1\n')
    (bin_dir / "age-plugin-pq").write_text("#!/bin/sh\nexit 1\n")
    for p in bin_dir.iterdir():
        p.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    res = bead("vault", "init", "--kind", "pq", *PP, env=PP_ENV)  # the keygen fails: no scrypt, no vault
    assert res.code == 1 and "cannot make a hybrid post-quantum key" in res.err
    assert dump.exists(), "the child ran"
    assert PASSPHRASE not in dump.read_text() and "BEAD_TEST_PP" not in dump.read_text()
    assert not Home(bead_home).vault_identity.exists()


# ----- links under vault/ ---------------------------------------------------------------------
def test_a_sealed_key_folder_that_is_a_link_is_never_written_read_or_deleted_through(bead, mem, vault, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = outside / "v1.md.age"
    planted.write_bytes(b"someone else's file")
    safe.ensure_dir(vault.sealed_dir / "user", root=vault.root)
    os.symlink(outside, vault.sealed_dir / "user" / "pin")
    res = bead("write", "user/pin", "-", "--type", "user", "--sensitivity", "secret", input=SECRET)
    assert res.code == 1 and "symbolic link" in res.err and "Traceback" not in res.err
    for args in (("forget", "user/pin"), ("sealed", "show", "user/pin", *PP), ("unseal", "user/pin", *PP)):
        r = bead(*args, env=PP_ENV)
        assert r.code == 1 and "Traceback" not in r.err, (args, r.err)
    assert sorted(p.name for p in outside.iterdir()) == ["v1.md.age"] and planted.read_bytes() == b"someone else's file"
    assert leftovers(vault.root, SECRET) == [] and leftovers(tmp_path, SECRET) == []


def test_an_identity_that_is_a_link_is_refused_even_to_a_good_file(bead, mem, vault, tmp_path):
    write_secret(mem, "user/pin", SECRET, "user")
    real = tmp_path / "identity.age"
    real.write_bytes(vault.vault_identity.read_bytes())
    real.chmod(0o600)
    vault.vault_identity.unlink()
    os.symlink(real, vault.vault_identity)
    res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
    assert res.code == 1 and "symbolic link" in res.err and SECRET not in res.out
    assert bead("vault", "init", *PP, env=PP_ENV).code == 1, "a link there still counts as a vault"
    assert real.read_bytes() == vault.vault_identity.read_bytes(), "nothing wrote through the link"


def test_forget_removes_a_linked_version_file_itself_not_its_target(bead, mem, vault, tmp_path):
    write_secret(mem, "user/pin", SECRET, "user")
    target = tmp_path / "elsewhere.age"
    target.write_bytes(b"not bead's")
    os.symlink(target, vault.sealed_file("user/pin", 2))
    res = bead("forget", "user/pin")
    assert res.code == 0, res.err
    assert target.read_bytes() == b"not bead's" and not vault.sealed_key_dir("user/pin").exists()


@pytest.mark.parametrize(
    "key",
    ["user/../../outside", "/etc/passwd", "user/pin\x00x", "user/" + "a" * 5000, "user/.hidden", "vault/sealed", "user\\pin"],
)
def test_hostile_key_names_are_refused_by_every_vault_command(bead, mem, vault, key):
    assert bead("sealed", "list").code == 0  # what any command makes (config.yaml) is made now
    before = sorted(all_bytes_under(vault.root.parent))
    for args in (
        ("write", key, "-", "--type", "user", "--sensitivity", "secret"),
        ("seal", key),
        ("unseal", key, *PP),
        ("sealed", "show", key, *PP),
        ("forget", key),
    ):
        r = bead(*args, input=SECRET, env=PP_ENV)
        assert r.code in (1, 2) and "Traceback" not in r.err, (args, r.err)
    assert sorted(all_bytes_under(vault.root.parent)) == before, "nothing was created anywhere"


# ----- a sealed file that is not what bead wrote ---------------------------------------------
def test_show_passes_over_a_damaged_or_foreign_higher_version_and_says_so(bead, mem, vault):
    write_secret(mem, "user/pin", SECRET, "user")
    safe.atomic_write(vault.sealed_file("user/pin", 2), b"age-encryption.org/v1\ntruncated", root=vault.root)
    stranger = vault_keys.pyrage().x25519.Identity.generate().to_public()
    safe.atomic_write(vault.sealed_file("user/pin", 3), vault_keys.encrypt(b"sealed elsewhere", stranger), root=vault.root)
    res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
    assert res.code == 0, res.err
    assert res.out.strip() == SECRET, "the highest version that decrypts is current, as the README says"
    assert res.err.count("warning: passed over") == 2 and "v3.md.age" in res.err and "v2.md.age" in res.err


# ----- file modes whatever the umask ----------------------------------------------------------
def test_vault_files_are_private_under_umask_zero(bead, mem, vault):
    old = os.umask(0)
    try:
        mem.write("project/acme/deploy-token", "Deploy token 8842 plainplain", "project")
        assert bead("seal", "project/acme/deploy-token").code == 0
        write_secret(mem, "user/pin", SECRET, "user")
    finally:
        os.umask(old)
    loose = []
    for dirpath, dirs, names in os.walk(vault.vault):
        for name in dirs + names:
            p = Path(dirpath) / name
            if stat.S_IMODE(p.lstat().st_mode) & 0o077:
                loose.append(f"{p.relative_to(vault.root)} {stat.S_IMODE(p.lstat().st_mode):04o}")
    assert loose == []
    assert sealed_files(vault.root, "project/acme/deploy-token") == ["v1.md.age"]


# ----- forgetting a sealed key -------------------------------------------------------------------
def test_forget_of_a_sealed_key_needs_no_passphrase_and_leaves_no_byte_naming_it(bead, mem, vault):
    mem.write("user/bank-pin", "Bank PIN 1000 recovery oldoldold", "user")
    assert bead("seal", "user/bank-pin").code == 0
    write_secret(mem, "user/bank-pin", SECRET, "user")
    write_secret(mem, "user/other", SECRET2, "user")
    assert files_holding(vault.root, b"bank-pin"), "the key is named on disk before"
    res = bead("forget", "user/bank-pin", "--json")  # no passphrase option, no terminal
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert out["forgotten"] and out["sealed_versions"] == 2 and out["keys"] == ["user/bank-pin"]
    assert files_holding(vault.root, b"bank-pin") == [], "age files, audit and tombstone lines: the key is hashed"
    assert not vault.sealed_key_dir("user/bank-pin").exists()
    assert json.loads(bead("sealed", "list", "--json").out) == [{"key": "user/other", "versions": 1}]
    again = bead("forget", "user/bank-pin")
    assert again.code == 1 and "nothing to forget" in again.err


def test_forget_of_one_sealed_version_keeps_the_rest(bead, mem, vault):
    write_secret(mem, "user/pin", SECRET2, "user")
    write_secret(mem, "user/pin", SECRET, "user")
    res = bead("forget", "user/pin@v2")
    assert res.code == 0, res.err
    assert sealed_files(vault.root, "user/pin") == ["v1.md.age"]
    assert bead("sealed", "show", "user/pin", *PP, env=PP_ENV).out.strip() == SECRET2


# ----- two writers at once ----------------------------------------------------------------------------
_WRITER = """
import sys
from pathlib import Path
from bead.config import Config
from bead.core.memory import Memory
from bead.core.seal import write_secret
from bead.errors import BeadError
from bead.paths import Home
home, tag, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
mem = Memory(Home(Path(home)), Config(owner="tester"))
while not go.exists():
    pass
for i in range(n):
    try:
        write_secret(mem, "user/pin", f"pin {tag} number {i} tok{tag}{i}q", "user")
        print("ok", tag, i, flush=True)
    except BeadError as exc:
        print("refused", tag, i, str(exc).splitlines()[0], flush=True)
mem.close()
"""


def test_secret_writes_from_two_processes_at_once_get_contiguous_versions(mem, vault, tmp_path):
    mem.write("user/pin", "pin plain number 0 tokplainq", "user")  # plaintext first: the first write seals it too
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(vault.root), tag, "6", str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    lines = [line.split() for o, _err in outs for line in o.splitlines()]
    ok = [(t[1], t[2]) for t in lines if t[0] == "ok"]
    refused = [" ".join(t[3:]) for t in lines if t[0] == "refused"]
    # A write that planned against the plaintext version may find it sealed by the other: it says so.
    assert all("changed while it was being sealed" in r for r in refused), refused
    names = sealed_files(vault.root, "user/pin")
    numbers = sorted(int(n[1:].split(".")[0]) for n in names)
    assert numbers == list(range(1, len(ok) + 2)), "v1 (the sealed plaintext), then one version per write"
    identities = vault_keys.unlock(vault, PASSPHRASE)
    bodies = {vault_keys.decrypt(vault.sealed_file("user/pin", n).read_bytes(), identities, "t").decode() for n in numbers}
    assert all(any(f"pin {tag} number {i} tok{tag}{i}q" in b for b in bodies) for tag, i in ok), "no write was lost"
    assert leftovers(vault.root, "pin plain number 0 tokplainq", *(f"pin {t} number {i} tok{t}{i}q" for t, i in ok)) == []
    assert TOKEN not in "".join(bodies) and SECRET not in "".join(bodies)


def test_a_recipient_file_swapped_for_another_key_is_said_at_the_next_unlock(mem, vault):
    """Sealing needs no passphrase, so it reads only recipient.txt: another program running as the person can put
    its own key there, and every secret sealed after goes to that key. The next unlock compares the file with the
    identity's own public key and says so, naming the right one; put back, it unlocks as before."""
    mod = vault_keys.pyrage()
    own = vault.vault_recipient.read_text()
    theirs = str(mod.x25519.Identity.generate().to_public())
    safe.atomic_write(vault.vault_recipient, (theirs + "\n").encode(), root=vault.root)
    with pytest.raises(Exception) as err:
        vault_keys.unlock(vault, PASSPHRASE)
    assert "names another key" in str(err.value) and theirs[:24] in str(err.value)
    right = next(ln.strip() for ln in own.splitlines() if ln.strip() and not ln.startswith("#"))
    assert right in str(err.value.hint)
    safe.atomic_write(vault.vault_recipient, own.encode(), root=vault.root)
    assert vault_keys.unlock(vault, PASSPHRASE)


def test_a_process_that_unlocked_the_vault_writes_no_core_dump(vault):
    """A core dump of a process holding the decrypted identity (a `bead sealed show` stopped by SIGQUIT) held the
    AGE-SECRET-KEY: after an unlock the process's core size limit is 0, and on Linux it is not dumpable."""
    import ctypes
    import resource
    import sys

    assert vault_keys.unlock(vault, PASSPHRASE)
    assert resource.getrlimit(resource.RLIMIT_CORE) == (0, 0)
    if sys.platform.startswith("linux"):
        assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE


def test_a_passphrase_descriptor_that_is_a_terminal_is_refused(bead, mem, vault):
    """`--passphrase-fd 0` at a terminal: the terminal echoes what is typed to a descriptor read raw, so the
    passphrase stood on screen. Refused, saying to leave the option out and be asked without echo."""
    import os

    write_secret(mem, "user/pin", SECRET, "user")
    main, tty = os.openpty()
    os.write(main, b"typed at the terminal\n")  # what the person types (and the terminal shows)
    try:
        r = bead("sealed", "show", "user/pin", "--passphrase-fd", str(tty))
    finally:
        os.close(main)
        os.close(tty)
    assert r.code == 1 and "is a terminal" in r.err and "without echo" in r.err


def test_a_reader_that_keeps_the_wal_from_emptying_is_reported_by_seal_too(bead, mem, vault):
    """As forget does: another program's read of index.db keeps the checkpoint, and the sealed plaintext with it,
    in index.db; seal says so and what to do, not "the plaintext deleted" alone."""
    mem.write("user/wifi", "the guest network hint is heron-quokka-lantern", "user")
    mem.close()
    (vault.root / "config.yaml").write_text("owner: tester\nstore:\n  busy_timeout_ms: 200\n")
    with reading_index(vault.index_db):
        r = bead("seal", "user/wifi", "--yes")
    assert r.code == 0, r.err
    assert "index.db open for reading" in r.err and "bead reindex" in r.err


@pytest.mark.parametrize("how", ["env not utf-8", "fd past any"])
def test_a_passphrase_that_cannot_be_read_is_a_clear_error_not_a_traceback(bead, mem, vault, how):
    """A variable holding bytes that are no UTF-8, or a descriptor number past any there can be, ended in a traceback
    and "this is a bug in bead" (an adversarial pass); the passphrase is never printed either way."""
    write_secret(mem, "user/pin", SECRET, "user")
    if how == "env not utf-8":
        r = bead("sealed", "show", "user/pin", "--passphrase-env", "PP", env={"PP": "MARKERZZ\udcff\udcfe-more"})
        said = "is not UTF-8 text"
    else:
        r = bead("sealed", "show", "user/pin", "--passphrase-fd", "99999999999")
        said = "is no file descriptor"
    assert r.code == 1 and said in r.err and "Traceback" not in r.err and "bug in bead" not in r.err, r.err
    assert "MARKERZZ" not in r.out + r.err


def test_a_sealed_folder_named_as_no_key_is_left_out_and_named_by_status(bead, bead_home):
    """One folder under vault/sealed whose name is no key (`project/BAD`, by hand or another tool) took `bead status`,
    `bead list` and `bead sealed list` down with an invalid key error (an outside attack): it is left out and named."""
    assert bead("status").code == 0
    odd = bead_home / "vault" / "sealed" / "project" / "BAD"
    odd.mkdir(parents=True)
    (odd / "v1.md.age").write_bytes(b"x")
    for args in (("list",), ("sealed", "list"), ("vault", "status")):
        r = bead(*args)
        assert r.code == 0 and "segment" not in r.err, (args, r.err)
    r = bead("status")
    assert r.code == 0 and "vault/sealed/project/BAD holds sealed files but its name is no key" in r.out, r.out
