"""The sealed vault: a secret is never a plaintext file, an index row, an injection or model input.

Real files, real SQLite, real age encryption through pyrage. A real vault's
identity costs a deliberate second and half a gigabyte to open (scrypt, as
pyrage calibrates it); one `bead vault init` test runs it that way (the file is
pyrage's output as made), the other init tests seal the identity at a low work factor
(``low_work_factor``), and every other test copies a vault made once per
session whose identity uses one (tests/age_scrypt.py), so the suite stays fast
and light.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pty
import re
import select
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import age_scrypt
import pytest
from conftest import all_bytes_under, make_proxy_app
from fakes import FakeModel

from bead import files as safe
from bead.cli import common as cli_common
from bead.config import Config, parse
from bead.core import seal as ops
from bead.core.memory import Memory
from bead.core.seal import write_secret
from bead.dream.run import Dream
from bead.errors import BeadError, KeySealed, RefusedWrite
from bead.paths import Home
from bead.store.audit import key_hash, value_hash
from bead.vault import keys as vault_keys

PASSPHRASE = "correct horse battery staple"
PP_ENV = {"BEAD_TEST_PP": PASSPHRASE}
PP = ("--passphrase-env", "BEAD_TEST_PP")
TOKEN = "zqxjvbnmkw"  # one FTS5 token, so the index's segments are checked too
SECRET = f"Bank PIN 4711 recovery {TOKEN}"
SECRET2 = "Bank PIN 9902 recovery wqplmokn"
STANDIN = Path(__file__).resolve().parent / "age_standin.py"


def leftovers(root: Path, *values: str) -> list[str]:
    """Files under ``root`` (index.db and its -wal included) whose bytes hold a value or its last word."""
    forms = {f.lower().encode() for v in values for f in (v, v.split()[-1])}
    return sorted(f"{p.relative_to(root)}" for p, data in all_bytes_under(root).items() if any(f in data.lower() for f in forms))


@pytest.fixture(scope="session")
def vault_template(tmp_path_factory) -> Path:
    """One X25519 vault as `bead vault init` lays it out, its identity at scrypt work factor 10."""
    root = tmp_path_factory.mktemp("vault-template")
    mod = vault_keys.pyrage()
    ident = mod.x25519.Identity.generate()
    text = f"# created: 2026-11-30T00:00:00Z\n# public key: {ident.to_public()}\n{ident}\n".encode()
    sealed = age_scrypt.encrypt(text, PASSPHRASE, work_factor=10)
    assert mod.passphrase.decrypt(sealed, PASSPHRASE) == text, "pyrage opens it as any age file"
    (root / "vault").mkdir(mode=0o700)
    (root / "vault" / "identity.age").write_bytes(sealed)
    (root / "vault" / "recipient.txt").write_text(f"{ident.to_public()}\n")
    return root / "vault"


@pytest.fixture
def vault(bead_home, vault_template) -> Home:
    """This test's home, with the template's vault copied in (0700 folder, 0600 files)."""
    home = Home(bead_home).ensure()
    for name in ("recipient.txt", "identity.age"):
        safe.atomic_write(home.vault / name, (vault_template / name).read_bytes(), root=home.root)
    return home


def fact_files(home: Path, key: str) -> list[str]:
    d = Home(home).fact_dir(key)
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def sealed_files(home: Path, key: str) -> list[str]:
    d = Home(home).sealed_key_dir(key)
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def decrypt_all(home: Home, key: str) -> dict[int, str]:
    """Every sealed version of ``key``, decrypted with the vault's identity (one unlock: scrypt is slow on purpose)."""
    identities = vault_keys.unlock(home, PASSPHRASE)
    return {
        n: vault_keys.decrypt(home.sealed_file(key, n).read_bytes(), identities, "t").decode()
        for n in (int(name[1:].split(".")[0]) for name in sealed_files(home.root, key))
    }


# ----- bead vault init ------------------------------------------------------------
class TestInit:
    def test_writes_the_recipient_and_a_0600_identity_and_warns_once(self, bead, bead_home, monkeypatch):
        """At pyrage's own cost: the identity file is exactly what pyrage's passphrase encryption made (its
        calibrated scrypt work factor, about a second of CPU; opening it costs as much again, so that
        `unlock` hands exactly these bytes to pyrage's decryption is shown at a low work factor below)."""
        mod = vault_keys.pyrage()
        real_encrypt, made = mod.passphrase.encrypt, []

        def spy(data, passphrase):
            made.append(real_encrypt(data, passphrase))
            return made[-1]

        monkeypatch.setattr(mod.passphrase, "encrypt", spy)
        r, w = os.pipe()
        os.write(w, (PASSPHRASE + "\n").encode())
        os.close(w)
        try:
            res = bead("vault", "init", "--passphrase-fd", str(r), "--kind", "x25519")
        finally:
            os.close(r)
        assert res.code == 0, res.err
        home = Home(bead_home)
        assert home.vault_recipient.read_text().startswith("age1")
        ident = home.vault_identity
        assert stat.S_IMODE(ident.stat().st_mode) == 0o600 and stat.S_IMODE(home.vault.stat().st_mode) == 0o700
        assert ident.read_bytes().startswith(b"age-encryption.org/v1\n-> scrypt "), "the identity is passphrase-encrypted"
        assert made == [ident.read_bytes()], "the identity is pyrage's passphrase encryption, as made"
        assert b"AGE-SECRET-KEY" not in ident.read_bytes()
        said = res.out + res.err
        assert said.count("lost for good") == 1 and "cannot recover" in said
        assert PASSPHRASE not in said and leftovers(bead_home, PASSPHRASE) == []

    def test_at_a_terminal_asks_twice_without_echo(self, bead, bead_home, monkeypatch, low_work_factor):
        monkeypatch.setattr(cli_common, "at_terminal", lambda: True)
        res = bead("vault", "init", "--kind", "x25519", input=f"{PASSPHRASE}\n{PASSPHRASE}\n")
        assert res.code == 0, res.err
        said = res.out + res.err
        assert "Passphrase for the vault" in said and "Repeat the passphrase" in said
        assert PASSPHRASE not in said, "the passphrase is never echoed"
        assert Home(bead_home).vault_identity.exists()
        # The identity opens with that passphrase, its file's bytes going to pyrage's decryption as they are.
        mod, given = vault_keys.pyrage(), []
        real_decrypt = mod.passphrase.decrypt
        monkeypatch.setattr(mod.passphrase, "decrypt", lambda data, pp: given.append(bytes(data)) or real_decrypt(data, pp))
        assert len(vault_keys.unlock(Home(bead_home), PASSPHRASE)) == 1
        assert given == [Home(bead_home).vault_identity.read_bytes()]

    def test_two_different_entries_create_nothing(self, bead, bead_home, monkeypatch):
        monkeypatch.setattr(cli_common, "at_terminal", lambda: True)
        res = bead("vault", "init", input=f"{PASSPHRASE}\n{PASSPHRASE}x\n")
        assert res.code == 1 and "do not match" in res.out + res.err
        assert not Home(bead_home).vault.exists()

    def test_short_passphrase_is_refused(self, bead, bead_home):
        res = bead("vault", "init", *PP, env={"BEAD_TEST_PP": "eleven char"})
        assert res.code == 1 and "12 or more" in res.err and "Traceback" not in res.err
        assert not Home(bead_home).vault.exists()

    def test_without_a_terminal_or_an_option_says_how(self, bead, bead_home):
        res = bead("vault", "init")
        assert res.code == 1 and "--passphrase-fd" in res.err and "--passphrase-env" in res.err
        assert not Home(bead_home).vault.exists()

    def test_a_second_init_is_refused(self, bead, vault):
        before = vault.vault_identity.read_bytes()
        res = bead("vault", "init", *PP, env=PP_ENV)
        assert res.code == 1 and "already exists" in res.err
        assert vault.vault_identity.read_bytes() == before

    def test_unset_passphrase_variable_is_an_error(self, bead, bead_home):
        res = bead("vault", "init", "--passphrase-env", "BEAD_TEST_NOT_SET")
        assert res.code == 1 and "BEAD_TEST_NOT_SET is not set" in res.err


