"""audit.log and tombstones.log: append-only JSON lines, never a value.

A key can itself carry a value's words ("remember that the deploy box is
quokka-east" makes ``project/shop/deploy-box-quokka-east``), so once a key is
forgotten its lines keep only ``key_sha256``: ``forget_keys`` rewrites the
lines already written, and forget writes its own lines that way.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..files import FILE_MODE, append_line, lines_of, open_file, read_text, rewrite_lines


def normalise(value: str) -> str:
    """Case- and whitespace-insensitive form used for tombstones and --match."""
    return " ".join(value.casefold().split())


def value_hash(value: str) -> str:
    return hashlib.sha256(normalise(value).encode("utf-8")).hexdigest()


def folded_hash(value: str) -> str:
    """The hash of the value as the rules read it (bead.textform.fold): a look-alike spelling of a tombstoned value
    (Cyrillic letters that look Latin, fullwidth forms, invisible characters) is the same value."""
    from ..textform import fold

    return hashlib.sha256(("fold\x00" + normalise(fold(value))).encode("utf-8")).hexdigest()


# Characters whose loss changes what a value says (``C++``, ``@home``, ``#general``, ``$HOME``, ``~/.vim``): a value
# holding one is compared as written only, never by its words.
HARD = frozenset("@#$+~/\\%&=<>|^")
WORD_MIN_CHARS = 8  # letters and digits in a value's words, for its words alone to say it
WORD_SHARE = 0.8  # of its characters (not spaces) that are in its words
_WORD = re.compile(r"\w+")


def words_of(text: str) -> list[str]:
    """The words of ``text``, lower-cased (letters, digits and ``_``): what a value's words are compared by."""
    return _WORD.findall(text.casefold())


def _hard(text: str) -> bool:
    """Whether ``text`` holds a character of HARD inside a token (``C++``, ``@home``, ``~/.vim``): one standing alone
    (a trailing `` &``, a quote's ``> ``, a heading's ``# ``) changes nothing the words say."""
    n = len(text)
    for i, c in enumerate(text):
        if c in HARD and ((i > 0 and not text[i - 1].isspace()) or (i + 1 < n and not text[i + 1].isspace())):
            return True
    return False


def word_form(folded: str) -> str:
    """The words of ``folded`` (a value in its normal form, bead.textform.fold) lower-cased, one space between and
    around them, or "" when its words alone do not say it: fewer than two words, fewer than WORD_MIN_CHARS
    characters in them, less than WORD_SHARE of its characters, or a character whose loss changes it (``HARD``, inside
    a token).
    ``Helix with default keymap.`` and ``helix, with default keymap`` are one value; ``1.0`` would be "1 0", ``C++``
    "c": none."""
    words = words_of(folded)
    chars = sum(len(w) for w in words)
    if len(words) < 2 or chars < WORD_MIN_CHARS or _hard(folded):
        return ""
    if chars < WORD_SHARE * sum(1 for c in folded if not c.isspace()):
        return ""
    return " " + " ".join(words) + " "


CONTAINED_CHARS = 65536  # of a text ``contained`` looks at: a fact's whole value (store.max_fact_bytes)


def _inside_words(text: str, limit: int | None = CONTAINED_CHARS) -> list[str]:
    """A text's words as ``contained`` compares them: its normal form's, lower case, ``_`` between words too (a key
    written quokka_east says quokka east); of its first ``limit`` characters (None: all)."""
    from ..textform import fold

    return words_of(fold(text if limit is None else text[:limit]).replace("_", " "))


def _inside_hash(words: list[str]) -> str:
    return hashlib.sha256(("inside\x00" + " ".join(words)).encode("utf-8")).hexdigest()


def _bag_hash(words: list[str]) -> str:
    """The inside hash of ``words`` in any order: a forgotten value's words said in another order are the value."""
    return hashlib.sha256(("bag\x00" + " ".join(sorted(words))).encode("utf-8")).hexdigest()


LETTERS_RUN = 3  # single characters in a row that ``_letters_joined`` reads as one word


