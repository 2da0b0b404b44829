"""Sealed versions: ``vault/sealed/<key>/v<N>.md.age``, one age file per version.

The plain text inside is the version file a plaintext fact would have
(frontmatter and body, ``status: sealed``, ``sensitivity: secret``), so
``age -d`` shows an ordinary bead fact. Version numbers come from the file
names, so writing a version decrypts nothing; the current version is the
highest one that decrypts and parses, as for plaintext facts (an old version
that still says ``current`` inside does no harm).

This module moves files; the keys and the encryption are ``keys``'s, and
which of plaintext or sealed a key is, ``bead.core.seal``'s. Nothing here
touches the index: a sealed version never has a row.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import files as safe
from ..errors import InvalidKey
from ..paths import Home, sealed_number
from ..store.facts import Fact, parse_fact
from ..store.keys import validate_key
from . import keys as vault_keys

SEALED_MAX_BYTES = 32 * 1024 * 1024  # far above any fact (store.max_fact_bytes is 64 KB by default)


class SealedStore:
    def __init__(self, home: Home):
        self.home = home
        self.root = home.sealed_dir

    def numbers(self, key: str) -> list[int]:
        """The sealed version numbers of ``key``, from the file names alone (sorted)."""
        names = safe.listdir(self.home.sealed_key_dir(validate_key(key)), root=self.home.root)
        return sorted(n for name in names if (n := sealed_number(name)) is not None)

    def has(self, key: str) -> bool:
        return bool(self.numbers(key))

    def keys(self, links: list[Path] | None = None, odd: list[str] | None = None) -> Iterator[str]:
        """Every key with a sealed version (sorted). A folder whose name is no key (made by hand, or by another
        tool: `project/BAD`) is left out, and named in ``odd``: one such folder took `bead status`, `list` and `sealed
        list` down with an invalid key error (an outside attack)."""
        out = []
        for folder, _dirs, names in safe.walk(self.root, root=self.home.root, links=links):
            if any(sealed_number(n) is not None for n in names):
                name = folder.relative_to(self.root).as_posix()
                try:
                    out.append(validate_key(name))
                except InvalidKey:
                    if odd is not None:
                        odd.append(name)
        return iter(sorted(out))

    def counts(self) -> dict[str, int]:
        """Each sealed key and its number of versions: what the file names tell, no passphrase needed."""
        return {key: len(self.numbers(key)) for key in self.keys()}

    def write(self, key: str, version: int, plain: bytes, to: Any) -> Path:
        """Encrypt ``plain`` to the recipient ``to`` in memory and write the sealed file (0600, atomic)."""
        path = self.home.sealed_file(validate_key(key), version)
        safe.atomic_write(path, vault_keys.encrypt(plain, to), root=self.home.root)
        return path

    def read_bytes(self, key: str, version: int) -> bytes:
        # A sealed version is a fact file encrypted: one of gigabytes there is no version bead wrote, and reading it
        # whole took the memory of the process that holds the unlocked identity.
        return safe.read_bytes(self.home.sealed_file(validate_key(key), version), root=self.home.root, limit=SEALED_MAX_BYTES)

    def open(self, key: str, version: int, identities: list[Any]) -> bytes:
        """The plain bytes of one sealed version (needs the unlocked identities)."""
        path = self.home.sealed_file(key, version)
        return vault_keys.decrypt(self.read_bytes(key, version), identities, str(path))

    def current(self, key: str, identities: list[Any], skipped: list[Path] | None = None) -> Fact | None:
        """The highest sealed version that decrypts to a fact of ``key``; None when none does.

        A higher file that does not decrypt (damaged, sealed to another key, not an age file, a link) is
        passed over, as a plaintext version that does not parse is, and appended to ``skipped`` when given.
        """
        for n in reversed(self.numbers(key)):
            try:
                plain = self.open(key, n, identities)
                return parse_fact(self.home.sealed_file(key, n), key, n, plain)
            except FileNotFoundError:
                continue
            except (ValueError, vault_keys.NotDecrypted, safe.UnsafePath, OSError):  # a folder there: passed over too
                if skipped is not None:
                    skipped.append(self.home.sealed_file(key, n))
                continue
        return None

    def delete(self, key: str, numbers: list[int]) -> int:
        """Unlink sealed versions of ``key`` (unseal; the caller holds the store lock); the folder goes once empty."""
        d = self.home.sealed_key_dir(validate_key(key))
        gone = 0
        try:
            with safe.opened_dir(self.home.root, d) as fd:
                for n in numbers:
                    try:
                        os.unlink(self.home.sealed_file(key, n).name, dir_fd=fd)
                        gone += 1
                    except FileNotFoundError:
                        continue
                for name in os.listdir(fd):  # a killed writer's temp file holds only ciphertext, but goes too
                    if name.endswith(".tmp") and safe.is_orphan_temp(name, 0.0):
                        os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            return 0
        safe.prune_empty(d, root=self.home.root, stop=self.root)
        return gone
