"""bead vault init/status, bead seal, bead unseal, bead sealed list/show.

The passphrase comes from the terminal (asked without echo; twice for
`vault init`), from a file descriptor (``--passphrase-fd N``: one line) or
from an environment variable (``--passphrase-env NAME``), for scripts. It is
never logged, stored or printed; the bytes read from a descriptor are zeroed
once decoded (a Python string cannot be), and the variable is removed from
bead's environment as it is read, so no process bead starts inherits it.
"""

from __future__ import annotations

import os

import click

from . import common
from .common import echo, emit, json_option, open_memory

MAX_PASSPHRASE_BYTES = 4096


def passphrase_options(f):
    f = click.option(
        "--passphrase-env", metavar="NAME", help="Read the passphrase from the environment variable NAME (for scripts)."
    )(f)
    f = click.option(
        "--passphrase-fd",
        type=int,
        metavar="N",
        help="Read the passphrase from file descriptor N, up to the first newline (for scripts).",
    )(f)
    return f


def _read_fd(fd: int) -> str:
    from ..errors import BeadError

    buf = bytearray()
    try:
        while True:
            b = os.read(fd, 1)  # one byte at a time: nothing after the line is taken from the descriptor
            if not b or b == b"\n":
                break
            buf += b
            if len(buf) > MAX_PASSPHRASE_BYTES:
                raise BeadError(
                    f"the passphrase on file descriptor {fd} is longer than {MAX_PASSPHRASE_BYTES} bytes",
                    "write the passphrase and one newline to the descriptor",
                )
        if buf.endswith(b"\r"):
            buf[-1:] = b""
        return buf.decode("utf-8")
    except OSError as exc:
        raise BeadError(
            f"cannot read the passphrase from file descriptor {fd} ({exc.strerror})",
            "open the descriptor for reading when starting bead, e.g. `bead ... --passphrase-fd 3 3<file`",
        ) from None
    except UnicodeDecodeError:
        raise BeadError(f"the passphrase on file descriptor {fd} is not UTF-8 text", "write it as UTF-8") from None
    finally:
        buf[:] = bytes(len(buf))


def read_passphrase(fd: int | None, env: str | None, *, confirm: bool) -> str:
    """The passphrase from ``--passphrase-fd``, ``--passphrase-env`` or the terminal (twice when ``confirm``)."""
    from ..errors import BeadError

    if fd is not None and env:
        raise BeadError("give --passphrase-fd or --passphrase-env, not both", "pick one way to pass the passphrase")
    if fd is not None:
        if not 0 <= fd < 1 << 20:  # os.isatty of a number past what a descriptor can be raised OverflowError
            raise BeadError(
                f"{fd} is no file descriptor", "give the number of a descriptor open for reading, e.g. 3 with `3<file`"
            )
        if os.isatty(fd):
            # A terminal echoes what is typed to a descriptor bead reads raw: the passphrase would stand on screen.
            raise BeadError(
                f"file descriptor {fd} is a terminal, where the passphrase would be shown as it is typed",
                "leave --passphrase-fd out to be asked without echo, or give a descriptor of a file or a pipe",
            )
        return _read_fd(fd)
    if env:
        # Taken out of the environment as it is read: every process bead starts from here on (age-keygen,
        # age-plugin-pq through pyrage) would otherwise inherit the passphrase in its environment.
        value = os.environ.pop(env, None)
        if value is None:
            raise BeadError(
                f"the environment variable {env} is not set", f"export {env} with the passphrase, or use --passphrase-fd"
            )
        try:
            value.encode("utf-8")  # bytes that are no UTF-8 come as lone surrogates, which age cannot take
        except UnicodeEncodeError:
            raise BeadError(f"the passphrase in {env} is not UTF-8 text", "set it as UTF-8, or use --passphrase-fd") from None
        return value
    if not common.at_terminal():
        raise BeadError(
            "the vault's passphrase is needed and there is no terminal to ask it at",
            "pass it with --passphrase-fd N (one line on that descriptor) or --passphrase-env NAME",
        )
    if confirm:
        return str(
            common.prompt(
                "Passphrase for the vault (12 or more characters; not shown)",
                hide_input=True,
                confirmation_prompt="Repeat the passphrase",
                err=True,
            )
        )
    return str(common.prompt("The vault's passphrase", hide_input=True, err=True))


