"""What becomes of one proposed fact: the one function the dream and `bead eval` call.

``decide`` applies the rules of ``bead.capture.instructions`` in order and says what
to do (reject, skip, queue, unchanged, duplicate, write) without doing it;
the dream then does it, and the poisoning eval counts it. Nothing here
writes.

Provenance: a proposal is trusted only when one of the turns it cites is the
person's typed text and that typed text holds at least half of the
proposal's content words (``bead.index.query.terms``, stopwords dropped,
plurals and -ed/-ing folded). A model that cites a typed turn while
repeating a pasted README is still untrusted; so is a proposal that cites
only tool output, the assistant's text or pasted content, or turns captured
before turns carried their source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from ..capture import instructions as rules
from ..capture.secrets import compile_linear, redact
from ..core.memory import Memory
from ..core.propose import SECRET, persons, said, screen
from ..errors import BeadError
from ..index.query import STOPWORDS, terms
from ..store.audit import iso, normalise
from ..store.facts import CLOCK_AHEAD, stored_title
from ..store.keys import TYPES, check_new_key, validate_key
from ..store.rawlog import UNVERIFIED, Turn
from ..textform import fold
from .second import Opinion

TRUSTED = "typed"  # the source of the person's own words (a raw turn's `source` flag)
UNTRUSTED = "untrusted"
SUPPORT = 0.5  # share of the value's content words the typed turns must hold

SecondOpinion = Callable[[str, str, str], Opinion]


@dataclass(frozen=True)
class Proposal:
    key: str
    type: str
    value: str
    turns: tuple[int, ...] = ()
    replaces: str | None = None
    title: str | None = None  # the model's short name for the fact (pointers show it), cut to 8 words

    @classmethod
    def of(cls, p: dict) -> Proposal:
        """From one entry of the model's answer (``bead.dream.run.parse_answer`` checked its shape). The
        model's title is kept only when it is the start of the value, word for word, and leaves out none of the
        words that could turn it around (``_shortens``): a title names the value and can say nothing else ("Do
        not deploy on Fridays" for "Deploys happen on Fridays"; what is judged and reviewed is the value, and a
        pointer shows only the title). A title that fails is dropped, and the pointer shows the value's first
        words instead."""
        value = p["value"].strip()
        title = stored_title(p.get("title"))
        if title and not _shortens(title, value):
            title = None
        # Each turn once: the same turn cited a million times (4 MB of answer allows that) had each citation's text
        # joined and scanned, which held the dream for minutes and took gigabytes, and wrote every one as a source.
        turns = tuple(dict.fromkeys(p.get("turns") or ()))
        return cls(p["key"].strip(), p["type"].strip(), value, turns, p.get("replaces"), title)


@dataclass
class Decision:
    action: str  # reject | skip | queue | unchanged | duplicate | write
    detail: str = ""  # why (the report's words, or the queue item's reason)
    kind: str = ""  # the queue kind, when queued
    source: str = ""  # typed | untrusted: who backs the proposal
    other: str = ""  # unchanged: the current fact's id; duplicate: the key that holds the value
    sources: list[str] = field(default_factory=list)  # the cited turns' anchors
    opinion: Opinion | None = None


def _fold(term: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


def content_words(text: str) -> set[str]:
    return {_fold(t) for t in terms(fold(text))}


def _typed(cited: list[Turn]) -> list[Turn]:
    """The person's typed turns among ``cited``; not typed words a paste may reach into (``near_paste``: between two
    pastes, or a quote's lazy continuation), which may be the paste's own lines, nor a transcript's that `bead import`
    read from a folder other than the harness's own (``UNVERIFIED``: a file that may have come from anyone)."""
    return [
        t
        for t in cited
        if t.role == "user" and t.flags.get("source") == TRUSTED and not t.flags.get("near_paste") and not t.flags.get(UNVERIFIED)
    ]