def _letters_joined(words: list[str]) -> list[str]:
    """``words`` with each run of LETTERS_RUN or more one-character words read as one word: a value spelt out letter
    by letter ("q u o k k a", "q-u-o-k-k-a", "7 7 3 1") says that word."""
    out: list[str] = []
    run: list[str] = []
    for w in [*words, ""]:
        if len(w) == 1:
            run.append(w)
            continue
        if len(run) >= LETTERS_RUN:
            out.append("".join(run))
        else:
            out.extend(run)
        run = []
        if w:
            out.append(w)
    return out


def _readings(text: str, limit: int | None) -> list[list[str]]:
    """The word lists ``contained`` compares a text by: its words (``_inside_words``), its words with every unseen
    character a break instead of nothing (a zero-width space or soft hyphen between two of a value's words, not all:
    "quokka\u200bwombat 7731"), and each of those with spelt-out letters joined (``_letters_joined``). The same list
    is compared once."""
    from ..textform import unseen_as_space

    cut = text if limit is None else text[:limit]
    out = [_inside_words(cut, None)]
    spaced = unseen_as_space(cut)
    if spaced != cut:
        out.append(_inside_words(spaced, None))
    for ws in list(out):
        joined = _letters_joined(ws)
        if joined != ws:
            out.append(joined)
    return out


def inside_form(value: str) -> tuple[str, int] | None:
    """(hash, word count) of a forgotten value whose words are distinctive enough to refuse wherever they are said
    inside another text, or None: three words or more, two with one of digits or of 9 letters or more, or one word
    of letters and digits (6 characters or more). A value of two common words ("staging server", "use spaces")
    is refused whole only: inside, it would refuse every agent fact that says them. Nor does a value its words alone
    do not say (``Use C++ 17``: "Use C 17" is another value), as ``word_form`` has it."""
    from ..textform import fold

    ws = _inside_words(value)
    rare = [w for w in ws if any(c.isdigit() for c in w) or len(w) >= 9]
    mixed = [w for w in ws if len(w) >= 6 and any(c.isdigit() for c in w) and any(c.isalpha() for c in w)]
    if _hard(fold(value)):
        # Its words alone may say another value (``Use C++ 17`` is "use c 17"), unless there are many of them or
        # they hold a rare one (an address: ``quokka.wombat@globex-intra.example``, a URL): a forgotten address
        # said again in the same words came back in a replayed turn and through an agent's write.
        if len(ws) >= 4 and (rare or len(ws) >= 6):
            return _inside_hash(ws), len(ws)
        return None
    if len(ws) >= 3 or (len(ws) == 2 and rare) or (len(ws) == 1 and mixed):
        return _inside_hash(ws), len(ws)
    return None


CORE_MIN_CHARS = 8  # letters and digits in a value's core (``core_form``)
GUESS_BITS = 40  # a value found by trying fewer strings of its shape than 2 ** this gets no tombstone


def guessable(value: str) -> bool:
    """Whether a tombstone's hashes would give ``value`` away to someone trying every string of its shape: its
    words' characters hold fewer than GUESS_BITS bits (a digit 3.3, a letter 4.7, a character of a word of letters
    and digits 5.2). `--match 9307`, "PIN 4821" or "tabs" is found from its SHA-256 in a second; a sealed value has
    no tombstone for the same reason (bead.core.seal). No dictionary is assumed: a code inside a sentence of common
    words ("the gate code is 4821") is found faster by someone who guesses the sentence."""
    bits = 0.0
    for w in _inside_words(value):
        if w.isdigit():
            bits += 3.33 * len(w)
        elif w.isalpha():
            bits += 4.7 * len(w)
        else:
            bits += 5.17 * len(w)
    return bits < GUESS_BITS


def _rare(word: str) -> bool:
    """A word few texts say: one with a digit, four characters or more (a code's part, a port), or of 9 letters."""
    return (len(word) >= 4 and any(c.isdigit() for c in word)) or len(word) >= 9