def init_vault(home, fd: int | None, env: str | None, kind: str) -> dict:
    """Make the vault (the passphrase asked for or read first); `bead vault init` and `bead setup` call it."""
    from ..vault import keys

    passphrase = read_passphrase(fd, env, confirm=True)
    keys.check_passphrase(passphrase)
    made = keys.init(home, passphrase, kind=kind)
    del passphrase
    return {
        "kind": made.kind,
        "label": made.label,
        "recipient": made.recipient,
        "recipient_file": str(home.vault_recipient),
        "identity_file": str(home.vault_identity),
        "note": made.note,
        "warning": keys.LOST_PASSPHRASE,
    }


def show_created(d: dict, err: bool = False) -> None:
    if d["note"]:
        echo(f"note: {d['note']}", err=True)
    echo(f"created the vault: {d['label']} key", err=err)
    echo(f"  public key  {d['recipient_file']} (sealing needs only this)", err=err)
    echo(f"  identity    {d['identity_file']} (0600, encrypted with your passphrase)", err=err)
    echo(d["warning"], err=err)


@click.group()
def vault() -> None:
    """The encrypted vault for secrets: `bead vault init`, `bead vault status`."""


@vault.command("init")
@passphrase_options
@click.option(
    "--kind",
    type=click.Choice(["auto", "pq", "x25519"]),
    default="auto",
    show_default=True,
    help="auto: hybrid post-quantum when age-plugin-pq and an age 1.3 age-keygen are on PATH, else X25519.",
)
@json_option
def vault_init(passphrase_fd, passphrase_env, kind, as_json):
    """Create the vault's age key pair, the private half encrypted with a passphrase.

    The public key goes to vault/recipient.txt (sealing needs only it), the
    private key to vault/identity.age (0600). The passphrase (12 or more
    characters) is asked twice at a terminal; scripts pass it with
    --passphrase-fd or --passphrase-env. bead cannot recover a lost
    passphrase, and without it the sealed facts are lost.
    """
    from ..paths import resolve_home

    home = resolve_home().ensure()
    emit(init_vault(home, passphrase_fd, passphrase_env, kind), as_json, show_created)


@vault.command("status")
@json_option
def vault_status(as_json):
    """The vault's key (none, X25519, hybrid post-quantum), the sealed keys and what is wrong."""
    from ..vault import keys

    mem = open_memory()
    vi = keys.info(mem.home)
    counts = mem.sealed.counts()
    data = {
        **vi.as_dict(),
        "sealed_keys": len(counts),
        "sealed_versions": sum(counts.values()),
        "recipient_file": str(mem.home.vault_recipient),
        "identity_file": str(mem.home.vault_identity),
    }

    def human(d):
        if d["kind"] == "none":
            would = (
                "a hybrid post-quantum key, if age-keygen on PATH is age 1.3 or later"
                if d["age_plugin_pq"]
                else "an X25519 key: age-plugin-pq is not on PATH"
            )
            echo(f"vault          none: `bead vault init` creates it ({would})")
        else:
            echo(f"vault          {d['label']} ({d['recipient_file']})")
            echo(f"sealed         {d['sealed_keys']} key(s), {d['sealed_versions']} version(s)")
        echo(f"age-plugin-pq  {d['age_plugin_pq'] or 'not on PATH'}")
        for p in d["problems"]:
            echo(f"problem        {p['problem']}")
            echo(f"  fix: {p['fix']}")

    emit(data, as_json, human)