# ----- sealing, secret writes, unsealing -----------------------------------------------
class TestSeal:
    def test_seal_encrypts_every_version_and_deletes_the_plaintext_leaving_no_value_hash(self, bead, mem, vault):
        turns = mem.append_turns("s1", [("user", f"my card: {SECRET}", None, None)])
        mem.write("user/bank-pin", "Bank PIN 1000 recovery oldoldold", "user")
        mem.write("user/bank-pin", SECRET, "user", sources=[turns[0].anchor])
        tombstones = mem.tombstones.count()
        res = bead("seal", "user/bank-pin")
        assert res.code == 0, res.err
        assert "2 version(s) encrypted" in res.out
        assert fact_files(vault.root, "user/bank-pin") == []
        assert sealed_files(vault.root, "user/bank-pin") == ["v1.md.age", "v2.md.age"]
        # No tombstone: a SHA-256 of a sealed value is the value to anyone who can enumerate it (a PIN).
        assert mem.tombstones.count() == tombstones
        hashes = [value_hash(v).encode() for v in (SECRET, "Bank PIN 1000 recovery oldoldold")]
        assert [p for p, data in all_bytes_under(vault.root).items() if any(h in data for h in hashes)] == []
        assert mem.index.fact_candidates(TOKEN, 10, current_only=False) == []
        assert TOKEN not in mem.raw.read(turns[0].path)[0].text, "the raw turn citing it is redacted, as forget does"
        plain = decrypt_all(vault, "user/bank-pin")
        assert "oldoldold" in plain[1] and SECRET in plain[2]
        assert all("status: sealed" in p and "sensitivity: secret" in p for p in plain.values())
        assert leftovers(vault.root, SECRET, "Bank PIN 1000 recovery oldoldold") == []

    def test_seal_as_another_key_leaves_no_word_of_the_value_in_a_name(self, bead, mem, vault):
        """ "Remember that the vault phrase is maple quartz lantern" makes the key `vault-phrase-maple-quartz`; sealed,
        the key's name stayed on disk as the vault's folder, with two of the phrase's words (an outside review).
        `bead seal` says so, and `--as NEWKEY` seals the versions under another name: the old name goes from the
        store and the logs, the value decrypts under the new one."""
        key, value = "project/shop/vault-phrase-maple-quartz", "the vault phrase is maple quartz lantern"
        mem.write(key, "the vault phrase was birch", "project")
        mem.write(key, value, "project")
        warned = bead("seal", key, "--yes")
        assert warned.code == 0 and "name holds words of its value (maple, quartz)" in warned.err and "--as" in warned.err
        assert bead("unseal", key, *PP, env=PP_ENV).code == 0
        res = bead("seal", key, "--as", "project/shop/secret-1", "--yes")
        assert res.code == 0, res.err
        assert "sealed project/shop/secret-1: 2 version(s)" in res.out and "name holds words" not in res.err
        assert sealed_files(vault.root, "project/shop/secret-1") == ["v1.md.age", "v2.md.age"]
        names = [str(p.relative_to(vault.root)) for p in vault.root.rglob("*")]
        assert not [n for n in names if "maple" in n or "quartz" in n], names
        assert [p for p, data in all_bytes_under(vault.root).items() if b"maple" in data or b"quartz" in data] == []
        # Nor its hash: a word list gave the words back from the SHA-256 the audit log kept of the key (an outside
        # attack), the plain seal's lines before too.
        gone = key_hash(key).encode()
        assert [p for p, data in all_bytes_under(mem.home.root).items() if gone in data or gone[:12] in data] == []
        plain = decrypt_all(vault, "project/shop/secret-1")
        assert (
            "key: project/shop/secret-1" in plain[2] and value in plain[2] and "supersedes: project/shop/secret-1@v1" in plain[2]
        )
        shown = bead("sealed", "show", "project/shop/secret-1", *PP, env=PP_ENV)
        assert shown.code == 0 and shown.out.strip() == value
        mem.write("user/other-thing", "something else entirely", "user")
        taken = bead("seal", "user/other-thing", "--as", "project/shop/secret-1", "--yes")
        assert taken.code == 1 and "has versions already" in taken.err
        assert mem.current("user/other-thing") is not None, "nothing was changed"

    def test_another_fact_quoting_the_value_is_named_not_changed(self, bead, mem, vault):
        """A seal seals its key; another fact that quotes the value is the person's own and stays, so the result
        (and the curator's preview) names it, to seal or forget too."""
        value = "The backup door code is quokka-marmalade-7731"
        mem.write("user/door", value, "user")
        mem.write("project/shop/door-note", "Ops note: " + value, "project")
        mem.write("project/shop/other", "The office opens at nine", "project")
        res = bead("seal", "user/door", "--json")
        assert res.code == 0, res.err
        assert json.loads(res.out)["also_in"] == ["project/shop/door-note"]
        assert "project/shop/door-note still hold(s) the value" in res.err and "bead seal project/shop/door-note" in res.err
        assert mem.current("project/shop/door-note").body == "Ops note: " + value

    def test_a_secret_write_seals_the_plaintext_first_and_supersedes_it(self, bead, mem, vault):
        mem.write("user/bank-pin", SECRET, "user")
        said = mem.append_turns("s1", [("user", f"the new one is {SECRET2}", None, None)])
        res = bead("write", "user/bank-pin", "-", "--type", "user", "--sensitivity", "secret", input=SECRET2)
        assert res.code == 0, res.err
        assert "user/bank-pin@v2 to the vault, encrypted (supersedes user/bank-pin@v1)" in res.out
        assert "redacted 1 raw turn(s) that held the secret" in res.err
        assert mem.raw.read(said[0].path)[0].text == "[forgotten]"
        assert fact_files(vault.root, "user/bank-pin") == []
        assert sealed_files(vault.root, "user/bank-pin") == ["v1.md.age", "v2.md.age"]
        assert leftovers(vault.root, SECRET, SECRET2) == []
        assert "on the command line" not in res.err  # piped in: nothing to say

    def test_a_secret_written_to_a_new_key_is_not_refused_for_a_raw_file_it_cannot_read(self, bead, mem, vault, tmp_path):
        """A hard-linked raw file refused a secret write to a new key ("seal changed nothing"): the refusal is for a
        forget whose versions are what the value is looked for by, and a new key has none (a review). It writes,
        and names the file it could not read."""
        mem.append_turns("sess-a", [("user", "the build passed on the staging box", None, None)])
        os.link(mem.raw.find("sess-a"), tmp_path / "elsewhere.md")
        res = bead("write", "user/bank-pin", "-", "--type", "user", "--sensitivity", "secret", input=SECRET2)
        assert res.code == 0, res.err
        assert sealed_files(vault.root, "user/bank-pin") == ["v1.md.age"]
        rel = mem.raw.find("sess-a").relative_to(mem.home.store).as_posix()
        assert f"warning: could not read raw file {rel}" in res.err, res.err

    def test_a_secret_given_on_the_command_line_is_written_and_the_person_told_to_pipe_it(self, bead, vault):
        """An argument is in the process list (/proc/PID/cmdline) and the shell's history while the command runs."""
        res = bead("write", "user/pin", SECRET, "--type", "user", "--sensitivity", "secret")
        assert res.code == 0, res.err
        assert "was on the command line" in res.err and "`bead write KEY - --sensitivity secret`" in res.err

    def test_a_secret_write_needs_no_passphrase_and_numbers_from_file_names(self, mem, vault):
        write_secret(mem, "user/pin", SECRET, "user")
        # A version that decrypts with nothing: the next number still comes from its name.
        safe.atomic_write(vault.sealed_file("user/pin", 7), b"not an age file", root=vault.root)
        vault.vault_identity.unlink()  # the private key is not even there
        res = write_secret(mem, "user/pin", SECRET2, "user")
        assert res.sealed and res.fact.version == 8 and res.fact.supersedes == "user/pin@v7"
        assert sealed_files(vault.root, "user/pin") == ["v1.md.age", "v7.md.age", "v8.md.age"]

    def test_a_plaintext_write_to_a_sealed_key_fails_clearly(self, bead, mem, vault):
        write_secret(mem, "user/pin", SECRET, "user")
        with pytest.raises(KeySealed):
            mem.write("user/pin", "a plain value", "user")
        res = bead("write", "user/pin", "a plain value", "--type", "user")
        assert res.code == 1 and "sealed in the vault" in res.err and "bead unseal user/pin" in res.err
        assert fact_files(vault.root, "user/pin") == []

    def test_a_secret_write_without_a_vault_is_refused(self, bead, bead_home):
        res = bead("write", "user/pin", SECRET, "--type", "user", "--sensitivity", "secret")
        assert res.code == 1 and "bead vault init" in res.err
        assert leftovers(bead_home, SECRET) == []

    def test_unseal_restores_private_plaintext_with_statuses(self, bead, mem, vault):
        mem.write("user/pin", "Bank PIN 1000 recovery oldoldold", "user")
        write_secret(mem, "user/pin", SECRET, "user")
        res = bead("unseal", "user/pin", *PP, env=PP_ENV)
        assert res.code == 0, res.err
        assert "2 version(s) back as private plaintext (current user/pin@v2)" in res.out
        assert sealed_files(vault.root, "user/pin") == [] and not vault.sealed_key_dir("user/pin").exists()
        kv = mem.versions("user/pin")
        assert [(f.version, f.status, f.sensitivity) for f in kv.facts] == [
            (1, "superseded", "private"),
            (2, "current", "private"),
        ]
        assert kv.current.body == SECRET
        assert [r["id"] for r in mem.index.fact_candidates(TOKEN, 10)] == ["user/pin@v2"]

    def test_unseal_with_a_fifo_at_the_audit_log_brings_nothing_back(self, bead, mem, vault):
        """It restored the plaintext and deleted the sealed copies, then failed on the audit log: a command reported
        as failed that had put the secret back in clear. It is refused before anything changes."""
        write_secret(mem, "user/pin", SECRET, "user")
        audit = vault.audit_log
        audit.unlink()
        os.mkfifo(audit)
        res = bead("unseal", "user/pin", *PP, env=PP_ENV)
        assert res.code == 1 and f"refusing to write {audit}: it is a FIFO" in res.err, res.err
        assert sealed_files(vault.root, "user/pin") == ["v1.md.age"] and fact_files(vault.root, "user/pin") == []
        assert leftovers(vault.root, SECRET) == []

    def test_a_vault_file_of_gigabytes_is_passed_over_unread(self, bead, mem, vault):
        """A sealed version of 8 GB was read whole (17 GB of memory, in the process that holds the unlocked
        identity), and a recipient.txt of a gigabyte at every secret write. No file bead wrote is that large: a
        sealed version past SEALED_MAX_BYTES is passed over, and a key file past KEY_FILE_MAX_BYTES refused, unread
        (the files here are sparse: no disk is used)."""
        from bead.vault.keys import KEY_FILE_MAX_BYTES
        from bead.vault.sealed import SEALED_MAX_BYTES

        write_secret(mem, "user/pin", SECRET, "user")
        big = vault.sealed_file("user/pin", 2)
        with open(big, "wb") as f:
            f.truncate(SEALED_MAX_BYTES + 1)
        os.chmod(big, 0o600)
        res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
        assert res.code == 0 and TOKEN in res.out and f"passed over {big}" in res.err, res.err
        with open(vault.vault_recipient, "r+b") as f:
            f.truncate(KEY_FILE_MAX_BYTES + 1)
        res = bead("write", "user/pin2", SECRET2, "--type", "user", "--sensitivity", "secret")
        assert res.code == 1 and "more than the" in res.err and leftovers(vault.root, SECRET2) == [], res.err

    def test_a_damaged_identity_or_a_folder_in_the_vault_is_said_as_such_not_a_wrong_passphrase(self, bead, mem, vault):
        """A vault file that is not what it should be: the person is told which file, not to retype the passphrase,
        and never sees a traceback (a folder where a sealed version was is passed over)."""
        from bead import files as safe
        from bead.core.seal import write_secret

        write_secret(mem, "user/pin", SECRET, "user")
        os.mkdir(vault.sealed_file("user/pin", 2))
        res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
        assert res.code == 0 and SECRET in res.out, res.err
        kept = vault.vault_identity.read_bytes()
        safe.atomic_write(vault.vault_identity, b"not an age file at all", root=vault.root)
        res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
        assert res.code == 1 and "is not an age-encrypted identity" in res.err and "wrong passphrase" not in res.err
        # An age file cut short, or changed after its header: damaged, whatever the passphrase (it read as "wrong
        # passphrase", so the person may have thought the passphrase lost)
        for damaged in (kept[: len(kept) // 2], kept[:-5] + bytes([kept[-5] ^ 1]) + kept[-4:]):
            safe.atomic_write(vault.vault_identity, damaged, root=vault.root, mode=0o600)
            res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
            assert res.code == 1 and "is damaged" in res.err and "wrong passphrase" not in res.err, res.err
        os.unlink(vault.vault_identity)
        os.mkdir(vault.vault_identity, 0o700)
        res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
        assert res.code == 1 and "cannot read" in res.err and "Traceback" not in res.err, res.err
        os.rmdir(vault.vault_identity)
        safe.atomic_write(vault.vault_identity, kept, root=vault.root, mode=0o600)
        assert bead("sealed", "show", "user/pin", *PP, env=PP_ENV).code == 0

    def test_sealed_list_and_show_the_highest_version(self, bead, mem, vault):
        write_secret(mem, "user/pin", SECRET2, "user")
        write_secret(mem, "user/pin", SECRET, "user")
        write_secret(mem, "user/other", "another secret value", "user")
        listed = bead("sealed", "list", "--json")
        assert json.loads(listed.out) == [{"key": "user/other", "versions": 1}, {"key": "user/pin", "versions": 2}]
        shown = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
        assert shown.code == 0 and shown.out.strip() == SECRET

    def test_a_wrong_passphrase_fails_cleanly(self, bead, mem, vault):
        write_secret(mem, "user/pin", SECRET, "user")
        for args in (("sealed", "show", "user/pin"), ("unseal", "user/pin")):
            res = bead(*args, *PP, env={"BEAD_TEST_PP": "not the right passphrase"})
            assert res.code == 1 and "wrong passphrase" in res.err and "hint:" in res.err
            assert "Traceback" not in res.err and SECRET not in res.out + res.err
        assert sealed_files(vault.root, "user/pin") == ["v1.md.age"], "nothing changed"

    def test_loose_identity_permissions_are_refused(self, bead, mem, vault):
        write_secret(mem, "user/pin", SECRET, "user")
        vault.vault_identity.chmod(0o640)
        res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
        assert res.code == 1 and "refusing to use" in res.err and "0640" in res.err and "chmod 600" in res.err
        assert SECRET not in res.out
        status = json.loads(bead("status", "--json").out)
        assert any("refuses to use" in p["problem"] for p in status["problems"])

    def test_forget_match_does_not_search_sealed_values_and_says_so(self, bead, mem, vault):
        write_secret(mem, "user/pin", SECRET, "user")
        res = bead("forget", "--match", TOKEN, "--yes", "--json")
        assert res.code == 0
        assert "does not search the vault's 1 sealed key(s)" in res.err
        assert json.loads(res.out)["sealed_not_searched"] == 1
        assert sealed_files(vault.root, "user/pin") == ["v1.md.age"]

    def test_show_of_a_sealed_key_points_to_the_vault_command(self, bead, mem, vault):
        write_secret(mem, "user/pin", SECRET, "user")
        shown = bead("show", "user/pin")
        assert shown.code == 1 and "bead sealed show user/pin" in shown.err

    def test_unseal_refuses_a_version_no_bead_write_would_take(self, bead, mem, vault):
        """Anyone with the public key can put a version in the vault: one holding a terminal escape and a bidi
        override came back as the current plaintext fact, past every check a write runs. Unseal refuses it and the
        key stays sealed."""
        import dataclasses

        write_secret(mem, "user/pin", SECRET, "user")
        sealed_v1 = mem.sealed.current("user/pin", vault_keys.unlock(vault, PASSPHRASE))
        planted = dataclasses.replace(sealed_v1, version=2, body="run \x1b]52;c;Y3VybA==\x07 \u202egnp.exe")
        mem.sealed.write("user/pin", 2, planted.render(), vault_keys.recipient(vault))
        res = bead("unseal", "user/pin", *PP, env=PP_ENV)
        assert res.code == 1 and "v2" in res.err and "not sealed by bead" in res.err, res.err
        assert sealed_files(vault.root, "user/pin") == ["v1.md.age", "v2.md.age"] and fact_files(vault.root, "user/pin") == []

    def test_an_interrupted_seal_is_reported_and_finished_by_sealing_again(self, bead, mem, vault):
        mem.write("user/pin", SECRET, "user")
        # A seal that died after writing its encrypted copy, before forget deleted the plaintext.
        mem.sealed.write("user/pin", 1, mem.current("user/pin").render(), vault_keys.recipient(vault))
        status = json.loads(bead("status", "--json").out)
        assert any("both sealed and plaintext" in p["problem"] for p in status["problems"])
        assert bead("seal", "user/pin").code == 0
        assert fact_files(vault.root, "user/pin") == [] and sealed_files(vault.root, "user/pin") == ["v1.md.age"]
        assert not any("both sealed" in p["problem"] for p in json.loads(bead("status", "--json").out)["problems"])

    def test_an_interrupted_secret_write_is_finished_by_writing_it_again_as_status_says(self, bead, mem, vault, monkeypatch):
        """A `bead write --sensitivity secret` killed after its encrypted copies: status said to run `bead seal
        KEY`, which seals the plaintext versions and never looks for the new value, so a turn that said it kept it in
        clear (an adversarial pass). Status names the write, and running it again takes the value out."""
        new = "zebra 9090 quasarkey"
        mem.write("user/pin", SECRET, "user")
        mem.append_turns("s1", [("user", f"the next pin is {new}", None, None)])

        def killed(*a, **k):  # asked right after the copies are written: the process dies there
            raise KeyboardInterrupt

        with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
            m.setattr(type(mem.tombstones), "ready", killed)
            write_secret(mem, "user/pin", new, "user")
        assert sealed_files(vault.root, "user/pin") == ["v1.md.age", "v2.md.age"] and leftovers(vault.root, new)
        problems = json.loads(bead("status", "--json").out)["problems"]
        (said,) = [p for p in problems if "both sealed and plaintext" in p["problem"]]
        assert "--sensitivity secret" in said["fix"], said
        assert bead("write", "user/pin", "-", "--type", "user", "--sensitivity", "secret", input=new).code == 0
        assert not leftovers(vault.root, new) and fact_files(vault.root, "user/pin") == []
        assert not any("both sealed" in p["problem"] for p in json.loads(bead("status", "--json").out)["problems"])

    @pytest.mark.parametrize("sealed_before", [False, True])
    def test_an_interrupted_secret_write_to_a_key_with_no_plaintext_is_named_too(
        self, bead, mem, vault, monkeypatch, sealed_before
    ):
        """A brand-new key (or one sealed already) has no plaintext to be caught beside its sealed copies: a write
        killed after its copy left the value in clear in the turns that said it, and status said nothing."""
        new = "zebra 9090 quasarkey"
        if sealed_before:
            write_secret(mem, "user/pin", SECRET, "user")
        mem.append_turns("s1", [("user", f"the next pin is {new}", None, None)])

        def problems() -> list[str]:
            return [p["problem"] for p in json.loads(bead("status", "--json").out)["problems"]]

        assert not any("interrupted" in p for p in problems()), problems()

        def killed(*a, **k):
            raise KeyboardInterrupt

        with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
            m.setattr(type(mem.tombstones), "ready", killed)
            write_secret(mem, "user/pin", new, "user")
        assert any("/raw/" in f"/{p}" for p in leftovers(mem.home.root, new)), "the turn still says it"
        (said,) = [p for p in problems() if "interrupted" in p]
        assert "`bead write user/pin --sensitivity secret` was interrupted" in said
        assert bead("write", "user/pin", "-", "--type", "user", "--sensitivity", "secret", input=new).code == 0
        assert not leftovers(mem.home.root, new)
        assert not any("interrupted" in p for p in problems())

    def test_an_interrupted_unseal_is_not_taken_for_an_interrupted_secret_write(self, bead, mem, vault):
        """An unseal writes the versions back oldest first: one stopped half-way leaves fewer plaintext versions than
        sealed ones, as a stopped secret write does; status said to run a secret write again (a review)."""
        mem.write("user/pin", SECRET, "user")
        mem.write("user/pin", SECRET + " two", "user")
        write_secret(mem, "user/pin", SECRET + " three", "user")
        sealed_v1 = mem.sealed.current("user/pin", vault_keys.unlock(vault, PASSPHRASE))
        plain_v1 = dataclasses.replace(sealed_v1, version=1, sensitivity="private", status="superseded")
        mem.restore_versions("user/pin", {1: plain_v1.render()})  # the unseal's first file, then the kill
        (said,) = [p for p in json.loads(bead("status", "--json").out)["problems"] if "both sealed" in p["problem"]]
        assert "--sensitivity secret" not in said["fix"] and "bead unseal user/pin" in said["fix"], said

    def test_a_secret_written_to_a_new_key_names_another_fact_that_holds_it_in_clear(self, bead, mem, vault):
        """`bead seal` names another fact that quotes the value (an ops note); a secret written to a key with no
        version yet said nothing, and the note went on carrying it in clear (an adversarial pass)."""
        mem.write("project/shop/ops", "Ops note: office wifi uses sunflower-7731-kappa, rotate monthly", "project")
        res = bead("write", "user/wifi", "-", "--type", "user", "--sensitivity", "secret", "--json", input="sunflower-7731-kappa")
        assert res.code == 0 and json.loads(res.out)["also_in"] == ["project/shop/ops"]
        assert "project/shop/ops still hold(s) the value in clear" in res.err


# ----- never on disk in clear ---------------------------------------------------------
def test_a_sealed_value_is_never_in_clear_through_seal_write_secret_and_unseal_then_reseal(mem, vault, monkeypatch):
    """Every file under the home, index.db and its -wal included, at each point of each flow."""
    mem.append_turns("s1", [("user", f"note this down: {SECRET}", None, None)])
    mem.write("user/pin", SECRET, "user")
    mem.write("user/editor", "Helix, default keymap", "user")
    assert leftovers(vault.root, SECRET), "the plaintext is on disk before the seal"
    points: dict[str, list[str]] = {}
    real_encrypt = vault_keys.encrypt

    card_old, card_new = "Card code 5555 oldcardvalue", "Card code 6666 newcardvalue"
    mem.write("user/card", card_old, "user")

    def watched(data: bytes, to):
        # Each moment something is encrypted: the values being written must not be on disk anywhere.
        points.setdefault("while encrypting", []).extend(leftovers(vault.root, SECRET2, card_new))
        return real_encrypt(data, to)

    # 1. seal
    ops.seal(mem, "user/pin")
    points["after seal"] = leftovers(vault.root, SECRET)
    # 2. secret writes, watched while they run: to a sealed key, and to a plaintext key (sealed first)
    monkeypatch.setattr(vault_keys, "encrypt", watched)
    write_secret(mem, "user/pin", SECRET2, "user")
    write_secret(mem, "user/card", card_new, "user")
    monkeypatch.setattr(vault_keys, "encrypt", real_encrypt)
    points["after write-secret"] = leftovers(vault.root, SECRET, SECRET2, card_old, card_new)
    # 3. unseal (plaintext by request), then seal again: nothing may be left behind
    ops.unseal(mem, "user/pin", PASSPHRASE)
    assert leftovers(vault.root, SECRET2), "unsealed, the value is plaintext again"
    ops.seal(mem, "user/pin")
    points["after unseal then reseal"] = leftovers(vault.root, SECRET, SECRET2, card_old, card_new)
    mem.close()
    points["after the process ends"] = leftovers(vault.root, SECRET, SECRET2, card_old, card_new)
    assert "while encrypting" in points
    assert points == {k: [] for k in points}
    assert sealed_files(vault.root, "user/pin") == ["v1.md.age", "v2.md.age"]
    assert sealed_files(vault.root, "user/card") == ["v1.md.age", "v2.md.age"]
    assert (vault.root / "index.db").exists()


# ----- excluded from everything that reads memory ---------------------------------------
def _request(text: str, session: str) -> tuple[bytes, dict]:
    body = {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": False,
        "system": [{"type": "text", "text": "You are a test.\n - Primary working directory: /tmp/proj-x"}],
        "messages": [{"role": "user", "content": text}],
    }
    return json.dumps(body).encode(), {
        "content-type": "application/json",
        "x-api-key": "sk-test",
        "anthropic-version": "2023-06-01",
        "x-bead-session": session,
    }


def test_the_proxy_never_injects_a_sealed_fact(proxy_client, upstream, mem, vault):
    mem.write("user/bank-pin", f"My bank card {SECRET}", "user")  # a user fact: always in the pinned block
    mem.write("user/editor", "Helix, default keymap", "user")
    proxy = proxy_client()
    proxy.post(*_request(f"which bank card recovery {TOKEN}?", "before"))
    proxy.settle()
    assert TOKEN.encode() in upstream.requests[-1].body, "before sealing, the fact is injected"
    ops.seal(mem, "user/bank-pin")
    write_secret(mem, "user/bank-pin", f"My bank card {SECRET2}", "user")
    proxy.post(*_request(f"which bank card recovery {TOKEN} wqplmokn?", "after"))
    proxy.settle()
    sent = upstream.requests[-1].body
    assert b"Helix" in sent, "the pinned block is still there"
    assert b"4711" not in sent and b"9902" not in sent and b"bank-pin" not in sent


def test_the_proxy_never_points_to_a_sealed_fact(bead_home, upstream, mem, vault):
    """A key the conversation could be pointed to is never named once it is sealed, nor its title shown."""
    from conftest import ProxyClient

    for name, body in (
        ("celery-broker-host", "The celery broker host for staging is mq-7.internal."),
        ("celery-beat-lock", "Celery beat takes a redis lock named beat-leader for 30 s."),
        ("celery-vault-pin", "Celery flower admin login zqxjvbnmkw opens the staging broker."),
    ):
        mem.write(f"project/proj-x/{name}", body, "project", trust="agent_observed")
    ops.seal(mem, "project/proj-x/celery-vault-pin")
    proxy = ProxyClient(
        make_proxy_app(
            bead_home,
            upstream.url,
            config=parse("recall:\n  evidence_threshold: 50\n  pointers: 8\n  pointer_budget_tokens: 400\n"),
        )
    )
    try:
        opening = [{"role": "user", "content": "good morning"}]
        proxy.post(*_request_messages(opening, "sealed-ptr"))
        proxy.settle()
        proxy.post(
            *_request_messages(
                [
                    *opening,
                    {"role": "assistant", "content": "Morning."},
                    {"role": "user", "content": "celery flower admin login for the staging broker?"},
                ],
                "sealed-ptr",
            )
        )
        proxy.settle()
    finally:
        proxy.close()
    sent = upstream.requests[-1].body
    assert b"- celery-broker-host (inferred)" in sent, "the other facts are pointed to (by the bare name of the project's fact)"
    assert b"celery-vault-pin" not in sent and b"zqxjvbnmkw" not in sent and b"Celery flower admin" not in sent


def _request_messages(messages: list, session: str) -> tuple[bytes, dict]:
    body = {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": False,
        "system": [{"type": "text", "text": "You are a test.\n - Primary working directory: /tmp/proj-x"}],
        "messages": messages,
    }
    return json.dumps(body).encode(), {
        "content-type": "application/json",
        "x-api-key": "sk-test",
        "anthropic-version": "2023-06-01",
        "x-bead-session": session,
    }


@pytest.fixture
def model():
    m = FakeModel()
    yield m
    m.close()


def test_the_dream_never_sends_a_sealed_value(bead_home, vault, model, monkeypatch):
    monkeypatch.setenv("BEAD_TEST_KEY", "sk-test")
    cfg = parse(
        f"owner: t\ndream:\n  provider: openai\n  model: test-model\n  base_url: {model.url}/v1\n"
        "  api_key_env: BEAD_TEST_KEY\n  timeout_s: 5\n"
    )
    with Memory(vault, cfg) as m:
        m.write("user/bank-pin", f"My bank card {SECRET}", "user")
        m.append_turns("s1", [("user", "let us pay the rent", None, None), ("assistant", "ok", None, None)])
        Dream(m).run()
        assert TOKEN in json.dumps(model.requests[-1][2]), "before sealing, the dream's context holds the fact"
        ops.seal(m, "user/bank-pin")
        write_secret(m, "user/bank-pin", f"My bank card {SECRET2}", "user")
        n = len(model.requests)
        m.append_turns(
            "s2", [("user", "what was my bank card recovery again?", None, None), ("assistant", "no idea", None, None)]
        )
        Dream(m).run()
        sent = [json.dumps(r[2]) for r in model.requests[n:]]
        assert sent and not any(TOKEN in s or "wqplmokn" in s or "4711" in s or "9902" in s for s in sent)


def test_the_rerank_never_sees_a_sealed_fact(bead_home, vault, model, monkeypatch):
    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    cfg = parse(
        "rerank:\n  enabled: true\n  timeout_ms: 4000\n  min_evidence: 0.1\n"
        f"dream:\n  provider: openai\n  model: test-model\n  base_url: {model.url}/v1\n  api_key_env: BEAD_TEST_KEY\n"
    )
    eng = make_proxy_app(bead_home, "http://127.0.0.1:9", config=cfg).extensions["bead.engine"]
    with Memory(vault, cfg) as m:
        m.write("global/bank-card", f"The shop's bank card recovery code is {SECRET}", "reference")
        m.write("global/deploy", "Deploys go to Fly.io from main.", "reference")
        m.write("global/bank-desk", "The shop's bank card desk answers recovery questions from 9 to 5.", "reference")
        body = json.dumps(
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "where is the shop's bank card recovery code?"}],
            }
        ).encode()
        eng.prepare(body, {"x-bead-session": "rr-before"})
        assert TOKEN in json.dumps(model.requests[-1][2]), "before sealing, the rerank is shown the fact"
        ops.seal(m, "global/bank-card")
        write_secret(m, "global/bank-card", f"The shop's bank card recovery code is {SECRET2}", "reference")
        n = len(model.requests)
        eng.prepare(body, {"x-bead-session": "rr-after"})
        after = [json.dumps(r[2]) for r in model.requests[n:]]
        assert after and "bank-desk" in after[-1], "the rerank still runs on the other candidates"
        assert not any(TOKEN in a or "wqplmokn" in a or "4711" in a or "9902" in a for a in after)