def core_form(value: str) -> tuple[str, int, int] | None:
    """(hash, word count, letters) of a forgotten value's core: its words from the first rare one to the last
    (``_rare``), where that is shorter than the value, two words or more (or one of letters and digits, 6 or more)
    and CORE_MIN_CHARS letters or more: "The vault code word is Zorblax-Quintessence-77q41" has "quintessence 77q41".
    A sentence that says the code in other words ("vault code word Zorblax-Quintessence-77q41", a line that names
    it beside other text) came back through an agent's write and a replayed turn; the value's other words were
    what kept it out."""
    ws = _inside_words(value)
    rare = [i for i, w in enumerate(ws) if _rare(w)]
    if not rare:
        return None
    core = ws[rare[0] : rare[-1] + 1]
    chars = sum(len(w) for w in core)
    one = len(core) == 1 and len(core[0]) >= 6 and any(c.isalpha() for c in core[0]) and any(c.isdigit() for c in core[0])
    if len(core) == len(ws) or chars < CORE_MIN_CHARS or not (len(core) >= 2 or one):
        return None
    if guessable(" ".join(core)):
        # Its hash, beside its word count and letters, is the code to anyone who tries every number of that shape.
        return None
    return _inside_hash(core), len(core), chars


JOINED_MIN_CHARS = 12  # a value's words written as one are the value only from this long


def joined_words(value: str) -> str | None:
    """A forgotten value's words written as one word (``GlobexWombaticaHoldings``, ``GLOBEXWOMBATICAHOLDINGS``, words
    joined by an invisible character), lower case; None where the value has no inside form, is one word, or joins
    into a word too short to be its alone: "Python 3" is python3, "to get her" together, "utf 8" utf8."""
    inside = inside_form(value)
    if inside is None or inside[1] < 2:
        return None
    joined = "".join(_inside_words(value))
    return joined if len(joined) >= JOINED_MIN_CHARS else None


def joined_form(value: str) -> str | None:
    """The inside hash of ``joined_words``, as a one-word run of ``contained`` compares it."""
    joined = joined_words(value)
    return _inside_hash([joined]) if joined is not None else None


def words_hash(value: str) -> str | None:
    """The hash of the value's words (``word_form`` of its normal form), or None when its words alone do not say it:
    a tombstoned value said with other punctuation (a full stop added) is the same value."""
    from ..textform import fold

    form = word_form(fold(value))
    return hashlib.sha256(("words\x00" + form).encode("utf-8")).hexdigest() if form else None


def key_hash(key: str) -> str:
    """What audit and tombstone lines keep of a forgotten key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def iso(t: datetime) -> str:
    """UTC, second precision, with a Z: the form every bead file uses."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _id_key(value: object) -> str | None:
    """The key of a version id ``key@vN``."""
    if isinstance(value, str) and "@v" in value:
        return value.rsplit("@v", 1)[0]
    return None


def blinder() -> Callable[[str], str]:
    """What a key's mentions become where not even its hash may stay (a `bead seal KEY --as NEWKEY`: KEY is made of
    the value's words, and its SHA-256 gives them back to whoever tries a word list): a random token, the same for
    each key within one rewrite, so its lines still go together, and tied to nothing on disk."""
    tokens: dict[str, str] = {}
    return lambda key: tokens.setdefault(key, "blinded-" + secrets.token_hex(16))


def _hash_keys(entry: dict[str, Any], keys: set[str], mark: Callable[[str], str] = key_hash) -> bool:
    """Replace every mention of one of ``keys`` in an entry by its hash (``mark``'s); True when something changed."""
    changed = False
    if entry.get("key") in keys:
        entry["key_sha256"] = mark(entry.pop("key"))
        changed = True
    for name in ("id", "by"):
        k = _id_key(entry.get(name))
        if k in keys:
            key, _, version = str(entry.pop(name)).rpartition("@v")
            entry[f"{name}_sha256"] = mark(key)
            entry[f"{name}_version"] = int(version) if version.isdigit() else version
            changed = True
    if isinstance(entry.get("keys"), list) and keys & set(entry["keys"]):
        entry["keys"] = [mark(k) if k in keys else k for k in entry["keys"]]
        changed = True
    return changed


def _swapped(value: Any, marks: dict[str, str]) -> Any:
    """``value`` (a log line's JSON) with every string that is one of ``marks`` replaced by its mark."""
    if isinstance(value, str):
        return marks.get(value, value)
    if isinstance(value, dict):
        return {k: _swapped(v, marks) for k, v in value.items()}
    if isinstance(value, list):
        return [_swapped(v, marks) for v in value]
    return value


def _blind_hashes(path: Path, root: Path, marks: dict[str, str]) -> int:
    """Every value of a line that is one of ``marks``' hashes becomes its token (``blinder``'s); a line that holds
    one and is no record goes."""

    def change(line: str, entry: Any) -> str | None:
        new = _swapped(entry, marks)
        return line if new == entry else json.dumps(new, ensure_ascii=False)

    return _edit_records(path, root, set(marks), change) if marks else 0