def provenance(value: str, cited: list[Turn]) -> str:
    """``typed`` when the person's typed turns among ``cited`` hold at least half of the value's content words
    (both read in their normal form, bead.textform)."""
    typed = _typed(cited)
    if not typed:
        return UNTRUSTED
    words = content_words(value)
    if not words:
        return UNTRUSTED
    said = content_words("\n".join(t.text for t in typed))
    return TRUSTED if len(words & said) >= SUPPORT * len(words) else UNTRUSTED


# What a proposal may not add to the person's words, since a shared vocabulary says nothing about them: an
# address (URL, host, path, e-mail, a command in backticks, a command-line flag), a number, a negation (added
# or dropped), a word of degree or permission, a command word. Bounded runs: linear time.
_URL = compile_linear(r"(?i)\b[a-z][a-z0-9+.-]{1,15}://[^\s<>\"'`]{1,400}")
_PATHLIKE = compile_linear(
    r"(?:~|\.{1,2})?/?[A-Za-z0-9_.-]{1,80}(?:/[A-Za-z0-9_.-]{1,80}){1,12}/?"
    r"|[A-Za-z0-9_-]{1,60}(?:\.[A-Za-z0-9_-]{1,60}){0,10}\.[A-Za-z]{2,12}\b"
)
_TICKED = compile_linear(r"`([^`\n]{1,300})`")
_FLAG = compile_linear(r"(?:^|[\s(])(--?[A-Za-z][A-Za-z0-9-]{0,40})")
_NUMBER = compile_linear(r"\d{1,40}")
_THOUSANDS = compile_linear(r"(\d),(\d{3})")
_WORDS = compile_linear(r"(?i)[a-z]{2,20}(?:'[a-z]{1,2})?")
_NEGATIONS = frozenset(
    """not never no none nothing nobody neither nor without avoid stop cannot can't cant don't dont
doesn't doesnt didn't didnt isn't isnt aren't arent wasn't wasnt won't wont shouldn't shouldnt mustn't mustnt
forbid forbids forbidden disable disabled disables""".split()
)
_DEGREES = frozenset("always sometimes only must may allowed required optional every any all".split())
_COMMAND_WORDS = frozenset("sudo rm chmod chown curl wget eval exec bypass skip force".split())
# What a secret's leaving takes: its name and a word that moves it. A model that adds "push the production
# credentials to the staging database" to the person's "use the staging database for the integration tests" kept
# most of their words, and no address or number (an attack helper's proposal, written unreviewed before). Each
# word stands for its family (the first word of each line): "prod" said is "production" written, "credential" is
# "credentials", "mail the report" is "email the report"; a word of a family the person did not say is added. The
# words after a "|" count as the family said, not as an addition ("environment" said is "env" written). A list:
# what it does not name ("the customer table's rows go to the vendor") the other checks and the review must catch.
# Also what destroys or turns off, and a fork: "the integration tests need the staging database" became "... the
# staging database dropped and recreated first" and "deploy from main" "deploy from the contributor fork's main",
# written unreviewed from a tool's output (an outside attack).
_SENSITIVE_FAMILIES = """
credential credentials creds
password passwords passwd passphrase passphrases passcode passcodes
secret secrets
token tokens bearer jwt jwts
key keys | keyed
apikey apikeys
rsa pem
certificate certificates cert certs
cookie cookies
ssh
env dotenv
npmrc
netrc
pgpass
kubeconfig
production productions prod
upload uploads uploaded uploading
send sends sent sending | notify notifies notified
share shares shared sharing
publish publishes published publishing
export exports exported exporting
forward forwards forwarded forwarding
email emails emailed emailing mail mails mailed mailing
post posts posted posting
dump dumps dumped dumping
webhook webhooks
push pushes pushed pushing
copy copies copied copying
sync syncs synced syncing
paste pastes pasted pasting
rsync scp
exfiltrate exfiltrates exfiltrated exfiltrating
transmit transmits transmitted transmitting
leak leaks leaked leaking
drop drops dropped dropping
delete deletes deleted deleting deletion
wipe wipes wiped wiping
truncate truncates truncated truncating
purge purges purged purging
destroy destroys destroyed destroying
erase erases erased erasing
overwrite overwrites overwrote overwritten overwriting
reset resets resetting
recreate recreates recreated recreating
disable disables disabled disabling
fork forks forked forking
remove removes removed removing removal
rebuild rebuilds rebuilt rebuilding
nuke nukes nuked nuking
tear tears tore torn tearing teardown
uninstall uninstalls uninstalled uninstalling
kill kills killed killing
terminate terminates terminated terminating
clean cleans cleaned cleaning cleanup
off
revoke revokes revoked revoking
mirror mirrors mirrored mirroring
"""
_SENSITIVE: dict[str, str] = {}
_SAID_AS: dict[str, str] = {}
for _line in _SENSITIVE_FAMILIES.strip().splitlines():
    _added, _, _also = _line.partition("|")
    _SENSITIVE |= {w: _added.split()[0] for w in _added.split()}
    _SAID_AS |= {w: _added.split()[0] for w in _also.split()}