def test_search_finds_no_sealed_value(bead, mem, vault):
    mem.write("user/bank-pin", SECRET, "user")
    assert "user/bank-pin" in bead("search", TOKEN).out, "before sealing, search finds it"
    assert bead("seal", "user/bank-pin").code == 0
    write_secret(mem, "user/bank-pin", SECRET2, "user")
    for query in (TOKEN, "wqplmokn", "bank pin"):
        for extra in ((), ("--all-versions",)):
            out = bead("search", query, *extra).out
            assert "bank-pin" not in out and TOKEN not in out, (query, extra)


def test_the_core_reads_a_future_mcp_tool_would_use_see_no_sealed_key(mem, vault):
    """recall/history/search for any entry point go through Memory and the index: a sealed key has neither."""
    write_secret(mem, "user/bank-pin", SECRET, "user")
    assert mem.is_sealed("user/bank-pin")
    assert mem.current("user/bank-pin") is None and mem.versions("user/bank-pin").facts == ()
    assert not any(TOKEN in body for _key, body in mem.index.current_bodies())
    assert mem.index.fact_candidates(TOKEN, 10, current_only=False) == []
    assert mem.index.pinned_candidates(None) == []


# ----- bead status -------------------------------------------------------------------
def test_status_shows_the_vault_and_the_sealed_key_count(bead, bead_home, vault_template):
    out = bead("status").out
    assert "vault       none (`bead vault init` creates it" in out
    home = Home(bead_home)
    for name in ("recipient.txt", "identity.age"):
        safe.atomic_write(home.vault / name, (vault_template / name).read_bytes(), root=home.root)
    with Memory(home, Config(owner="t")) as m:
        write_secret(m, "user/pin", SECRET, "user")
        write_secret(m, "user/pin", SECRET2, "user")
    assert "vault       X25519, 1 sealed key(s) (2 versions)" in bead("status").out
    data = json.loads(bead("status", "--json").out)["vault"]
    assert data["kind"] == "x25519" and data["sealed_keys"] == 1