def _edit_records(path: Path, root: Path, needles: set[str], change: Callable[[str, Any], str | None]) -> int:
    """Rewrite the lines of a JSON-lines log that hold one of ``needles``: each through ``change(line, its record)``
    (a new line, or None to drop it); a torn or hostile line that holds one goes (a nesting json or ``change``
    cannot read to its end too)."""

    def edit(line: str) -> str | None:
        if not any(n in line for n in needles):
            return line
        try:
            return change(line, json.loads(line))
        except (ValueError, RecursionError):
            return None

    return rewrite_lines(path, edit, root=root)


def _mentions(obj: Any, keys: set[str]) -> bool:
    """Whether a key (or a version id of it) is one of the strings in ``obj``."""
    if isinstance(obj, str):
        return obj in keys or _id_key(obj) in keys
    if isinstance(obj, dict):
        return any(_mentions(v, keys) for v in obj.values())
    if isinstance(obj, list):
        return any(_mentions(v, keys) for v in obj)
    return False


def _named(entry: Any) -> set[str]:
    """The keys a log entry names in its known fields (``key``, ``keys``, the ids ``id`` and ``by``)."""
    if not isinstance(entry, dict):
        return set()
    out = {entry["key"]} if isinstance(entry.get("key"), str) else set()
    out |= {k for k in (_id_key(entry.get(n)) for n in ("id", "by")) if k}
    if isinstance(entry.get("keys"), list):
        out |= {k for k in entry["keys"] if isinstance(k, str)}
    return out


def _named_in(path: Path, root: Path) -> set[str]:
    try:
        text = read_text(path, root=root, errors="replace")
    except FileNotFoundError:
        return set()
    out: set[str] = set()
    for line in lines_of(text):
        try:
            out |= _named(json.loads(line))
        except (ValueError, RecursionError):  # a damaged line, or one nested past what json reads
            continue
    return out


def _rewrite(path: Path, root: Path, keys: set[str], mark: Callable[[str], str] = key_hash) -> int:
    def change(line: str, entry: Any) -> str | None:
        if not isinstance(entry, dict):
            return None
        if not _hash_keys(entry, keys, mark) and not _mentions(entry, keys):
            return line  # another key that merely contains this one's text
        # A mention outside the known fields: drop the line rather than keep the text.
        return None if _mentions(entry, keys) else json.dumps(entry, ensure_ascii=False)

    return _edit_records(path, root, keys, change)


def _ready(path: Path, root: Path) -> None:
    os.close(open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE, root=root))


MAX_INSIDE_WORDS = 200  # of a forgotten value ``contained`` looks for (a longer one is refused whole only)


@dataclass
class _Hashes:
    plain: set[str] = field(default_factory=set)
    folded: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)
    inside: dict[int, set[str]] = field(default_factory=dict)  # word count -> inside hashes of forgotten values
    # word count -> the values' letters (their words' lengths added up), or None where a tombstone (before 2026-12-06)
    # does not say: only a run of words as long is hashed.
    inside_chars: dict[int, set[int] | None] = field(default_factory=dict)
    # word count -> {letters: the hashes of forgotten values' words in any order} (tombstones from 2026-12-06 on)
    bags: dict[int, dict[int, set[str]]] = field(default_factory=dict)


# tombstones.log's hashes by its path, with the file's (path, device, inode, size, time) they were read at.
_HASHES: dict[str, tuple[tuple[Any, ...], _Hashes]] = {}


def _add_chars(out: _Hashes, n: int, chars: object) -> None:
    if n in out.inside_chars and out.inside_chars[n] is None:
        return  # some value of n words does not say: every run of n is hashed
    if isinstance(chars, int) and not isinstance(chars, bool) and chars > 0:
        known = out.inside_chars.setdefault(n, set())
        if known is not None:
            known.add(chars)
    else:
        out.inside_chars[n] = None