def _bounded(text: str, needle: str) -> bool:
    """Whether ``text`` holds ``needle`` as a whole address (no letter, digit or path character around it, nor a
    dot, ``@`` or ``:`` before it: ``shop.example.com`` is not said by ``staging.shop.example.com``)."""
    i = text.find(needle)
    while i != -1:
        before = text[i - 1] if i else " "
        end = i + len(needle)
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "-_/.@:") and not (after.isalnum() or after in "-_/"):
            return True
        i = text.find(needle, i + 1)
    return False


_CAMEL_NAME = compile_linear(r"[A-Za-z0-9]{2,80}")


def _camel_split(name: str) -> list[str]:
    """A camel-case name's words: a new one at a capital after a lower-case letter, and at the last capital of a
    run before a lower-case letter (``privateKey``, ``AWSSecretKey``, ``JWTSecret``, ``SSHKey``); digits apart."""
    parts, start = [], 0
    for i in range(1, len(name)):
        prev, c = name[i - 1], name[i]
        nxt = name[i + 1] if i + 1 < len(name) else ""
        if (
            (prev.islower() and c.isupper())
            or (prev.isupper() and c.isupper() and nxt.islower())
            or (prev.isdigit() != c.isdigit())
        ):
            parts.append(name[start:i])
            start = i
    parts.append(name[start:])
    return [p for p in parts if p.isalpha()]


def _camel_words(text: str, said: AbstractSet[str]) -> set[str]:
    """The words of each camel-case name in ``text`` (a proposal's value: MAX_CHARS at most) that the person did not
    write as one word themselves (``postcss`` said is ``PostCSS`` written, no "post")."""
    out: set[str] = set()
    for m in _CAMEL_NAME.finditer(text):
        name = m.group(0)
        if name.islower() or name.isupper() or name.lower() in said:
            continue
        parts = [w.lower() for w in _camel_split(name)]
        if len(parts) > 1:
            out.update(parts)
    return out


def _anchors(text: str, said: AbstractSet[str] | None = None) -> tuple[set[str], set[str], bool, set[str]]:
    """(addresses, numbers, whether it negates, degree, command and sensitive words) a text states, lower-cased, in
    its normal form, thousands separators out; with ``said`` (the person's words, lower-cased: ``text`` is then a
    proposal's value), a camel-case name is read as its words too (``privateKey``)."""
    text = fold(text)
    for _ in range(2):  # "1,234,567": each pass joins every other group
        text = _THOUSANDS.sub(r"\1\2", text)
    found = [m.group(0) for m in _URL.finditer(text)] + [m.group(0) for m in _PATHLIKE.finditer(text)]
    addresses = {
        a.lower().rstrip(".,;:)").removeprefix("./")
        for a in found
        if not a.replace(".", "").isdigit() and any(c.isalpha() for c in a)
    }
    addresses |= {" ".join(m.group(1).lower().split()) for m in _TICKED.finditer(text)}
    addresses |= {m.group(1).lower() for m in _FLAG.finditer(text)}
    numbers = {m.group(0).lstrip("0") or "0" for m in _NUMBER.finditer(text)}
    words = {w.lower().replace("\u2019", "'") for w in (m.group(0) for m in _WORDS.finditer(text))}
    if said is not None:
        words |= _camel_words(text, said)
    words |= {w[:-2] for w in words if w.endswith("'s")}  # "the production's" says "production"
    marked = (words & (_DEGREES | _COMMAND_WORDS)) | {_SENSITIVE[w] for w in words if w in _SENSITIVE}
    return addresses, numbers, bool(words & _NEGATIONS), marked


