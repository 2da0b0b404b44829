"""Port gitleaks' default rules into bead/capture/rules.yaml (a maintainer's tool, not run by bead).

    git -C gitleaks show v8.30.1:config/gitleaks.toml > /tmp/gitleaks.toml
    python setup_scripts/port_gitleaks.py /tmp/gitleaks.toml v8.30.1 <commit> > /tmp/gitleaks-rules.yaml

The output is the `gitleaks:` part of rules.yaml: rule data only (ids,
patterns, keywords, entropy, secret groups, allowlists), no code. gitleaks is
MIT-licensed (Copyright (c) 2019 Zachary Rice), which allows copying it with
its notice. What bead changes, and why, is in ADAPT below and is written next
to each adapted rule:

- gitleaks scans files; bead scans conversation. A key in running text is
  followed by `.`, `,`, `)` and the like, which gitleaks' closing boundary
  `(?:[\x60'"\\s;]|\\\\[nr]|$)` does not accept, so a key at the end of a
  sentence was missed: the boundary gets those characters too, and a URL's
  next parameter (`&`), brackets and any character beyond ASCII (a Japanese
  full stop, French quotes, an em dash: a key's own characters are ASCII).
- Length caps meant for the usual key length miss a longer key entirely when
  a boundary must follow (a Stripe live key of 107 characters): lifted.
- File-path allowlists (and rules that match a file name only) do not apply
  to conversation text and are left out.
- The global allowlist's `(?i)^true|false|null$` means "starts with true, or
  holds false anywhere, or ends in null" (alternation binds loosest), so every
  secret with `false` in it was let through (`password=PW&useSSL=false` in a
  JDBC URL, a password `Xfalse...`): it is read as meant, a whole value of
  true, false or null (GLOBAL_ADAPT).

Every pattern is RE2 syntax already (gitleaks is Go, whose regexp is RE2):
no lookaround, no backreferences; the tool checks that each one compiles.
"""

from __future__ import annotations

import sys
import tomllib

import re2
import yaml

BOUNDARY = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
PROSE_BOUNDARY = r"""(?:[\x60'"\s;.,:!?)\]}>&|(\[{<#*~^]|[^\x00-\x7f]|\\[nr]|$)"""
ADAPT = {
    "stripe-access-token": (
        "[a-zA-Z0-9]{10,99})",
        "[a-zA-Z0-9]{10,})",
        "no upper length: a longer live key was not redacted at all",
    ),
}
# Allowlists bead adds to a rule (regexes, their target, why): what the rule takes in conversation text and is none.
ALLOW_ADD = {
    "hashicorp-tf-password": (
        [
            r"""(?i:password)\w*["']?[ \t]*,[ \t]*["']"""
            r"""(?:(?:[a-z]+_)+[a-z]+|(?:[a-z]+_)*password[0-9]?|username|email|login|name"""
            r"""|(?:pbkdf2|bcrypt|argon2|scrypt|sha[0-9]{0,3}|md5|crypt|unsalted)"""
            r"""(?:_(?:pbkdf2|bcrypt|argon2|scrypt|sha[0-9]{0,3}|md5|crypt|unsalted|id|i|d))*)["']""",
            r"""(?i)password["']?[ \t]*:[ \t]*["']password["']""",
        ],
        "match",
        "a field's name after a comma (snake_case, password2, username) is the next item of a list of names, a"
        ' password hasher\'s name (Django\'s check_password("password", "pbkdf2_sha256")) is none, and a label that'
        " says Password is a form's, not a value",
    ),
}
# The global allowlist's regexes that do not say what they mean, and what bead reads instead.
GLOBAL_ADAPT = {"(?i)^true|false|null$": "(?i)^(?:true|false|null)$"}


def port(toml: dict) -> dict:
    out_rules = []
    for r in toml["rules"]:
        if "regex" not in r:
            continue  # a file-name rule (pkcs12-file)
        pattern = r["regex"]
        notes = []
        if BOUNDARY in pattern:
            pattern = pattern.replace(BOUNDARY, PROSE_BOUNDARY)
            notes.append("closing boundary also accepts sentence punctuation")
        if r["id"] in ADAPT:
            old, new, why = ADAPT[r["id"]]
            assert old in pattern, r["id"]
            pattern = pattern.replace(old, new)
            notes.append(why)
        re2.compile(pattern)
        rule: dict = {"id": r["id"], "keywords": [k.lower() for k in r.get("keywords", [])], "pattern": pattern}
        if r.get("secretGroup"):
            rule["group"] = r["secretGroup"]
        elif _first_group_repeats(pattern):
            # bead takes a rule's first group that matched as its secret; where that group is a repeated piece of
            # the secret (microsoft-teams-webhook's `([a-z0-9]{4}-){3}`), only four characters of it went: the whole
            # match is the secret
            rule["group"] = 0
            notes.append("the whole match is the secret (its first group is a repeated part of it)")
        if r.get("entropy"):
            rule["entropy"] = r["entropy"]
        allow = []
        for a in r.get("allowlists", []):
            if a.get("paths"):
                continue  # about file paths (alone, or AND-ed with them): never true for conversation text
            entry: dict = {}
            if a.get("regexes"):
                for rx in a["regexes"]:
                    re2.compile(rx)
                entry["regexes"] = a["regexes"]
                entry["target"] = a.get("regexTarget", "secret")
            if a.get("stopwords"):
                entry["stopwords"] = [w.lower() for w in a["stopwords"]]
            if entry:
                allow.append(entry)
        if r["id"] in ALLOW_ADD:
            regexes, target, why = ALLOW_ADD[r["id"]]
            for rx in regexes:
                re2.compile(rx)
            allow.append({"regexes": regexes, "target": target})
            notes.append(why)
        if allow:
            rule["allow"] = allow
        if notes:
            rule["adapted"] = "; ".join(notes)
        out_rules.append(rule)
    glob = toml.get("allowlist", {})
    regexes = [GLOBAL_ADAPT.get(rx, rx) for rx in glob.get("regexes", [])]
    return {"allow": {"regexes": regexes, "stopwords": [w.lower() for w in glob.get("stopwords", [])]}, "rules": out_rules}


def _first_group_repeats(pattern: str) -> bool:
    """Whether the first capturing group of ``pattern`` stands inside a repeat (``(...){3}``, ``(?:a(...))+``)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import sre_constants
        import sre_parse

    def first(items: list, repeated: bool) -> bool | None:
        for op, av in items:
            if op is sre_constants.SUBPATTERN:
                if av[0] is not None:
                    return repeated
                got = first(list(av[3]), repeated)
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                got = first(list(av[2]), repeated or av[1] != 1)
            elif op is sre_constants.BRANCH:
                got = next((g for b in av[1] if (g := first(list(b), repeated)) is not None), None)
            else:
                continue
            if got is not None:
                return got
        return None

    # Python's parser reads RE2's syntax but for flags set mid-pattern and \z, which change no group
    return bool(first(list(sre_parse.parse(pattern.replace("(?i)", "").replace("\\z", "$"))), False))


def main() -> None:
    path, version, commit = sys.argv[1:4]
    with open(path, "rb") as f:
        data = port(tomllib.load(f))
    data = {"version": version, "commit": commit, **data}
    yaml.safe_dump({"gitleaks": data}, sys.stdout, sort_keys=False, allow_unicode=True, width=100000)


if __name__ == "__main__":
    main()