class _KeyedLog:
    """What the audit and tombstone logs share: their lines name keys, which a forget or a `seal --as` takes out."""

    path: Path
    root: Path

    def forget_keys(self, keys: set[str], mark: Callable[[str], str] = key_hash) -> int:
        """Lines that name one of ``keys`` keep its hash instead (forget; ``mark``'s, ``blinder``'s for a key that
        may not leave even that: a review rejection's tombstone too); the number of lines changed."""
        return _rewrite(self.path, self.root, keys, mark) if keys else 0

    def blind(self, marks: dict[str, str]) -> int:
        """Every field holding one of ``marks``' hashes (a key's that `seal --as` moved: its ``from_sha256`` too,
        once done) holds its token instead; the number of lines changed."""
        return _blind_hashes(self.path, self.root, marks)

    def named_keys(self) -> set[str]:
        """Every key a line names in clear (forget looks for keys whose name holds the forgotten value)."""
        return _named_in(self.path, self.root)


class AuditLog(_KeyedLog):
    """Every write, supersede, injection, forget and tombstone, one JSON line each."""

    def __init__(self, path: Path, owner: str, root: Path | None = None):
        self.path = path
        self.owner = owner
        self.root = root if root is not None else path.parent

    def record(self, at: datetime, event: str, **fields: object) -> None:
        entry = {"at": iso(at), "event": event, "owner": self.owner, **fields}
        append_line(self.path, json.dumps(entry, ensure_ascii=False, sort_keys=False), FILE_MODE, root=self.root)

    def ready(self) -> None:
        """Raise (UnsafePath: a link, a FIFO, another name of a file) where ``record`` would: called before a change
        is made, so that a change is never made and then reported as failed."""
        _ready(self.path, self.root)

    def entries(self) -> list[dict]:
        try:
            text = read_text(self.path, root=self.root, errors="replace")
        except FileNotFoundError:
            return []
        out = []
        for line in lines_of(text):
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):  # a damaged line, or one nested past what json reads
                continue
            if isinstance(entry, dict):  # a line of another JSON value (`[1]`) is no record bead wrote (an outside attack)
                out.append(entry)
        return out


def _said_in(ws: list[str], h: _Hashes) -> bool:
    """Whether a run of ``ws`` is a forgotten value's words, in its order or (``bags``) in any: a run is hashed only
    where its letters add up to a value's of as many words."""
    at = list(itertools.accumulate((len(w) for w in ws), initial=0))
    for n, hashes in h.inside.items():
        chars = h.inside_chars.get(n)
        bags = h.bags.get(n, {})
        for i in range(len(ws) - n + 1):
            letters = at[i + n] - at[i]
            bag = bags.get(letters)
            if bag is not None and _bag_hash(ws[i : i + n]) in bag:
                return True
            if chars is not None and letters not in chars:
                continue
            if _inside_hash(ws[i : i + n]) in hashes:
                return True
    return False