def _said_families(text: str) -> set[str]:
    """The sensitive families the person's ``text`` names by a word that only counts as said (``_SAID_AS``: a
    family of one or two words, never one that names a secret's file: "environment" says "env", not "kubeconfig")."""
    return {_SAID_AS[w] for w in (m.group(0).lower() for m in _WORDS.finditer(fold(text))) if w in _SAID_AS}


def _shortens(title: str, value: str) -> bool:
    """Whether ``title`` is the start of ``value``: its words, numbers and symbols are the value's first ones, stop
    words too (in their normal form, lower case, contractions spelled out; commas, stops, colons, quotes and
    brackets aside), and it keeps every word of the value that could turn it around (``_TURNING``: a negation,
    "except", "unless", "off", "only", "false"...). A title is a name for the value, never a summary: a word
    left out, a number cut short ("20" for "20.5"), a symbol added ("≠") or a qualifier dropped fails."""
    said, told = _tokens(value), _tokens(title)
    if not told or said[: len(told)] != told:
        return False
    return {w for w in said if w in _TURNING} <= set(told)


# Words that turn what a value says around or bound it: a title that leaves one out says something else.
_TURNING = (
    _NEGATIONS
    | _DEGREES
    | _COMMAND_WORDS
    | frozenset(
        """except excluding unless but off if until only banned prohibited disallowed deprecated instead
        unsupported unsafe rather before after above below over under up down out false was were less more
        replaced replaces""".split()
    )
)
_CONTRACTION = re.compile(r"(?i)\b(won|can|shan|[a-z]{1,10})n't\b")
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*[^\W\d_]*|[^\W\d_]+|[^\w\s]")
_PUNCTUATION = frozenset(",.;:!?'\"()[]{}")


def _tokens(text: str) -> list[str]:
    """``text``'s words, numbers (with their decimals and unit: "20.5", "30s") and symbols in their normal form,
    lower case, contractions spelled out, without commas, stops, colons, quotes and brackets."""
    text = fold(text).lower()
    for mark in "\u2019\u00b4`":
        text = text.replace(mark, "'")
    text = _CONTRACTION.sub(lambda m: {"won": "will", "can": "can", "shan": "shall"}.get(m.group(1), m.group(1)) + " not", text)
    return [t for t in _TOKEN.findall(text) if t not in _PUNCTUATION]


def unsupported(value: str, cited: list[Turn]) -> list[str]:
    """What ``value`` states that the person's typed turns among ``cited`` do not: each address, number, degree,
    command word or word of a secret or of sending one away (``_SENSITIVE``, by family) must be in them, and a negation
    must be in both or neither (a model that keeps the person's words but swaps the host, adds a "never" or drops
    one changes what the person said). One typed turn must say all of it: read together, a second turn cited for its
    "don't" (about the lockfile) made a "never" the model added to the first look said (an outside attack), and so
    would a host or a number from a turn about something else. A value put together from several turns waits for
    the person."""
    typed = _typed(cited)
    if len(typed) < 2:
        return _unsupported_by(value, typed)
    # A turn backs the value alone when it says all the value's anchors and the value takes no word from another
    # cited turn that this one does not say: padded with the lockfile turn's words ("Never run the migrations; don't
    # touch the lockfile"), the value borrows "run" and "migrations" from the first turn, which does not negate (a
    # review found a tie on shared words let the padding through).
    mine = content_words(value)
    words = [content_words(t.text) for t in typed]
    for i, t in enumerate(typed):
        borrowed = (mine - words[i]) & set().union(*(w for j, w in enumerate(words) if j != i))
        if not borrowed and not _unsupported_by(value, [t]):
            return []
    together = _unsupported_by(value, typed)
    return together or ["what it says from several of the person's turns at once"]