# ----- the age command-line tool ---------------------------------------------------------
needs_age = pytest.mark.skipif(
    not (shutil.which("age") and shutil.which("age-keygen")),
    reason="the age command-line tool (age, age-keygen) is not installed",
)


def _age_with_passphrase(args: list[str], passphrase: str) -> tuple[int, str]:
    """Run `age` on a terminal of its own (it reads a passphrase only from a terminal) and type the passphrase."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: age, with the pty as its controlling terminal
        try:
            os.execvp("age", ["age", *args])
        finally:
            os._exit(127)
    out = b""
    typed = False
    end = time.monotonic() + 60
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], 1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: age closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if not typed and b"passphrase" in out.lower():
                os.write(fd, (passphrase + "\n").encode())
                typed = True
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@needs_age
def test_files_sealed_here_decrypt_with_the_age_cli(mem, vault, tmp_path):
    write_secret(mem, "user/pin", SECRET, "user")
    sealed = vault.sealed_file("user/pin", 1)
    # With the identity file as bead keeps it: age asks for its passphrase.
    code, out = _age_with_passphrase(["-d", "-i", str(vault.vault_identity), str(sealed)], PASSPHRASE)
    assert code == 0 and SECRET in out and "sensitivity: secret" in out
    # With the identity decrypted to a plain key file (outside the home).
    key_file = tmp_path / "key.txt"
    key_file.write_bytes(vault_keys.pyrage().passphrase.decrypt(vault.vault_identity.read_bytes(), PASSPHRASE))
    p = subprocess.run(["age", "-d", "-i", str(key_file), str(sealed)], capture_output=True, timeout=60)
    assert p.returncode == 0 and SECRET.encode() in p.stdout


@needs_age
def test_files_sealed_by_the_age_cli_read_here(bead, vault):
    recipient = vault.vault_recipient.read_text().strip()
    plain = (
        "---\nid: user/pin@v1\nkey: user/pin\ntype: user\nowner: someone\nstatus: sealed\nversion: 1\n"
        f"trust: user_stated\nsensitivity: secret\n---\n{SECRET}\n"
    )
    target = vault.sealed_file("user/pin", 1)
    safe.ensure_dir(target.parent, root=vault.root)
    p = subprocess.run(["age", "-r", recipient, "-o", str(target)], input=plain.encode(), capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    target.chmod(0o600)
    res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
    assert res.code == 0 and res.out.strip() == SECRET


# ----- hybrid post-quantum through age-plugin-pq (a stand-in; see tests/age_standin.py) -------------
def _standins(tmp_path: Path, keygen: str = "keygen", plugin: bool = True) -> Path:
    bin_dir = tmp_path / "standin-bin"
    bin_dir.mkdir(exist_ok=True)
    tools = {"age-keygen": keygen, **({"age-plugin-pq": "plugin"} if plugin else {})}
    for name, mode in tools.items():
        p = bin_dir / name
        p.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" {mode} "$@"\n')
        p.chmod(0o755)
    return bin_dir


def test_hybrid_key_when_age_plugin_pq_is_on_path_through_the_plugin_protocol(
    bead, bead_home, tmp_path, monkeypatch, low_work_factor
):
    monkeypatch.setenv("PATH", f"{_standins(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    res = bead("vault", "init", *PP, env=PP_ENV)
    assert res.code == 0, res.err
    assert "hybrid post-quantum (age-plugin-pq)" in res.out
    home = Home(bead_home)
    assert home.vault_recipient.read_text().startswith("age1pq1")
    st = bead("vault", "status").out
    assert "hybrid post-quantum (age-plugin-pq)" in st and str(tmp_path / "standin-bin" / "age-plugin-pq") in st
    assert "vault       hybrid post-quantum (age-plugin-pq), 0 sealed key(s)" in bead("status").out
    assert bead("write", "user/pin", "-", "--type", "user", "--sensitivity", "secret", input=SECRET).code == 0
    assert b"\n-> standin-pq " in home.sealed_file("user/pin", 1).read_bytes()[:200], "sealed through the plugin"
    shown = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
    assert shown.code == 0 and shown.out.strip() == SECRET
    # Without the plugin the vault says why it cannot work, and nothing is sealed in clear.
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert any("age-plugin-pq is not on PATH" in p["problem"] for p in json.loads(bead("status", "--json").out)["problems"])
    res = bead("write", "user/pin", SECRET2, "--type", "user", "--sensitivity", "secret")
    assert res.code == 1 and "age-plugin-pq" in res.err and "Traceback" not in res.err
    res = bead("sealed", "show", "user/pin", *PP, env=PP_ENV)
    assert res.code == 1 and "age-plugin-pq" in res.err and "Traceback" not in res.err
    assert leftovers(bead_home, SECRET, SECRET2) == []


def test_an_age_keygen_without_pq_makes_an_x25519_vault_and_says_why(bead, bead_home, tmp_path, monkeypatch, low_work_factor):
    monkeypatch.setenv("PATH", f"{_standins(tmp_path, keygen='old-keygen')}{os.pathsep}{os.environ['PATH']}")
    res = bead("vault", "init", *PP, env=PP_ENV)
    assert res.code == 0 and "X25519" in res.out
    assert "age-plugin-pq is on PATH, but" in res.err and "age 1.3" in res.err
    assert recipient_kind(Home(bead_home)) == "x25519"


def test_insisting_on_pq_without_the_plugin_fails_and_creates_nothing(bead, bead_home, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(_standins(tmp_path, plugin=False)))  # an age-keygen that makes pq keys, no plugin
    res = bead("vault", "init", "--kind", "pq", *PP, env=PP_ENV)
    assert res.code == 1 and "age-plugin-pq is not on PATH" in res.err
    assert not Home(bead_home).vault.exists()


def test_an_x25519_vault_keeps_working_when_the_plugin_turns_up(bead, mem, vault, tmp_path, monkeypatch):
    write_secret(mem, "user/pin", SECRET, "user")
    monkeypatch.setenv("PATH", f"{_standins(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    assert write_secret(mem, "user/pin", SECRET2, "user").fact.version == 2
    assert b"-> X25519 " in vault.sealed_file("user/pin", 2).read_bytes()[:200]
    assert "X25519" in bead("vault", "status").out
    assert bead("sealed", "show", "user/pin", *PP, env=PP_ENV).out.strip() == SECRET2


def recipient_kind(home: Home) -> str:
    return vault_keys.recipient_kind(home.vault_recipient.read_text().strip())


def test_the_store_alone_never_writes_a_secret_in_clear(mem):
    """FactStore.write (below Memory's routing) refuses a secret instead of writing it."""
    with pytest.raises(RefusedWrite):
        mem.facts.write("user/pin", SECRET, "user", sensitivity="secret")
    assert not mem.home.fact_dir("user/pin").exists()


def test_a_dream_proposal_for_a_sealed_key_is_skipped_not_fatal(bead_home, vault, model, monkeypatch):
    monkeypatch.setenv("BEAD_TEST_KEY", "sk-test")
    cfg = parse(
        f"owner: t\ndream:\n  provider: openai\n  model: test-model\n  base_url: {model.url}/v1\n"
        "  api_key_env: BEAD_TEST_KEY\n  timeout_s: 5\n"
    )
    with Memory(vault, cfg) as m:
        write_secret(m, "user/bank-pin", SECRET, "user")
        m.append_turns(
            "s1",
            [
                ("user", "the bank sent a new card", None, None, {"source": "typed"}),
                ("assistant", "noted", None, None, {"source": "assistant"}),
            ],
        )
        from bead.dream import second

        model.by_system[second.SYSTEM[:80]] = '{"kind": "fact", "reason": "a fact about the person"}'
        model.answers.append(
            json.dumps(
                {
                    "facts": [
                        {
                            "key": "user/bank-pin",
                            "type": "user",
                            "turns": [1],
                            "value": "The bank sent a new card.",
                            "replaces": None,
                        }
                    ]
                }
            )
        )
        rep = Dream(m).run()
        assert any("user/bank-pin" in s for s in rep.sessions["s1"]["skipped"])
        assert m.current("user/bank-pin") is None


def test_without_pyrage_bead_runs_and_the_vault_says_how_to_add_it(bead, mem, vault, monkeypatch):
    """A platform without a pyrage wheel installs bead without it: only the vault's commands stop, and say why."""
    monkeypatch.setitem(sys.modules, "pyrage", None)  # `import pyrage` now raises ImportError
    res = bead("write", "user/pin", SECRET, "--type", "user", "--sensitivity", "secret")
    assert res.code == 1 and "pyrage" in res.err and "pip install pyrage" in res.err and "Rust" in res.err
    assert "Traceback" not in res.err and leftovers(vault.root, SECRET) == []
    assert bead("write", "user/editor", "Helix", "--type", "user").code == 0
    assert "vault       X25519, 0 sealed key(s)" in bead("status").out


def test_a_seal_that_fails_half_way_leaves_the_key_as_it_was(mem, vault, monkeypatch):
    mem.write("user/pin", "Bank PIN 1000 recovery oldoldold", "user")
    mem.write("user/pin", SECRET, "user")
    real_encrypt, calls = vault_keys.encrypt, []

    def second_fails(data: bytes, to):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the disk is full")
        return real_encrypt(data, to)

    monkeypatch.setattr(vault_keys, "encrypt", second_fails)
    with pytest.raises(RuntimeError):
        ops.seal(mem, "user/pin")
    assert len(calls) == 2
    assert [n for n in fact_files(vault.root, "user/pin") if n.endswith(".md")] == ["v1.md", "v2.md"]
    assert sealed_files(vault.root, "user/pin") == []
    assert mem.current("user/pin").body == SECRET and not mem.is_sealed("user/pin")


KEY_IN_PROSE = "my key is sk-ant-api03-" + "Qw7Lm2Rt5Yp8Vb4Nc6Hd1Jk0Fs7Ga2TuZ3x9" * 2 + "AA"


def test_a_credential_is_never_written_in_plain_text(bead, bead_home):
    """`bead write` of a value the secret scan flags is refused with the way to seal it; nothing reaches disk."""
    out = bead("write", "user/k", KEY_IN_PROSE, "--type", "user")
    assert out.code == 1 and "looks like a credential" in out.err and "--sensitivity secret" in out.err
    assert "bead vault init" in out.err, "no vault here: the hint says how to make one"
    assert not [p for p, data in all_bytes_under(Path(bead_home)).items() if b"Qw7Lm2Rt5" in data]


def test_a_credential_written_as_a_secret_is_sealed(bead, bead_home, vault):
    out = bead("write", "user/k", KEY_IN_PROSE, "--type", "user", "--sensitivity", "secret")
    assert out.code == 0, out.err
    assert not [p for p, data in all_bytes_under(Path(bead_home)).items() if b"Qw7Lm2Rt5" in data]


def test_seal_reaches_the_secret_where_it_was_said_in_other_words(mem, vault):
    """The README's sentence case: the conversation said the code and the PIN in a sentence; the fact holds
    them in another order. Sealing the fact redacts its codes in that turn too, and recall finds none."""
    from datetime import UTC, datetime

    from bead.core import forget, query

    said = "the bank gave me recovery code QX-88 and the card PIN is 4711"
    mem.append_turns("bank", [("user", said, datetime(2026, 11, 30, tzinfo=UTC), None, {"source": "typed"})])
    mem.write("user/bank-pin", "4711, recovery code QX-88", "user")
    plan = forget.plan_seal(mem, "user/bank-pin")
    assert plan.summary(mem.home.store)["raw_turns_in_part"] == 1, "the preview says where, before anything changes"
    summary = ops.seal(mem, "user/bank-pin")
    assert summary["raw_turns_redacted_in_part"] == 1
    text = mem.raw.read(mem.raw.find("bank"))[0].text
    assert "QX-88" not in text and "recovery code [forgotten]" in text
    found = query.recall(mem, "recovery code bank")
    assert not any("QX-88" in e.text for e in found.excerpts)
    assert leftovers(mem.home.root, "QX-88") == []


def test_seal_leaves_no_vector_of_the_turn_it_redacts(semantic_on, bead_home, vault):
    """bead[semantic]: the vector of a turn that said the sealed value goes with the turn's row (issue #25)."""
    from datetime import UTC, datetime

    from bead.index import semantic

    mem = Memory(vault, Config(owner="t"))
    try:
        said = "the bank gave me recovery code QX-88 and the card PIN is 4711"
        mem.append_turns("bank", [("user", said, datetime(2026, 11, 30, tzinfo=UTC), None, {"source": "typed"})])
        model = semantic.model()
        assert model is not None and semantic.Backfill(mem.index, model).run() == 1
        (row,) = mem.index.raw_candidates("recovery code", 1)
        blob = mem.index.raw_vectors([row["rowid"]])[row["rowid"]]
        mem.write("user/bank-pin", "4711, recovery code QX-88", "user")
        ops.seal(mem, "user/bank-pin")
        assert not mem.index.raw_vectors([row["rowid"]])
    finally:
        mem.close()
    assert not any(blob in data for data in all_bytes_under(Path(bead_home)).values())


def test_forget_match_reaches_a_code_said_in_other_words(mem, bead):
    from datetime import UTC, datetime

    mem.append_turns(
        "s",
        [
            ("user", "the door code is ZK-4471-B, keep it", datetime(2026, 11, 30, tzinfo=UTC), None),
            ("user", "unrelated: the build takes 41 s", datetime(2026, 11, 30, tzinfo=UTC), None),
        ],
    )
    preview = bead("forget", "--match", "door code ZK-4471-B", input="n\n")
    assert "nothing was changed" in preview.err and "ZK-4471-B" not in preview.out + preview.err
    out = bead("forget", "--match", "door code ZK-4471-B", "--yes")
    assert out.code == 0, out.err
    texts = [t.text for t in mem.raw.read(mem.raw.find("s"))]
    assert texts == ["the door code is [forgotten], keep it", "unrelated: the build takes 41 s"]
    assert leftovers(mem.home.root, "ZK-4471-B") == []


def test_seal_at_a_terminal_shows_what_it_will_change_and_asks(bead, mem, vault, monkeypatch):
    from datetime import UTC, datetime

    monkeypatch.setattr(cli_common, "at_terminal", lambda: True)
    mem.append_turns(
        "bank",
        [
            (
                "user",
                "the bank gave me QX-88 to keep, in the blue folder",
                datetime(2026, 11, 30, tzinfo=UTC),
                None,
                {"source": "typed"},
            )
        ],
    )
    mem.write("user/bank-code", "recovery code QX-88 for the bank", "user")
    no = bead("seal", "user/bank-code", input="n\n")
    assert no.code == 1 and "1 in part" in no.err and "Seal it?" in no.err
    assert not mem.is_sealed("user/bank-code") and "QX-88" in mem.raw.read(mem.raw.find("bank"))[0].text
    yes = bead("seal", "user/bank-code", input="y\n")
    assert yes.code == 0 and "1 in part" in yes.out and mem.is_sealed("user/bank-code")


def test_unseal_keeps_a_credential_sealed(mem, vault):
    """Unsealing would write the key back in plain text, where the next proxied request would carry it."""
    write_secret(mem, "user/api-key", KEY_IN_PROSE, "user")
    with pytest.raises(RefusedWrite, match="credential"):
        ops.unseal(mem, "user/api-key", PASSPHRASE)
    assert mem.is_sealed("user/api-key") and leftovers(mem.home.root, "Qw7Lm2Rt5") == []


def test_bead_list_shows_a_sealed_key_and_nothing_of_its_value(bead, mem, vault):
    write_secret(mem, "user/bank-pin", SECRET, "user")
    mem.write("user/editor", "Helix", "user")
    r = bead("list", "--json")
    rows = {x["key"]: x for x in json.loads(r.out)}
    assert rows["user/bank-pin"]["status"] == "sealed" and rows["user/bank-pin"]["id"] is None
    assert rows["user/editor"]["status"] == "current"
    assert "4711" not in r.out and "sealed" in bead("list").out


def test_an_unseal_during_a_seal_waits_for_it_and_the_value_is_never_lost(mem, vault, monkeypatch):
    """A seal deletes the plaintext last; an unseal that ran before that brought the plaintext back and deleted the
    sealed copies, and the seal then deleted the plaintext: the value was in neither place. An unseal waits for a
    whole forget or seal (the review queue's lock), then restores what the seal sealed."""
    import threading

    from bead.core import forget

    mem.write("user/door", "The door code is 7301 east", "user")
    ops.seal(mem, "user/door")  # sealed once, so the unseal below has something to restore
    ops.unseal(mem, "user/door", PASSPHRASE)
    paused, go = threading.Event(), threading.Event()
    real = forget._delete_last

    def last_step(m, plan):
        paused.set()  # the seal is between its scrubs and its deletion of the plaintext
        go.wait(30)
        return real(m, plan)

    monkeypatch.setattr(forget, "_delete_last", last_step)
    unsealed: list[object] = []
    seal = threading.Thread(target=lambda: ops.seal(mem, "user/door"))
    seal.start()
    assert paused.wait(30)
    other = Memory(mem.home, mem.config)
    unseal = threading.Thread(target=lambda: unsealed.append(ops.unseal(other, "user/door", PASSPHRASE)))
    unseal.start()
    unseal.join(1.0)  # without the lock it finishes here, inside the seal's run
    go.set()
    seal.join(30)
    unseal.join(30)
    other.close()
    assert unsealed, "the unseal ran once the seal was done"
    assert mem.current("user/door") is not None and mem.current("user/door").body == "The door code is 7301 east"


def test_a_seal_killed_inside_its_last_step_is_finished_by_running_it_again(mem, vault, monkeypatch):
    """The last step deletes the plaintext files inside one index transaction: a kill there rolls the index's change
    back and leaves the plaintext body in index.db, with the files gone and the sealed copies written, and a
    pinned block may serve it from there meanwhile (a state line). Running the seal again said "sealed already"
    and left both; it now finishes the seal: the index and every line that holds the value."""
    from bead.core import forget
    from bead.core.state import Conversations

    body = "The alarm code is 5150 north"
    mem.write("user/alarm", body, "user")

    def killed(m, plan):
        for key, numbers in plan.keys.items():
            m.facts.delete_versions(key, numbers)  # the files went; the index's transaction never committed
        raise KeyboardInterrupt  # stands for the SIGKILL: nothing after this line of the seal runs

    monkeypatch.setattr(forget, "_delete_last", killed)
    with pytest.raises(KeyboardInterrupt):
        ops.seal(mem, "user/alarm")
    monkeypatch.undo()
    assert mem.is_sealed("user/alarm") and "index.db" in " ".join(leftovers(mem.home.root, body))
    Conversations(mem.home).load("conv-after-the-kill").set_pinned(f"- alarm (stated): {body}", ["user/alarm@v1"])
    assert ops.preview_seal(mem, "user/alarm").session_lines  # the preview names what is left; nothing changes
    assert ops.seal(mem, "user/alarm")["sealed"] == [1]
    assert leftovers(mem.home.root, body) == []
    assert mem.is_sealed("user/alarm") and ops.show(mem, "user/alarm", PASSPHRASE).body == body
    with pytest.raises(BeadError, match="sealed already"):
        ops.seal(mem, "user/alarm")


def test_a_seal_as_another_key_killed_inside_its_last_step_is_finished_by_running_it_again(mem, vault, monkeypatch):
    """The same kill under `--as NEWKEY`: running it again said "NEWKEY has versions already", and a plain seal of
    the key "nothing to seal", with the body left in index.db (a review). The same command finishes it now."""
    from bead.core import forget

    body = "The alarm code is 5150 north"
    mem.write("user/alarm-5150-north", body, "user")

    def killed(m, plan):
        for key, numbers in plan.keys.items():
            m.facts.delete_versions(key, numbers)
        raise KeyboardInterrupt

    monkeypatch.setattr(forget, "_delete_last", killed)
    with pytest.raises(KeyboardInterrupt):
        ops.seal(mem, "user/alarm-5150-north", as_key="user/secret-1")
    monkeypatch.undo()
    assert "index.db" in " ".join(leftovers(mem.home.root, body))
    assert ops.seal(mem, "user/alarm-5150-north", as_key="user/secret-1")["sealed"] == [1]
    assert leftovers(mem.home.root, body) == [] and ops.show(mem, "user/secret-1", PASSPHRASE).body == body
    with pytest.raises(BeadError, match="has versions already"):
        mem.write("user/other-thing", "something else", "user")
        ops.seal(mem, "user/other-thing", as_key="user/secret-1")


def test_a_seal_as_killed_before_its_blind_is_finished_by_running_it_again(bead, mem, vault, monkeypatch):
    """`seal KEY --as NEWKEY` takes KEY's hash out of every log once its move is done (a word list gives a key made
    of the value's words back from it). Killed after the move and before that blind, running it again said "NEWKEY
    has versions already", and the hash stayed for good (a review): the same command finishes the blind now."""
    key = "project/shop/vault-phrase-maple-quartz"
    mem.write(key, "the vault phrase is maple quartz lantern", "project")
    real = ops._moved

    def killed(m, k, a, phase, mark=None):
        if phase == "done":
            raise KeyboardInterrupt
        real(m, k, a, phase, mark)

    monkeypatch.setattr(ops, "_moved", killed)
    with pytest.raises(KeyboardInterrupt):
        ops.seal(mem, key, as_key="project/shop/secret-1")
    monkeypatch.undo()
    gone = key_hash(key).encode()
    assert [p for p, data in all_bytes_under(mem.home.root).items() if gone in data], "the kill left the hash"
    res = bead("seal", key, "--as", "project/shop/secret-1", "--yes")
    assert res.code == 0 and "sealed project/shop/secret-1: 1 version(s)" in res.out, res.err
    assert [p for p, data in all_bytes_under(mem.home.root).items() if gone in data] == []


def test_a_seal_as_into_a_sealed_key_of_a_key_only_forgotten_is_refused(bead, mem, vault):
    """The rerun that finishes a blind is for a move that began: a key forgotten otherwise (its lines keep its hash)
    sealed --as a key already sealed is refused, and the forget's lines are left as they are (a review found a false
    "sealed" and its lines rewritten)."""
    from bead.core import forget

    mem.write("project/shop/secret-1", "the staging runbook lives in the ops wiki", "project")
    ops.seal(mem, "project/shop/secret-1")
    key = "project/shop/old-note"
    mem.write(key, "deploys need two reviewers", "project")
    forget.apply(mem, forget.plan_target(mem, key))
    res = bead("seal", key, "--as", "project/shop/secret-1", "--yes")
    assert res.code != 0 and "sealed project/shop/secret-1" not in res.out, res.out
    assert key_hash(key) in mem.home.audit_log.read_text()


def test_one_seal_as_blinds_the_key_with_one_token(mem, vault):
    """The lines a `seal --as` changes (the key's writes, an earlier forget's lines and tombstones, the move's own)
    name the key by one token, so they still go together (a review found three)."""
    from bead.core import forget

    key = "project/shop/vault-phrase-maple-quartz"
    mem.write(key, "the vault phrase was birch oak", "project")
    forget.apply(mem, forget.plan_target(mem, key))
    mem.write(key, "the vault phrase is maple quartz lantern", "project")
    ops.seal(mem, key, as_key="project/shop/secret-1")
    logs = mem.home.audit_log.read_text() + mem.home.tombstones_log.read_text()
    assert len(set(re.findall(r"blinded-[0-9a-f]{32}", logs))) == 1, logs


def test_seal_removes_the_skill_file_install_wrote_from_the_fact(bead, mem, vault, tmp_path):
    """A sealed value leaves every clear copy, the skill file `bead skills install` wrote into a project too."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    mem.write("project/shop/door", "The back door code is 4471 and changes monthly.", "project", pinned=True)
    assert bead("skills", "install", "--dir", str(project)).code == 0
    skill = project / ".claude/skills/bead-door/SKILL.md"
    assert b"4471" in skill.read_bytes()
    res = bead("seal", "project/shop/door")
    assert res.code == 0, res.err
    assert not skill.exists() and f"removed {skill}" in res.err
    assert [p for p in project.rglob("*") if p.is_file() and b"4471" in p.read_bytes()] == []


def test_a_secret_write_says_which_skill_files_it_removed_and_which_it_left(bead, mem, vault, tmp_path):
    """`bead write KEY - --sensitivity secret` seals the old value: it removed the skill file made from it without a
    word, and left an edited copy in another checkout unnamed (an adversarial pass)."""
    key = "user/deploy"
    mem.write(key, "Deploy with token ZQX-4471 only from main.", "feedback", pinned=True)
    first, second = tmp_path / "first", tmp_path / "second"
    for d in (first, second):
        (d / ".git").mkdir(parents=True)
        assert bead("skills", "install", "--dir", str(d)).code == 0
    edited = second / ".claude/skills/bead-deploy/SKILL.md"
    edited.write_text(edited.read_text() + "\nmy note\n")
    r = bead("write", key, "-", "--type", "feedback", "--sensitivity", "secret", input="a new secret\n")
    assert r.code == 0, r.err
    ours = first / ".claude/skills/bead-deploy/SKILL.md"
    assert not ours.exists() and f"removed {ours}" in r.err
    assert f"warning: left {edited}" in r.err


def test_a_seal_as_another_key_killed_after_its_copies_is_named_and_finished_by_running_it_again(bead, mem, vault, monkeypatch):
    """Killed after the encrypted copies under NEWKEY and before the plaintext went: running the same command again
    said "NEWKEY has versions already" and `bead status` said nothing (an adversarial pass). The seal's beginning is
    now an audit line (the old key by its hash only); the same command takes its own copies back and seals again."""
    body, key = "The alarm code is 5150 north", "user/alarm-5150-north"
    mem.write(key, body, "user")

    def killed(self):
        raise KeyboardInterrupt  # stands for the SIGKILL right after the copies

    monkeypatch.setattr(type(mem.tombstones), "ready", killed)
    with pytest.raises(KeyboardInterrupt):
        ops.seal(mem, key, as_key="user/secret-1")
    monkeypatch.undo()
    assert sealed_files(vault.root, "user/secret-1") == ["v1.md.age"] and mem.current(key).body == body

    def problems() -> str:
        return " ".join(p["problem"] for p in json.loads(bead("status", "--json").out)["problems"])

    assert f"`bead seal {key} --as user/secret-1` was interrupted" in problems()
    other = "user/other-thing"
    mem.write(other, "something else entirely", "user")
    with pytest.raises(BeadError, match="has versions already"):
        ops.seal(mem, other, as_key="user/secret-1")  # another key's seal never takes those copies
    assert ops.seal(mem, key, as_key="user/secret-1")["sealed"] == [1]
    assert leftovers(mem.home.root, body) == [] and ops.show(mem, "user/secret-1", PASSPHRASE).body == body
    assert "was interrupted" not in problems()
    mem.write(key, "a new value under the old name", "user")
    with pytest.raises(BeadError, match="has versions already"):
        ops.seal(mem, key, as_key="user/secret-1")  # a seal that finished: its copies are the secret now
    assert ops.show(mem, "user/secret-1", PASSPHRASE).body == body


def test_a_secret_write_finished_before_seal_lines_named_their_key_is_not_called_interrupted(bead, mem, vault):
    """Homes written before a finished seal's audit line named its key: their secret writes to new keys end in a
    seal line naming none, which is how status tells them from one stopped before its scrub."""
    write_secret(mem, "user/pin", SECRET, "user")
    log = mem.home.root / "audit.log"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[-1]["event"] == "seal" and lines[-1].pop("key") == "user/pin"
    log.write_text("".join(json.dumps(e) + "\n" for e in lines))  # as the older bead wrote it
    assert not [p for p in json.loads(bead("status", "--json").out)["problems"] if "interrupted" in p["problem"]]