class Tombstones(_KeyedLog):
    """SHA-256 of the normalised value (and of the key); the value and the key's text never."""

    def __init__(self, path: Path, owner: str, root: Path | None = None):
        self.path = path
        self.owner = owner
        self.root = root if root is not None else path.parent

    def ready(self) -> None:
        """Raise where ``add`` would (AuditLog.ready)."""
        _ready(self.path, self.root)

    def add(self, at: datetime, key: str, value: str, reason: str, hash_key: bool = False) -> str:
        """Tombstone ``value`` (refused under any key); ``hash_key`` keeps only the key's hash (forget)."""
        digest = value_hash(value)
        who: dict[str, str] = {"key_sha256": key_hash(key)} if hash_key else {"key": key}
        folded: dict[str, Any] = {"fold_sha256": folded_hash(value)}
        if (words := words_hash(value)) is not None:
            folded["words_sha256"] = words
        if reason == "forget" and (inside := inside_form(value)) is not None:
            # A forgotten value's words are refused inside another text too (``contained``), in any order; a rejected
            # proposal's are not: "deploy on Fridays" rejected must not refuse "never deploy on Fridays".
            folded["inside_sha256"], folded["inside_words"] = inside
            said = _inside_words(value)
            if inside[1] >= 2 and any(_rare(w) for w in said):
                # In any order only with a word few texts say (a code's part, a long name): common words in another
                # order say another thing ("use spaces not tabs" is no forgotten "use tabs not spaces"; a review).
                folded["bag_sha256"] = _bag_hash(said)
            folded["inside_chars"] = sum(len(w) for w in _inside_words(value))
            if (joined := joined_form(value)) is not None:
                folded["joined_sha256"] = joined
        if reason == "forget" and (core := core_form(value)) is not None:
            folded["core_sha256"], folded["core_words"], folded["core_chars"] = core
        append_line(
            self.path,
            json.dumps({"at": iso(at), **who, "sha256": digest, **folded, "reason": reason, "owner": self.owner}),
            FILE_MODE,
            root=self.root,
        )
        return digest

    def _hashes(self) -> _Hashes:
        """The values' hashes, their folded forms', their words', and the inside forms of the values a person forgot
        (``inside_form``). Tombstones from before 2026-12 have only the first; a value its words do not say has no
        words' hash. Read again only when the file changed (its identity, size and time): every non-person write asks."""
        try:
            st = os.stat(self.path, follow_symlinks=False)  # a link there is refused by the read below
        except FileNotFoundError:
            return _Hashes()
        stamp = (str(self.path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        cached = _HASHES.get(str(self.path))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            text = read_text(self.path, root=self.root, errors="replace")
        except FileNotFoundError:
            return _Hashes()
        out = _Hashes()
        for line in lines_of(text):
            try:
                entry = json.loads(line)
                out.plain.add(entry["sha256"])
                if isinstance(entry.get("fold_sha256"), str):
                    out.folded.add(entry["fold_sha256"])
                if isinstance(entry.get("words_sha256"), str):
                    out.words.add(entry["words_sha256"])
                n = entry.get("inside_words")
                if isinstance(entry.get("inside_sha256"), str) and isinstance(n, int) and 0 < n <= MAX_INSIDE_WORDS:
                    out.inside.setdefault(n, set()).add(entry["inside_sha256"])
                    _add_chars(out, n, entry.get("inside_chars"))
                c = entry.get("inside_chars")
                if isinstance(entry.get("bag_sha256"), str) and isinstance(n, int) and 1 < n <= MAX_INSIDE_WORDS:
                    if isinstance(c, int) and not isinstance(c, bool) and c > 0:
                        out.bags.setdefault(n, {}).setdefault(c, set()).add(entry["bag_sha256"])
                if isinstance(entry.get("joined_sha256"), str):
                    out.inside.setdefault(1, set()).add(entry["joined_sha256"])
                    _add_chars(out, 1, entry.get("inside_chars"))
                k = entry.get("core_words")
                if isinstance(entry.get("core_sha256"), str) and isinstance(k, int) and 0 < k <= MAX_INSIDE_WORDS:
                    out.inside.setdefault(k, set()).add(entry["core_sha256"])
                    _add_chars(out, k, entry.get("core_chars"))
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                continue
        _HASHES[str(self.path)] = (stamp, out)
        return out

    def hashes(self) -> set[str]:
        return self._hashes().plain

    def matches(self, value: str) -> bool:
        """A tombstoned value is refused under any key, however it is spelt (look-alike letters, other punctuation):
        it must not come back."""
        h = self._hashes()
        plain, folded, words = h.plain, h.folded, h.words
        if value_hash(value) in plain or folded_hash(value) in folded:
            return True
        return bool(words) and words_hash(value) in words

    def refuses(self, value: str, *around: str | None, whole: bool = False) -> bool:
        """Whether a tombstone stands against ``value``: it is a forgotten or rejected value in any spelling
        (``matches``), or a forgotten value's words are said inside it or inside ``around`` (a key, a title:
        ``contained``). The one rule every path that writes, queues or reports text the person did not type asks."""
        return self.matches(value) or self.contained(value, *around, whole=whole)

    def contained(self, *texts: str | None, whole: bool = False) -> bool:
        """Whether a forgotten value's words (``inside_form``) are said inside any of ``texts``: in a sentence around
        them, as the words of a key, as a title. An agent or the dream wrote a forgotten value back that way. Of each
        text its first CONTAINED_CHARS characters (a fact's whole value), or all of it (``whole``: a turn a harness
        replays, a tool's output of megabytes). A run of as many words as a forgotten value has is hashed only when
        its letters add up to as many as the value's: a few integer sums a word, a hash now and then."""
        h = self._hashes()
        if not h.inside:
            return False
        for text in texts:
            if not text:
                continue
            for ws in _readings(text, None if whole else CONTAINED_CHARS):
                if _said_in(ws, h):
                    return True
        return False

    def count(self) -> int:
        return len(self.hashes())