@dataclass(frozen=True)
class _Said:
    """What the person's typed words state, as ``_unsupported_by`` compares a value with them."""

    addresses: frozenset[str]
    numbers: frozenset[str]
    negates: bool
    words: frozenset[str]
    folded: str
    plain: frozenset[str]


@functools.lru_cache(maxsize=8)
def _said(said_text: str) -> _Said:
    """``said_text`` read once for all the proposals that cite it (20 a chunk at most): each read it again, and a
    pasted document of 200 KB taken for the person's typed words cost a chunk 37 s (an outside review). A few are
    kept whatever their length: the chunk's cited turns, alone and together."""
    addresses, numbers, negates, words = _anchors(said_text)
    words |= _said_families(said_text)
    folded = fold(said_text).lower()
    plain = frozenset(m.group(0).lower() for m in _CAMEL_NAME.finditer(folded))
    return _Said(frozenset(addresses), frozenset(numbers), negates, frozenset(words), folded, plain)


def _unsupported_by(value: str, typed: list[Turn]) -> list[str]:
    said_text = "\n".join(t.text for t in typed)
    said = _said(said_text)
    addresses, numbers, negates, words = _anchors(value, said.plain)
    out = [a for a in sorted(addresses) if a not in said.addresses and not _bounded(said.folded, a)]
    out += [n for n in sorted(numbers) if n not in said.numbers]
    out += [f'"{w}"' for w in sorted(words - said.words)]
    if negates != said.negates:
        out.append("a negation the person did not say" if negates else "the person's negation left out")
    turned = _turned_words(value, said_text)
    if turned:
        named = ", ".join(f'"{w}"' for w in turned[:3])
        out.append(f"the person's {named} turned around by a negation")
    swapped = _swapped(value, said_text)
    if swapped:
        out.append(f"the person's {', '.join(swapped[:4])} each put with what was said of another")
    return out


# Where a negation's reach ends: a clause's end (a stop or a comma before a space, a semicolon, a colon, a line's end)
# or a word that starts another clause ("don't deploy on Fridays when the release is big": the release is not what
# is negated). Linear: no nesting, no backtracking.
_CLAUSE = compile_linear(
    r"[;:!?\n]|[.,](?:\s|$)|\s(?:but|whereas|while|then|when|if|unless|because|before|after|until|since|where)\s"
)
_WORD = compile_linear(r"[\w'\x{2019}]+")
_TERM = re.compile(r"\w+")
_AFTER = {"of": "instead", "than": "rather"}  # "instead of yarn", "rather than npm": what follows is not wanted
# Verbs too general to carry a rule: "I never use tabs" said as "use spaces, never tabs" moves "use", not the rule.
_GENERIC = frozenset("use run do make get set have go put take keep let be need want try add allow".split())
_OF_AN_OBJECT = frozenset(("without",))  # a negation of what follows it, not of its clause's verb
_CACHED_CHARS = 64 * 1024  # a typed turn longer than this is kept among the few long ones (4), not the 64


def _polarities(text: str) -> dict[str, frozenset[tuple[bool, bool]]]:
    """Each content word of ``text`` (stopwords out, -s/-ed/-ing folded) and how it stands, once per place: (whether
    a negation of its clause comes before it: "never open a PR", "not production", "instead of yarn"; whether its
    clause holds a negation of more than an object, "without the db" not counted). A "no" inside a hyphenated word
    or a flag (`--no-verify`) negates nothing. The person's typed turn is read once for all the proposals that cite
    it (short ones are kept)."""
    return _polarities_kept(text) if len(text) <= _CACHED_CHARS else _polarities_long(text)


@functools.lru_cache(maxsize=64)
def _polarities_kept(text: str) -> dict[str, frozenset[tuple[bool, bool]]]:
    return _read_polarities(text)


@functools.lru_cache(maxsize=4)
def _polarities_long(text: str) -> dict[str, frozenset[tuple[bool, bool]]]:
    return _read_polarities(text)  # a long turn: the few of the chunk being decided