@click.command()
@click.argument("key")
@click.option("--as", "as_key", metavar="NEWKEY", help="Seal the versions under NEWKEY, a new key (KEY's name goes).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation at a terminal.")
@json_option
def seal(key, as_key, yes, as_json):
    """Move KEY into the vault: encrypt every version, delete the plaintext (no tombstone: a hash gives a PIN away).

    Needs no passphrase (sealing uses the public key). Like forget, it also
    redacts raw turns, episodes, review items and state lines that hold a
    value, the value's codes and rare words where a turn says them in other
    words, and removes the index rows with nothing left in the index's files.
    At a terminal it shows what it will change first and asks. A key's name
    stays on disk as the vault's folder: where it holds words of the value
    (a key "remember" made of them), --as NEWKEY seals it under another name.
    """
    from ..core import forget as forget_mod
    from ..core import seal as ops
    from . import common

    mem = open_memory()
    words = ops.name_words(mem, key) if not as_key else []
    named = (
        f"{key}'s name holds words of its value ({', '.join(words)}), which stay on disk as the vault's folder name; "
        f"`bead seal {key} --as user/secret-1` (or another neutral key) seals it under a name of your choosing"
    )
    if not yes and not as_json and common.at_terminal():
        p = forget_mod.plan_seal(mem, key).summary(mem.home.store)
        if words:
            echo(f"note: {named}", err=True)
        echo(
            f"This will seal {key}{f' under {as_key}' if as_key else ''} ({p['versions']} plaintext version(s)) and "
            f"redact {len(p['raw_turns'])} raw "
            f"turn(s) whole, {p['raw_turns_in_part']} in part (its codes and rare words said in other words), "
            f"{p['episodes']} episode(s), {p['review_items']} review item(s) and {p['session_lines']} state "
            "line(s)."
            + (f" It removes {len(p['skill_files'])} skill file(s) from your projects." if p["skill_files"] else "")
            + (f" {', '.join(p['also_in'])} also hold(s) the value in clear and stay(s)." if p["also_in"] else ""),
            err=True,
        )
        common.confirm("Seal it?", abort=True, err=True)
    summary = ops.seal(mem, key, as_key)
    if words and (yes or as_json or not common.at_terminal()):
        echo(f"warning: {named} (unseal it first: `bead unseal {key}`)", err=True)
    for path in summary["kept"]:
        echo(
            f"warning: kept {path}: it is not a version file of the key, so it was neither sealed nor "
            "deleted; look at it and delete it yourself if it holds the value",
            err=True,
        )

    common.also_in_clear(summary.get("also_in", []))
    common.skill_files_said(summary)
    if summary.get("index_emptied") is False:  # another program's read of index.db kept its WAL from emptying
        echo(f"warning: {forget_mod.INDEX_BUSY}", err=True)

    def human(d):
        echo(
            f"sealed {d['key']}: {len(d['sealed'])} version(s) encrypted in the vault, the plaintext deleted "
            f"(redacted {d['raw_turns_redacted']} raw turn(s) and {d['raw_turns_redacted_in_part']} in part, "
            f"removed {d['episodes']} episode(s) and {d['session_lines']} state line(s))"
        )

    emit(summary, as_json, human)


@click.command()
@click.argument("key")
@passphrase_options
@json_option
def unseal(key, passphrase_fd, passphrase_env, as_json):
    """Bring KEY back from the vault as private plaintext (asks for the passphrase)."""
    from ..core import seal as ops

    mem = open_memory()
    if not mem.is_sealed(key):
        from ..errors import BeadError

        raise BeadError(f"{key} is not sealed", "`bead sealed list` shows the sealed keys")
    result = ops.unseal(mem, key, read_passphrase(passphrase_fd, passphrase_env, confirm=False))
    emit(
        result,
        as_json,
        lambda d: echo(f"unsealed {key}: {len(d['versions'])} version(s) back as private plaintext (current {d['current']})"),
    )


@click.group()
def sealed() -> None:
    """What the vault holds: `bead sealed list`, `bead sealed show KEY`."""


@sealed.command("list")
@json_option
def sealed_list(as_json):
    """Sealed keys and their version counts (no passphrase: the file names tell)."""
    from ..core import seal as ops

    counts = ops.listing(open_memory())
    rows = [{"key": k, "versions": n} for k, n in counts.items()]

    def human(rs):
        if not rs:
            echo("nothing is sealed")
        for r in rs:
            echo(f"{r['key']}  {r['versions']} version(s)")

    emit(rows, as_json, human)


@sealed.command("show")
@click.argument("key")
@passphrase_options
@json_option
def sealed_show(key, passphrase_fd, passphrase_env, as_json):
    """Print the current value of a sealed KEY (asks for the passphrase)."""
    from ..core import seal as ops
    from ..errors import BeadError

    mem = open_memory()
    if not mem.is_sealed(key):
        raise BeadError(
            f"{key} is not sealed", "`bead sealed list` shows the sealed keys; `bead show KEY` prints a plaintext fact"
        )
    skipped: list = []
    fact = ops.show(mem, key, read_passphrase(passphrase_fd, passphrase_env, confirm=False), skipped)
    for path in skipped:
        echo(
            f"warning: passed over {path}: it does not decrypt with the vault's key or holds no version of "
            f"{key} (damaged, or put there by someone else); showing {fact.id}",
            err=True,
        )
    data = {
        "id": fact.id,
        "key": fact.key,
        "version": fact.version,
        "valid_from": fact.valid_from,
        "trust": fact.trust,
        "type": fact.type,
        "body": fact.body,
    }
    emit(data, as_json, lambda d: echo(d["body"], multiline=True))


COMMANDS = [vault, seal, unseal, sealed]
