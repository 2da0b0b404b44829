"""Seal, unseal, write a secret, read a sealed value: the calls behind `bead seal`, `bead unseal`,
`bead write --sensitivity secret`, `bead sealed list` and `bead sealed show`.

A key is plaintext or sealed, never both. Sealing is a forget of the
plaintext (bead.core.forget: the version files and their index rows, raw turns,
episodes, review items, state and trace lines that hold the value, the WAL
truncated) that writes no tombstone (a value's hash gives a PIN away), with
the encrypted copies written inside forget's locks before anything is
deleted. A crash in between leaves both copies, which
`bead status` reports; running the same command again finishes it.

A secret write goes the same way: the key's plaintext versions (if any) are
sealed, everything that holds the new value in clear is scrubbed like a
forgotten value, and the new version is encrypted in memory and written only
to the vault. It needs no passphrase and decrypts nothing, so it cannot
compare the new value with the current one: every secret write is a new
version.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import files as safe
from ..capture.secrets import credential_rules
from ..display import CONTROL
from ..errors import BeadError, RefusedWrite
from ..store.audit import blinder, iso, key_hash
from ..store.facts import Fact, WriteResult, is_version_of, parse_fact
from ..store.keys import TRUSTS, TYPES, check_choice, validate_key
from ..store.queue import Queue
from ..store.reports import Reports
from ..textform import hidden
from ..vault import keys as vault_keys
from . import forget

_WORD = re.compile(r"[A-Za-z0-9]+")

if TYPE_CHECKING:
    from .memory import Memory


def _seal(
    mem: Memory,
    key: str,
    plan: forget.Plan,
    to: Any,
    new: Any = None,
    target: str | None = None,
    blind: Callable[[str], str] | None = None,
) -> tuple[dict[str, Any], Fact | None]:
    """Write the encrypted copies of the plan's versions of ``key`` (and ``new()``'s version) inside forget's
    locks, then let forget delete the plaintext and scrub every copy of the values. ``target``: the key the copies
    are sealed under (``seal``'s ``as_key``), the plaintext key's name going as a forgotten one's does."""
    expected = plan.keys.get(key, [])
    written: list[Fact] = []
    into = target or key

    def copy() -> None:
        kv = mem.facts.versions(key)
        if list(kv.numbers) != expected:
            raise BeadError(f"{key} changed while it was being sealed; nothing was changed", "run the command again")
        if target is not None and (mem.facts.versions(target).numbers or mem.sealed.has(target)):
            raise BeadError(f"{target} was written meanwhile; nothing was changed", "choose another key for --as")
        before = set(mem.sealed.numbers(into))
        try:
            facts = {f.version: f for f in kv.facts}
            for n, path in zip(kv.numbers, kv.files, strict=True):
                if n in facts:
                    fact = dataclasses.replace(facts[n], status="sealed", sensitivity="secret")
                    if target is not None:
                        fact = dataclasses.replace(fact, key=target, supersedes=f"{target}@v{n - 1}" if n > 1 else None)
                    plain = fact.render()
                elif target is not None:
                    continue  # a file bead cannot read is not rewritten under another key: forget keeps it, and says so
                else:
                    try:
                        plain = safe.read_bytes(path, root=mem.home.root)
                    except (OSError, safe.UnsafePath):
                        continue  # forget keeps it too, and says so
                    if not is_version_of(plain, key, n):
                        continue
                mem.sealed.write(into, n, plain, to)
            if new is not None:
                written.append(new())
        except BaseException:
            # Nothing is deleted yet: take back the copies this call added, so the key stays as it was.
            mem.sealed.delete(into, sorted(set(mem.sealed.numbers(into)) - before))
            raise

    # No tombstones: a value's hash is the value to anyone who can enumerate it (a PIN, a short code), so
    # a sealed value leaves no hash on disk. The raw turns, episodes and lines that hold it are scrubbed.
    # Under another key (`--as`), the plaintext key's name goes without a hash too: it is made of the value's words.
    summary = forget.apply(mem, plan, under_lock=copy, event="seal", tombstones=False, sealed=into, blind=blind)
    return summary, (written[0] if written else None)


def _checked(mem: Memory, key: str) -> Any:
    """The recipient to seal ``key`` to, once sealing it can work (a vault, plaintext versions)."""
    validate_key(key)
    to = vault_keys.recipient(mem.home)
    if not mem.facts.versions(key).numbers:
        if mem.sealed.has(key):
            raise BeadError(f"{key} is sealed already", "`bead sealed list` shows the sealed keys")
        raise BeadError(f"nothing to seal: {key} has no version files", "check the key with `bead search` or `bead history KEY`")
    return to


def _stopped(mem: Memory, key: str, into: str | None = None) -> forget.Plan | None:
    """The plan that finishes a seal of ``key`` (under ``into``: ``seal``'s ``as_key``) killed inside its last step,
    or None. That step deletes the plaintext files inside the index's transaction: a kill there leaves the files
    gone and the sealed copies written, but index.db holding the body, which a pinned block may have served since (a
    state line, a trace line). Forget's plan of a key with no file takes its values from the index, so the scrub can
    be done again."""
    if mem.facts.versions(key).numbers or not mem.sealed.has(into or key):
        return None
    plan = forget.plan_seal(mem, key)
    return None if plan.empty else plan


def preview_seal(mem: Memory, key: str) -> forget.Plan:
    """What ``seal`` would do to ``key`` (its plan), with seal's own checks; nothing changes."""
    validate_key(key)
    stopped = _stopped(mem, key)
    if stopped is not None:
        return stopped
    _checked(mem, key)
    return forget.plan_seal(mem, key)


def seal(mem: Memory, key: str, as_key: str | None = None) -> dict[str, Any]:
    """Encrypt every plaintext version of ``key`` into the vault, delete the plaintext and scrub its copies; or
    finish a seal of it that was killed inside its last step (``_stopped``). ``as_key``: seal the versions under
    that key instead, a new one (a key's name stays on disk as the vault's folder, and a name bead made of the
    value's words, as "remember" does, would keep them); the plaintext key's name goes as a forgotten key's."""
    validate_key(key)
    if as_key is not None:
        validate_key(as_key)
        as_key = None if as_key == key else as_key
    # A seal killed in its last step is finished by running the same command again (under ``as_key`` too).
    stopped = _stopped(mem, key, as_key)
    if stopped is not None:
        mark = blinder() if as_key is not None else None
        summary = forget.apply(mem, stopped, event="seal", tombstones=False, sealed=as_key or key, blind=mark)
        if as_key is not None:
            _moved(mem, key, as_key, "done", mark)
        summary["sealed"] = mem.sealed.numbers(as_key or key)
        summary["key"] = as_key or key
        return summary
    if as_key is not None:
        mem.check_lookalike(as_key, "user_stated")  # only the person seals
        if _resumes(mem, key, as_key):
            # The same command, killed after some or all of its copies and before the plaintext went: those copies
            # are its own (the audit log's last word on ``as_key``), so they are taken back and the seal starts over.
            mem.sealed.delete(as_key, mem.sealed.numbers(as_key))
        if _unblinded(mem, key, as_key):
            # Its move was done and the blind of KEY's hash was not (killed, or a log it could not write): finished.
            _moved(mem, key, as_key, "done", blinder())
            done = dict.fromkeys(("versions", "raw_turns_redacted", "raw_turns_redacted_in_part", "episodes", "session_lines"), 0)
            return {**done, "key": as_key, "sealed": mem.sealed.numbers(as_key), "kept": [], "finished": True}
        if mem.facts.versions(as_key).numbers or mem.sealed.has(as_key):
            raise BeadError(f"{as_key} has versions already", "choose a key nothing has used for --as")
    to = _checked(mem, key)
    plan = forget.plan_seal(mem, key)
    mark = blinder() if as_key is not None else None  # one token for KEY in every line this seal changes
    if as_key is not None:
        _moved(mem, key, as_key, "begin")
    summary, _ = _seal(mem, key, plan, to, target=as_key, blind=mark)
    if as_key is not None:
        _moved(mem, key, as_key, "done", mark)
    summary["sealed"] = mem.sealed.numbers(as_key or key)
    summary["key"] = as_key or key
    return summary


def _moved(mem: Memory, key: str, as_key: str, phase: str, mark: Callable[[str], str] | None = None) -> None:
    """The audit line of a ``seal --as`` beginning or done: ``as_key`` by name, ``key`` by its hash only while it
    moves (its name may be made of the value's words, which the seal takes off the disk; a stopped move is known by
    the hash). Once done, not even that: first every audit, tombstone and dream-report field that holds the hash
    holds ``mark``'s token for the key instead (a word list gave the words back from the hash: an outside attack),
    under the lock a dream's report is written in; then the done line, without it. Killed in between, the same
    command finishes it (``_unblinded``)."""
    mem.audit.ready()
    if phase == "begin":
        mem.audit.record(mem.clock(), "seal_as", key=as_key, from_sha256=key_hash(key), phase=phase)
        return
    marks = {key_hash(key): (mark or blinder())(key)}
    with Queue(mem).deciding():
        mem.audit.blind(marks)
        mem.tombstones.blind(marks)
        Reports(mem.home).blind(set(marks))
    mem.audit.record(mem.clock(), "seal_as", key=as_key, phase=phase)


def _unblinded(mem: Memory, key: str, as_key: str) -> bool:
    """Whether a ``seal key --as as_key`` moved every version and stopped before its blind: ``key`` has no version
    left, ``as_key`` has sealed ones, and the audit log still holds that move's beginning with ``key``'s hash (the
    blind takes it; a key forgotten otherwise, whose lines keep its hash, was never moved: a review)."""
    if mem.facts.versions(key).numbers or not mem.sealed.has(as_key) or mem.facts.versions(as_key).numbers:
        return False
    gone = key_hash(key)
    return any(
        e.get("event") == "seal_as" and e.get("key") == as_key and e.get("phase") == "begin" and e.get("from_sha256") == gone
        for e in mem.audit.entries()
    )


def stopped_moves(mem: Memory, into: set[str]) -> dict[str, tuple[str, str]]:
    """For each key of ``into`` that a ``bead seal KEY --as`` stopped while moving KEY into: (KEY's hash, the time
    it began). That is when the audit log's last line naming it is that seal's beginning (any later write, seal or
    forget of it names it after). One read of the log."""
    last: dict[str, dict] = {}
    for e in mem.audit.entries():
        if not isinstance(e, dict):
            continue
        keys = e.get("keys")
        for k in [e.get("key"), *(keys if isinstance(keys, list) else [])]:
            if isinstance(k, str) and k in into:
                last[k] = e
    out = {}
    for k, e in last.items():
        found, at = e.get("from_sha256"), e.get("at")
        if e.get("event") == "seal_as" and e.get("phase") == "begin" and isinstance(found, str) and isinstance(at, str):
            out[k] = (found, at)
    return out


def _resumes(mem: Memory, key: str, as_key: str) -> bool:
    """Whether ``as_key``'s sealed versions are the copies of a ``seal key --as as_key`` that stopped before the
    plaintext went: its beginning is the audit log's last word on ``as_key``, ``as_key`` has no plaintext, and
    every plaintext version of ``key`` is older than that beginning (a key written after a seal that finished is
    another value, and ``as_key``'s versions are the secret it sealed)."""
    moving = stopped_moves(mem, {as_key}).get(as_key)
    if moving is None or moving[0] != key_hash(key) or mem.facts.versions(as_key).numbers:
        return False
    kv = mem.facts.versions(key)
    return bool(kv.facts) and len(kv.facts) == len(kv.numbers) and all(f.valid_from <= moving[1] for f in kv.facts)


_SAID_TO_BE = re.compile(r"(?i)\b(?:is|are|was|were)\b|[:=]")  # "the vault phrase is maple ...": what follows is the value


def name_words(mem: Memory, key: str) -> list[str]:
    """The words of ``key``'s name (its last part), four letters or more, that its current value says as the value
    itself (after its first "is", ":" or "=", else anywhere: "the vault phrase is maple quartz lantern" says maple
    and quartz, not vault): what sealing it leaves on disk as the vault's folder name (``seal``'s ``as_key`` moves
    it under another)."""
    fact = mem.current(key)
    if fact is None:
        return []
    body = fact.body
    cut = _SAID_TO_BE.search(body)
    said = {w.lower() for w in _WORD.findall(body[cut.end() :] if cut else body)}
    return [w for w in _WORD.findall(key.rsplit("/", 1)[-1]) if len(w) >= 4 and w.lower() in said]


def write_secret(
    mem: Memory,
    key: str,
    body: str,
    type: str,
    trust: str = "user_stated",
    pinned: bool | None = None,
    sources: tuple[str, ...] = (),
) -> WriteResult:
    """A new sealed version of ``key``; its plaintext versions are sealed first. No passphrase is needed."""
    validate_key(key)
    mem.check_lookalike(key, trust)
    check_choice("type", type, TYPES)
    check_choice("trust", trust, TRUSTS)
    body = mem.facts.check_body(key, body)
    to = vault_keys.recipient(mem.home)
    if trust != "user_stated" and mem.tombstones.matches(body):
        raise RefusedWrite(
            f"refusing to write {key}: that value was forgotten or rejected (tombstone)",
            "only a person can bring it back: write it again with --trust user_stated",
        )
    plan = forget.plan_seal(mem, key, new_value=body)

    def new() -> Fact:
        prev = max([*mem.facts.versions(key).numbers, *mem.sealed.numbers(key)], default=0)
        now = mem.clock()
        fact = Fact(
            key=key,
            version=prev + 1,
            type=type,
            body=body,
            owner=mem.config.owner,
            status="sealed",
            supersedes=f"{key}@v{prev}" if prev else None,
            valid_from=iso(now),
            trust=trust,
            sensitivity="secret",
            sources=tuple(sources),
            pinned=bool(pinned),
            path=mem.home.sealed_file(key, prev + 1),
        )
        mem.sealed.write(key, fact.version, fact.render(), to)
        mem.audit.record(now, "write", key=key, id=fact.id, trust=trust, type=type, sealed=True)
        return fact

    summary, fact = _seal(mem, key, plan, to, new)
    assert fact is not None
    return WriteResult(
        fact,
        written=True,
        sealed=True,
        redacted=summary["raw_turns_redacted"],
        skill_files=tuple(summary.get("skill_files") or ()),
        skill_files_left=tuple(summary.get("skill_files_left") or ()),
        skill_files_unread=summary.get("skill_files_unread"),
        also_in=tuple(summary.get("also_in") or ()),
        raw_files_unread=tuple(summary.get("raw_files_unread") or ()),
    )


def unseal(mem: Memory, key: str, passphrase: str) -> dict[str, Any]:
    """Restore every sealed version of ``key`` as a ``private`` plaintext version (statuses set again)."""
    validate_key(key)
    if not mem.sealed.has(key):
        raise BeadError(f"{key} is not sealed", "`bead sealed list` shows the sealed keys")
    identities = vault_keys.unlock(mem.home, passphrase)
    # The lock a forget and a seal hold for their whole run (forget.apply): an unseal inside one would bring the
    # plaintext back for its last step to delete, with the sealed copies it had just deleted.
    with Queue(mem).deciding(), mem.together(), mem.facts.lock():
        if not mem.sealed.has(key):
            raise BeadError(f"{key} is not sealed", "`bead sealed list` shows the sealed keys")
        numbers = mem.sealed.numbers(key)
        plain = {n: mem.sealed.open(key, n, identities) for n in numbers}
        parsed: dict[int, Fact] = {}
        for n, data in plain.items():
            try:
                parsed[n] = parse_fact(mem.home.sealed_file(key, n), key, n, data)
            except ValueError:
                continue  # restored byte for byte; `bead status` reports it as before
        # A version no bead write would take (a terminal escape, characters the person does not see): not one bead
        # sealed from the person's writes; someone put it in the vault. It stays sealed, for the person to look at.
        planted = [n for n, f in parsed.items() if CONTROL.search(f.body) or hidden(f.body)]
        if planted:
            raise RefusedWrite(
                f"refusing to unseal {key}: version(s) {', '.join(f'v{n}' for n in planted)} hold control or invisible "
                "characters no bead write takes (a file put into the vault, not sealed by bead)",
                f"look at it with `bead sealed show {key}`; it stays sealed (`bead forget {key}@vN` removes one version)",
            )
        flagged = [n for n, f in parsed.items() if credential_rules(f.body)]
        if flagged:
            # A credential never lies in plain text: it would stand in a file, the index and a prompt.
            raise RefusedWrite(
                f"refusing to unseal {key}: version(s) {', '.join(f'v{n}' for n in flagged)} hold what "
                "the secret scan takes for a credential, and bead never keeps one in plain text",
                f"read it with `bead sealed show {key}`; it stays sealed",
            )
        top = max(parsed, default=None)
        files = {
            n: (
                dataclasses.replace(parsed[n], sensitivity="private", status="current" if n == top else "superseded").render()
                if n in parsed
                else data
            )
            for n, data in plain.items()
        }
        mem.audit.ready()  # refused before the plaintext comes back, not after
        mem.restore_versions(key, files)
        mem.sealed.delete(key, numbers)
        mem.audit.record(mem.clock(), "unseal", key=key, versions=len(numbers))
    return {"key": key, "versions": numbers, "current": f"{key}@v{top}" if top else None}


def show(mem: Memory, key: str, passphrase: str, skipped: list[Path] | None = None) -> Fact:
    """The current sealed version of ``key``, decrypted (needs the passphrase); higher files that did not
    decrypt or parse are appended to ``skipped``."""
    validate_key(key)
    if not mem.sealed.has(key):
        raise BeadError(
            f"{key} is not sealed", "`bead sealed list` shows the sealed keys; `bead show KEY` prints a plaintext fact"
        )
    identities = vault_keys.unlock(mem.home, passphrase)
    fact = mem.sealed.current(key, identities, skipped)
    if fact is None:
        raise BeadError(
            f"no sealed version of {key} decrypts to a fact",
            f"look at the files under {mem.home.sealed_key_dir(key)} with `age -d`",
        )
    return fact


def listing(mem: Memory) -> dict[str, int]:
    """Sealed keys and their version counts: the file names tell, no passphrase needed."""
    return mem.sealed.counts()


def write_fact(
    mem: Memory,
    key: str,
    body: str,
    type: str,
    trust: str = "user_stated",
    sensitivity: str = "private",
    pinned: bool | None = None,
    sources: tuple[str, ...] = (),
    title: str | None = None,
) -> WriteResult:
    """A new version as `bead write` and the eval suites give it: a secret is sealed (``write_secret``), any
    other value is a plain version (``Memory.write``)."""
    if sensitivity != "secret":
        return mem.write(key, body, type, trust=trust, sensitivity=sensitivity, pinned=pinned, sources=sources, title=title)
    mem.check_title(key, title)
    return write_secret(mem, key, body, type, trust=trust, pinned=pinned, sources=tuple(sources))