def _read_polarities(text: str) -> dict[str, frozenset[tuple[bool, bool]]]:
    out: dict[str, set[tuple[bool, bool]]] = {}
    for clause in _CLAUSE.split(fold(text).lower()):
        negated = False
        # Whether the clause negates what it says, not only an object of it: "without the db" alone leaves "run
        # tests without the db" a clause that tells to run tests (the person's "don't run tests without the db"
        # turned around), where "tests without the db are not run" keeps the rule. Narrower than any negation only:
        # what the flag lets through was let through before.
        any_negation = False
        before = ""
        seen: list[tuple[str, bool]] = []
        for m in _WORD.finditer(clause):
            word = m.group(0).replace("\u2019", "'")
            hyphened = m.start() > 0 and clause[m.start() - 1] == "-"
            if (word in _NEGATIONS and not hyphened) or _AFTER.get(word) == before:
                negated = True
                any_negation = any_negation or word not in _OF_AN_OBJECT
                before = word
                continue
            before = word
            seen += [(_fold(t), negated) for t in _TERM.findall(word) if t not in STOPWORDS]
        for w, neg in seen:
            out.setdefault(w, set()).add((neg, any_negation))
    return {w: frozenset(ways) for w, ways in out.items()}


# For the pairing of values with what they are values of (``_swapped``): a text's sentences (not split at a colon:
# `localhost:5432`, "staging db: db2.internal"), each split at its commas and at "and", "when" and the like where
# each part then holds one value ("the dev database on 5433 and the test one on 5432"), else at its commas alone
# where each holds one, else read whole: not where a part holds none ("dev, test dbs on 5432, 5433", "staging and
# prod run node 18 and 20": a list of subjects, then of values). A value: a token holding a digit (a port, a
# version, a numbered host) or a dotted name (`db.staging.internal`).
_PAIR_CLAUSE = compile_linear(r"[;!?\n]|[.](?:\s|$)")
_PAIR_COMMAS = compile_linear(r",(?:\s|$)")
_PAIR_PARTS = compile_linear(
    r",(?:\s|$)|\s(?:and|but|whereas|while|then|when|if|unless|because|before|after|until|since|where)\s"
)
_VALUE = compile_linear(r"[\w.:/-]{0,80}\d[\w.:/-]{0,80}|[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}")
# Words that stand for a noun said before ("the test one on 5433"): no word of what a value is said of.
_STAND_INS = frozenset(("one", "ones"))


def _values_in(clause: str) -> set[str]:
    return {m.group(0).strip(".:/-") for m in _VALUE.finditer(clause)} - {""}


def _paired(text: str) -> dict[str, frozenset[str]]:
    """Each value ``text`` states in a clause of its own (the clause's only value), and the clause's words: what
    that value is said of ("the test database on 5433"). The person's typed turn is read once for all the
    proposals that cite it (short ones are kept, as ``_polarities``)."""
    return _paired_kept(text) if len(text) <= _CACHED_CHARS else _paired_long(text)


@functools.lru_cache(maxsize=64)
def _paired_kept(text: str) -> dict[str, frozenset[str]]:
    return _read_pairs(text)


@functools.lru_cache(maxsize=4)
def _paired_long(text: str) -> dict[str, frozenset[str]]:
    return _read_pairs(text)


def _read_pairs(text: str) -> dict[str, frozenset[str]]:
    text = fold(text).lower()
    for _ in range(2):
        text = _THOUSANDS.sub(r"\1\2", text)
    out: dict[str, set[str]] = {}
    for whole in _PAIR_CLAUSE.split(text):
        for splitter in (_PAIR_PARTS, _PAIR_COMMAS, None):
            parts = splitter.split(whole) if splitter is not None else [whole]
            held = [_values_in(part) for part in parts]
            if splitter is None or all(len(v) == 1 for v in held):
                break
        for clause, values in zip(parts, held, strict=True):
            if len(values) != 1:
                continue
            words = {_fold(t) for t in _TERM.findall(_VALUE.sub(" ", clause)) if t not in STOPWORDS and not t.isdigit()}
            out.setdefault(next(iter(values)), set()).update(words - _GENERIC - _STAND_INS)
    return {v: frozenset(words) for v, words in out.items()}


def _swapped(value: str, said_text: str) -> list[str]:
    """The person's values the value puts with what the person said of another of them ("the dev database on
    5432, the test database on 5433" as "the dev database on 5433, the test one on 5432"): of two values, a word
    said in the clause of each only, each now in the clause of the other only, and none left in its own. Only values
    each alone in its clause in both texts are compared (a clause ends at "and" too), nothing is read into an order,
    and one word moving is no swap: a verb the person left out of a second clause ("the test database on 5433") may
    be restated in it. A swap that leaves a word with its value (the verb said once, in the first clause) is not
    told from a reordering, and is not queued."""
    theirs, mine = _paired(said_text), _paired(value)
    both = [v for v in mine if v in theirs]
    out: set[str] = set()
    for a in both:
        for b in both:
            if a == b or not theirs[a] & mine[b]:
                continue
            only_a, only_b = theirs[a] - theirs[b], theirs[b] - theirs[a]
            now_a, now_b = mine[a] - mine[b], mine[b] - mine[a]
            # each value took a word of the other's, and kept none of its own: a word that stayed ("dev" with 5432
            # in "the test database on 5433 and the dev one on 5432") says the clauses were only reordered, the verb
            # said once moving with the first of them
            if only_a & now_b and only_b & now_a and not only_a & now_a and not only_b & now_b:
                out.update((a, b))
    return sorted(out)


def _turned_words(value: str, said_text: str) -> list[str]:
    """The person's words the value turns around. Every word of "Always push to main; never open a PR from a branch"
    is the person's and a negation is in both, but the person said "Never push to main; always open a PR from a
    branch" (an outside attack: word sets alone wrote it unreviewed). Turned: a word the person said only under a
    negation that the value says only outside one, in a clause that negates nothing ("Push to main; never skip
    review"), or while the value also puts a negation on words the person said without one ("skip the lint step and
    never run the tests"). A restatement that keeps the rule's words where a negation governs them (passive voice,
    "sudo should not be used"; clauses or a list reordered) is not turned."""
    theirs, mine = _polarities(said_text), _polarities(value)

    def negs(ways: frozenset[tuple[bool, bool]]) -> set[bool]:
        return {neg for neg, _clause in ways}

    dropped = [
        w for w, ways in mine.items() if w not in _GENERIC and negs(ways) == {False} and w in theirs and negs(theirs[w]) == {True}
    ]
    if not dropped:
        return []
    bare = sorted(w for w in dropped if not any(clause for _neg, clause in mine[w]))
    added = [
        w for w, ways in mine.items() if w not in _GENERIC and negs(ways) == {True} and w in theirs and negs(theirs[w]) == {False}
    ]
    return bare or (sorted(dropped) if added else [])


def _cited_sources(cited: list[Turn]) -> str:
    def name(t: Turn) -> str:
        source = str(t.flags.get("source") or "unknown")
        return f"{source} beside a paste" if source == TRUSTED and t.flags.get("near_paste") else source

    names = sorted({name(t) for t in cited})
    return ", ".join(names) or "no turn"


def decide(
    mem: Memory, p: Proposal, cited: list[Turn], value_owner: Callable[[str], str | None], second: SecondOpinion | None = None
) -> Decision:
    """What to do with ``p``, whose cited turns are ``cited``.

    ``value_owner(value)`` names the key that holds the same value already
    (or None); ``second`` asks the second opinion (None: no model).
    """
    key, ftype, value = p.key, p.type, p.value
    anchors = [t.anchor for t in cited]
    # 1. reject what is malformed or holds a credential
    try:
        validate_key(key)
        if mem.current(key) is None:
            # A key the write would create: canonical (no segment ending in ".", "-" or "_").
            check_new_key(key)
        # Not one that reads like a stored key (user/edit0r beside user/editor), nor an old key that reads like one
        # of the person's, which the store would refuse.
        mem.check_lookalike(key)
    except BeadError:
        return Decision("reject", "invalid key")
    found = screen(value, key, p.title) if value else None
    if ftype not in TYPES or not value or len(value) > rules.MAX_CHARS or (found and found.kind == SECRET):
        why = (
            "invalid type"
            if ftype not in TYPES
            else "empty"
            if not value
            else "over 600 characters"
            if len(value) > rules.MAX_CHARS
            else "changed by the secret scan"
        )
        return Decision("reject", why)
    # 2. a forgotten or rejected value stays gone
    if mem.tombstones.refuses(value, key):  # said inside a sentence, or as the key
        return Decision("skip", "tombstone")
    source = provenance(value, cited)

    def out(action: str, detail: str = "", kind: str = "", other: str = "", opinion: Opinion | None = None) -> Decision:
        return Decision(action, detail, kind, source, other, anchors, opinion)

    # 3. what must wait for a person
    if found is not None:  # invisible characters, or an instruction to an AI agent
        return out("queue", found.reason, "suspicious")
    replaces = p.replaces.split("@", 1)[0] if p.replaces else None  # a version id names its key
    try:
        validate_key(replaces or "")
    except BeadError:
        # Not a key ("none", a sentence): nothing is replaced. The model's words never reach the review card,
        # where a sentence would read as bead's reason.
        replaces = None
    if replaces and replaces != key:
        return out("queue", f"the model says it replaces the key `{replaces}`", "key-conflict")
    current = mem.current(key)
    if current and persons(current) and normalise(current.body) != normalise(value):
        return out("queue", f"would change {current.id}, which the person {said(current)}", "change-user-stated")
    # 4. nothing new: reinforce what is stored
    if current and normalise(current.body) == normalise(value):
        return out("unchanged", other=current.id)
    if (
        current
        and cited
        and current.valid_from <= iso(mem.clock() + CLOCK_AHEAD)
        and all(t.at and t.at < current.valid_from for t in cited)
    ):
        # Every turn that backs it is older than the value it would replace (a session brought in by `bead import`,
        # a dream run over old turns): the stored value may be the newer word on it. A person says which.
        when = min(t.at for t in cited)[:10]
        return out("queue", f"would change {current.id} with what turns from {when} said, older than it", "untrusted-source")
    other = value_owner(value)
    if other and other != key:
        return out("duplicate", other=other)
    # 5. only the person's own words are written unseen, in the session's project or the person's own keys
    if source == UNTRUSTED:
        return out("queue", f"no typed words of the person back it (cited: {_cited_sources(cited)})", "untrusted-source")
    added = unsupported(value, cited)
    if added:
        return out("queue", f"says what the person's typed words do not: {', '.join(added[:5])}", "untrusted-source")
    projects = {str(t.flags["project"]) for t in cited if t.flags.get("project")}
    scope = key.split("/")[0]
    if scope == "global" or (scope == "project" and key.split("/")[1] not in projects):
        where = "every project" if scope == "global" else f"project {key.split('/')[1]}"
        return out(
            "queue", f"a fact for {where}, from a session of {', '.join(sorted(projects)) or 'no project'}", "key-conflict"
        )
    # 6. a second opinion from a call that never read the transcript
    if second is not None:
        op = second(key, ftype, value)
        why = _screened_reason(mem, op.reason)
        if op.kind == "instruction":
            return out("queue", f"second opinion: an instruction to an AI agent ({why})", "suspicious", opinion=op)
        if op.kind != "fact":
            return out("queue", f"second opinion failed, so it waits for a person ({why})", "suspicious", opinion=op)
        return out("write", opinion=op)
    return out("write")


def _screened_reason(mem: Memory, reason: str) -> str:
    """The second opinion's reason as a queue item keeps it: the model's own words, which may repeat the value it
    judged (a forgotten one, a credential): credentials redacted, and none of it where it says a forgotten value.
    Stored unscreened, both reached the queue's file, `bead review` and the dashboard."""
    if mem.tombstones.refuses(reason):
        return "its reason is not kept: it said a forgotten value"
    return redact(reason)[0]
