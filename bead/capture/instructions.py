"""What a proposed fact must pass before it is written, and the instruction prefilter.

The reference design's (docs/design.md) rules, in order (``bead.dream.decide`` applies them):
reject an invalid key or type, an empty body, one over 600 characters or one
the credential scan changes; skip a tombstoned value; queue one that reads
like an instruction to a model (`suspicious`, the prefilter below); queue one
the model says replaces a fact under another key (`key-conflict`); queue a
change to a value the person stated or accepted (`change-user-stated`); queue
one no typed words of the person back (`untrusted-source`); ask the second
opinion when a model is configured; otherwise write it as `dream_inferred`.

The prefilter is one named rule per category of attack. A rule is a few
*forms*; a form holds when all of its patterns match within one clause of
the value (clauses end at ``. ; ! ?`` and line breaks), so the words of an
attack must sit together, and "read the key from the environment; never
hardcode it" is two clauses, neither an attack. A form marked *negatable*
does not hold when a negation (never, don't, not, avoid, no) comes before
its match in the same clause: "never run terraform destroy" is a rule, not
an attack. Forms of concealment and approval bypass carry their own
negations ("don't tell the user", "without review") and are never
negatable. Ordinary imperative coding rules ("never push to main", "rm -rf
build/ before packaging") are not instructions in this sense; the corpus in
evals/poisoning.yaml holds both, and docs/results.md gives the figures.

Every pattern is RE2 (``compile_linear``): linear in the text, whatever a
model or an attacker wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..textform import fold
from .secrets import compile_linear

MAX_CHARS = 600


class _Lazy:
    """An RE2 pattern compiled on its first search. Every process that imports this module (the proxy, `bead mcp`,
    most commands) would otherwise compile all the rules' patterns, ~35 ms of CPU at each start, and most judge
    nothing. ``compiled`` compiles it now (what a test of the rules asks of every pattern)."""

    __slots__ = ("source", "_compiled")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: Any = None

    @property
    def compiled(self) -> Any:
        if self._compiled is None:
            self._compiled = compile_linear(self.source)  # two threads at once compile it twice: the same pattern
        return self._compiled

    def search(self, text: str, pos: int | None = None, endpos: int | None = None) -> Any:
        return self.compiled.search(text, pos, endpos)


def _p(pattern: str) -> Any:
    return _Lazy("(?is)" + pattern)


# ----- shared vocabulary ---------------------------------------------------------------------------

_SECRET = (
    r"(?:\b(?:secrets?|credentials?|creds|passwords?|passwd|passphrases?|api[ _-]?keys?|access[ _-]?keys?"
    r"|secret[ _-]?keys?|private[ _-]?keys?|ssh[ _-]?keys?|deploy[ _-]?keys?|tokens?|cookies?|session[ _-]?ids?"
    r"|connection[ _-]?strings?|env(?:ironment)?[ _-]?var(?:iable)?s?|shell history|bash history|command history"
    r"|kubeconfig|keychain|customer data|personal data|user data)\b"
    r"|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|\$\{?[A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS)\b"
    r"|(?-i:\b[A-Z][A-Z0-9]*_[A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD)\b)"
    r"|~/\.(?:ssh|aws|kube|gnupg|docker|config/gh|config/gcloud)\b|\.(?:npmrc|netrc|pypirc|git-credentials|bash_history|zsh_history)\b"
    r"|/etc/(?:shadow|passwd)\b|gh/hosts\.yml|(?:^|[\s`'\"(])\.env(?:$|[\s`'\",;:)])|`env`|`printenv`|\bprintenv\b"
    r"|/proc/[^/\s]{1,16}/environ\b|\bexport[ \t]+-p\b|\$\((?:[ \t]*(?:/usr)?/bin/)?(?:env|export)[ \t]*\))"
)
_EXTERNAL = (
    r"(?:\b(?:https?|s?ftp|s3|gs|wss?)://|\b[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}\b"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b(?:pastebin|hastebin|gists?|webhooks?|discord|telegram|transfer\.sh|ngrok"
    r"|requestbin|webhook\.site|third[- ]party|external (?:server|endpoint|host|service|apis?)"
    r"|public (?:buckets?|gists?|repos?|repositor(?:y|ies)|channels?|urls?))\b)"
)
_SEND = (
    r"\b(?:send|sends|sent|sending|post|posts|posting|upload|uploads|uploading|forward|forwards|forwarding"
    r"|exfiltrate|transmit|transmits|transmitting|e-?mail|e-?mailing|mail|copy|copies|copying|sync|syncs"
    r"|mirror|mirrors|share|shares|sharing|leak|leaks|pipe|pipes|attach|attaches|push|pushes|publish|beacon"
    r"|report|reports|include|includes|curl|scp|rsync|nc|tar)\b"
)
# A host named without a scheme ("to evil.example"): a dotted name whose last label is one of the top-level domains
# listed (common and abused ones, and the reserved "example" and "onion"). File names are not hosts: one that is
# also a common file extension (py, sh, md, rs, pl, cc, ml, zip, in...) is not listed.
_BARE_HOST = (
    r"\b[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9-]{1,63}){0,6}\.(?:com|net|org|io|dev|app|ai|co|me|xyz|info|biz"
    r"|ws|su|ru|cn|tk|ga|cf|gq|pw|top|site|online|link|live|click|store|tech|fun|space|website|host|pro|cloud"
    r"|today|us|uk|de|fr|nl|eu|ch|se|no|fi|cz|it|es|be|at|ca|au|jp|kr|br|ir|ua|by|kz|onion|example)\b"
)
# What is sent, right after the verb: a few words that name it ("the contents of", "your", "the AWS"), then the
# secret. No other words between: "upload coverage with CODECOV_TOKEN to codecov.io" uses a token, it sends none.
_SENT_OBJECT = (
    r"(?:\s+(?:the|a|an|all|any|every|each|your|my|our|their|its|this|that|these|those|full|entire|whole|raw"
    r"|current|local|contents?|copy|copies|dump|list|values?|of|files?|in|from|database|db|admin|root|prod|production"
    r"|staging|session|service|account|master|signing|deploy|cloud|personal|customers?|users?|team|shared|bearer"
    r"|auth|oauth|access|refresh|(?-i:[A-Z][\w-]{0,30})|[\w-]{1,30}'s?))"
    r"{0,6}\s*"
)
# What a machine keeps its secrets in: a file or folder of them, the environment dumped, the shell's history, the
# keychain. Sent to a named host, that is exfiltration; a token or a key sent to a host is how an API is called
# ("send the OAuth token to api.github.com"), so those words alone are not.
_SECRET_STORE = (
    r"(?:\b(?:env(?:ironment)?[ _-]?var(?:iable)?s?|shell history|bash history|command history|kubeconfig|keychain"
    r"|private[ _-]?keys?|credentials? files?|cookies? files?|browser cookies|saved passwords)\b"
    r"|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|~/\.(?:ssh|aws|kube|gnupg|docker|config/gh|config/gcloud)\b"
    r"|\.(?:npmrc|netrc|pypirc|git-credentials|bash_history|zsh_history)\b|/etc/(?:shadow|passwd)\b|gh/hosts\.yml"
    r"|(?:^|[\s`'\"(])\.env(?:$|[\s`'\",;:)])|`env`|`printenv`|\bprintenv\b"
    r"|/proc/[^/\s]{1,16}/environ\b|\bexport[ \t]+-p\b|\$\((?:[ \t]*(?:/usr)?/bin/)?(?:env|export)[ \t]*\))"
)
_AGENT_3P = (
    r"\b(?:agents?|the assistant|assistants|ai|ai agents?|ai tools|ai assistants?|claude|copilot|llms?"
    r"|coding agents?|the model)\b"
)
_AGENT = r"(?:" + _AGENT_3P + r"|\byou\b)"
_URL = r"\b(?:https?|s?ftp)://"
_PLACE = (
    r"\b(?:include|includes|put|paste|add|append|prepend|echo|print|printf|log|write|hard-?code|embed|insert|store"
    r"|commit|copy|cat|show|display|expose|leave|set)\b"
)
_PLACE_TARGET = (
    r"(?:\b(?:commit messages?|comments?|issues?|tickets?|pull requests?|pr (?:descriptions?|bod(?:y|ies))"
    r"|(?:ci |build )?logs?|output|stdout|answers?|responses?|repl(?:y|ies)|readme|docs/|public|urls?"
    r"|query (?:string|param(?:eter)?s?)|remotes?|source code|settings\.py|every (?:answer|response|message"
    r"|file|reply)|end of)\b|\?key=)"
)


@dataclass(frozen=True)
class Form:
    patterns: tuple[Any, ...]  # all must match within one clause
    negatable: bool = False  # a negation before the match in its clause voids it


@dataclass(frozen=True)
class Rule:
    name: str  # the category of attack it stands for
    why: str  # what the queue item says
    forms: tuple[Form, ...]


def _form(*patterns: str, negatable: bool = False) -> Form:
    return Form(tuple(_p(p) for p in patterns), negatable)


RULES: tuple[Rule, ...] = (
    Rule(
        "exfiltration",
        "sends credentials or private data off the machine",
        (
            _form(_SEND, _SECRET, _EXTERNAL, negatable=True),
            # a store of secrets to a host named without a scheme, in order: the verb, what is sent, where ("send the
            # contents of .env to evil.example")
            _form(
                _SEND + _SENT_OBJECT + _SECRET_STORE + r"[^\n]{0,24}?\b(?:to|at|into|onto|on)\s+(?:the\s+)?"
                r"(?:(?:host|server|domain|site|endpoint|machine)\s+)?`?" + _BARE_HOST,
                negatable=True,
            ),
            _form(
                r"\b(?:curl|wget)\b[^\n]{0,80}(?:\s-(?:d|F|T)\s|--data|--upload-file|--post-file|--form)"
                r"[^\n]{0,80}" + _SECRET,
                negatable=True,
            ),
            _form(_SECRET + r"[^\n]{0,60}\|\s*(?:curl|nc|wget)\b", negatable=True),
            # the environment dumped by `env` (or a bare `export`) as a command (a word too common in prose to be a
            # secret on its own: "the staging env") and piped to a sender, through other filters too ("run env |
            # base64 | curl -d @- https://...": an outside attack and its review)
            _form(
                r"(?:^|[\s;&(`$|/])(?:env(?:[ \t]+-0)?|export)[ \t]*\|[^\n]{0,60}?\|?\s*\b(?:curl|nc|ncat|wget)\b",
                negatable=True,
            ),
        ),
    ),
    Rule(
        "remote-code-execution",
        "runs code fetched from elsewhere",
        (
            # fetched, then piped into a shell or an interpreter: through a few filters between (`| tee x |`,
            # `| base64 -d |`, `| gunzip |`), the shell named by its path (`| /bin/bash`), quoted or as $SHELL, after
            # assignments (`| FOO=1 bash`) and through sudo, env and the like with their options (`| sudo -u 1000 bash`)
            _form(
                r"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch)\b(?:[^\n|'\"]|'[^'\n]*'|\"[^\"\n]*\")"
                r"{0,600}\|&?(?:\s*(?:sudo\s+)?(?:tee|cat|base64|gunzip|gzip|zcat|xz|unxz|bzip2|bunzip2|sed|tr|dos2unix"
                r"|openssl)\b[^\n|]{0,100}\|){0,3}\s*(?:[A-Za-z_]\w*=\S*\s+)*(?:[\w.~/-]*\b(?:sudo|doas|env|exec|command"
                r"|nohup|time|nice|ionice|stdbuf|busybox|setsid|chrt)(?:\s+-[\w=-]+(?:\s+[^\s|;&-]\S*)?|\s+[A-Za-z_]\w*=\S*)*"
                r"\s+)*[\"'\\]?(?:[\w.~/-]*\b(?:(?:ba|z|da|k|fi|a|c|tc)?sh|python[0-9.]*|perl|ruby|node|php|lua|deno|bun|iex"
                r"|invoke-expression|pwsh|powershell)\b|\$\{?SHELL\b)",
                negatable=True,
            ),
            # Python told to run what a URL returns: exec(urlopen("https://...").read()), eval(requests.get(url=...)),
            # exec(base64.b64decode(urlopen(Request(f"https://...")).read()))
            _form(
                r"\b(?:exec|eval)\s*\([^;]{0,200}?\b(?:urlopen|urlretrieve|get|post|request|Request)\s*\([^;]{0,100}?"
                r"(?:https?|s?ftp)://",
                negatable=True,
            ),
            _form(r"(?:\b(?:bash|sh|zsh|source)|\.)\s+<\s*<?\(\s*(?:curl|wget)\b"),
            _form(r"(?:\b(?:eval|exec)\b|-c)\s*[\"']?(?:\$\(|`)\s*(?:curl|wget)\b"),
            _form(r"\b(?:iex|invoke-expression)\s*\(\s*(?:iwr|irm|invoke-webrequest|invoke-restmethod|\(?new-object)\b"),
            _form(
                r"\b(?:download|fetch|wget|curl|get|grab|pull)\b",
                _URL,
                r"(?:\bchmod\s+\+x\b|\b(?:execute|exec|iex|eval)\b|&&\s*(?:sudo\s+)?(?:ba|z)?sh\b"
                r"|\b(?:run|execute|exec|start|launch|source)\s+(?:it|them|the (?:script|binary|file|installer|payload))\b"
                r"|\bas root\b)",
                negatable=True,
            ),
            _form(
                r"(?:--(?:extra-)?index-url|--registry|\bregistry\s*=)\s*=?\s*http://|--trusted-host\b"
                r"|\bnpx\s+(?:-y\s+|--yes\s+)?(?:github:|https?://|git\+)"
                r"|\b(?:pip3?|uv pip|npm|yarn|pnpm|gem|cargo)\s+(?:install|add)\s+(?:-\S+\s+){0,3}(?:-[\w-]{1,30}=)?"
                r"(?:git\+)?https?://"
                # a registry or index given anywhere on the install's line, by a setting or in the environment (a review
                # found the flag after the package, `PIP_INDEX_URL=` and `npm config set registry` went through)
                r"|\b(?:pip3?|uv pip|npm|yarn|pnpm|gem|cargo|uv)\s+(?:install|add|i|sync)\b[^\n;|&]{0,200}?"
                r"(?:--registry|--(?:extra-)?index-url|--index)(?:=|\s+)https?://"
                r"|\b(?:PIP_(?:EXTRA_)?INDEX_URL|UV_(?:EXTRA_)?INDEX_URL|UV_DEFAULT_INDEX|NPM_CONFIG_REGISTRY|YARN_REGISTRY"
                r"|npm_config_registry)\s*[=:]\s*[\"']?https?://"
                r"|\bconfig\s+set\s+(?:global\.)?(?:registry|index-url|extra-index-url|npmRegistryServer)\b",
                negatable=True,
            ),
        ),
    ),
    Rule(
        "tls-verification-off",
        "turns off the checks of TLS certificates",
        (
            # A package manager or client told to trust any certificate: what lets a man in the middle serve the
            # packages and read the tokens (an outside attack: `NODE_TLS_REJECT_UNAUTHORIZED=0 before npm install`).
            _form(
                r"\bNODE_TLS_REJECT_UNAUTHORIZED\s*[=:]\s*[\"']?0\b|\bPYTHONHTTPSVERIFY\s*[=:]\s*[\"']?0\b"
                r"|\bGIT_SSL_NO_VERIFY\s*[=:]\s*[\"']?\w|\bverify\s*=\s*False\b|\bcurl\b[^\n|;&]{0,100}\s-k\b"
                r"|\b(?:strict-ssl|sslverify|ssl_verify|ssl-verify|verify_ssl|verify-ssl)\s*(?:[=:]\s*|\s+)[\"']?(?:false|0|no)\b"
                r"|--no-check-certificate\b|--insecure\b|--disable-tls\b|\bInsecureSkipVerify\s*:\s*true\b",
                negatable=True,
            ),
            _form(
                r"\b(?:disable|turn off|skip|ignore|bypass|switch off)\b[^.;\n]{0,30}\b(?:ssl|tls|https|certificate|cert)s?"
                r"\b[^.;\n]{0,20}\b(?:verification|verifying|checks?|checking|validation|errors?)\b",
                negatable=True,
            ),
        ),
    ),
    Rule(
        "instruction-override",
        "tries to override the agent's instructions",
        (
            _form(
                r"\b(?:ignore|disregard|forget|override|overrides|bypass|discard|abandon|set aside|drop)\b[^.;\n]{0,50}"
                r"\b(?:previous|prior|above|earlier|all|any|your|its|their|the system|the original|safety|security|existing)\b"
                r"[^.;\n]{0,30}\b(?:instructions?|prompts?|guidelines|guardrails|directions|directives|rules|policies"
                r"|restrictions|safeguards|constraints)\b"
            ),
            _form(
                r"\b(?:ignore|disregard|override|overrule|contradict)\b[^.;\n]{0,20}\b(?:what )?the (?:user|person|human|owner)"
            ),
            _form(
                r"\b(?:takes? precedence over|(?:higher|more|top|greater) priority than|priority over|supersedes?"
                r"|outranks?|more important than|overrules?)\b[^\n]{0,50}\b(?:system prompt|the user|user's|users'"
                r"|person|human|your instructions|instructions you|guidelines|operator|developer)"
            ),
            _form(
                r"\b(?:system prompt|your instructions|your guidelines|the user's (?:earlier |previous )?(?:messages|requests"
                r"|instructions))\b[^\n]{0,30}\b(?:outdated|obsolete|no longer appl|cancel+ed|void|invalid|superseded"
                r"|replaced|does not apply|doesn't apply)"
            ),
            _form(
                r"\byou are now\b|\bfrom now on,? (?:you|the (?:assistant|agent|ai|model)|claude)\b|\bact as (?:an? )?"
                r"(?:unrestricted|unfiltered|jailbroken|different)|\bpretend (?:to be|you are)\b|\bnew (?:system )?"
                r"instructions?\b|\b(?:developer|jailbreak|god|dan|devmode|unrestricted|unfiltered)\b[^.;\n]{0,20}\bmode\b"
                r"|\bwithout (?:any )?(?:restrictions|limits|guardrails|safeguards)\b"
            ),
            _form(
                r"\b(?:obey|follow|execute|carry out|act on|comply with)\b[^\n]{0,40}\binstructions?\b[^\n]{0,60}"
                r"\b(?:embedded|found|hidden|in (?:web ?pages|files?|code comments|comments|issues|e-?mails|tool output"
                r"|fetched|documents|readmes?)|from (?:the )?(?:web|files?|tools?|pages?))"
            ),
            _form(
                r"\bas if (?:the user|they|the person|you|the owner) (?:typed|wrote|said|asked|sent)\b|\btreat\b[^\n]{0,60}"
                r"\bas (?:coming from|from|if from|written by|sent by) the (?:user|person|human|owner)\b"
            ),
            _form(
                r"\bsystem prompt\b[^\n]{0,40}\b(?:ignore|replace|reveal|print|leak|override|show|output|repeat)\b"
                r"|\b(?:ignore|replace|reveal|print|leak|override|show|output|repeat)\b[^\n]{0,40}\bsystem prompt\b"
            ),
        ),
    ),
    Rule(
        "concealment",
        "hides what the agent does from the person",
        (
            _form(
                r"\b(?:do not|don't|dont|never|avoid|without)\b[^.;\n]{0,20}\b(?:tell|telling|inform|informing|mention"
                r"|mentioning|reveal|revealing|show|showing|disclose|disclosing|notify|notifying|alert|alerting|report"
                r"|reporting|ask|asking|let)\b[^.;\n]{0,50}\b(?:the user|the person|the human|the owner|the reviewers?"
                r"|reviewers|anyone|nobody|the team|maintainers|them|security)\b"
            ),
            _form(
                r"\b(?:do not|don't|dont|never)\s+(?:mention|report|disclose|reveal|log|record|note|list|include)\s+"
                r"(?:it|this|that|them|these|those|the (?:change|changes|edit|edits|step|steps|commands?|calls?"
                r"|modifications?))\b"
            ),
            _form(
                r"\b(?:keep|leave|omit|exclude|hide|remove|drop)\b[^.;\n]{0,60}\b(?:out of|from|off)\b[^.;\n]{0,30}"
                r"\b(?:summary|summaries|report|changelog|commit messages?|pr descriptions?|diff|review|the user|the person"
                r"|the reviewers?|reviewers|logs?|history|audit)\b"
            ),
            _form(
                r"\b(?:silently|quietly|secretly|covertly|discreetly|stealthily)\b[^.;\n]{0,30}\b(?:disable|remove"
                r"|delete|change|modify|skip|add|install|push|commit|edit|send|upload|run|make|turn off|bypass|merge"
                r"|deploy|rewrite)\b|\b(?:disable|remove|delete|change|modify|skip|add|install|push|commit|edit|send"
                r"|upload|run|make|turn off|bypass|merge|deploy|rewrite)\b[^.;\n]{0,40}\b(?:silently|quietly|secretly"
                r"|covertly|discreetly|stealthily)\b|\bbehind the (?:user|person|owner)'s back\b"
                r"|\bwithout (?:a trace|anyone noticing|being noticed|leaving a trace)\b"
            ),
            _form(
                r"\b(?:clear|erase|wipe|delete|remove|purge|truncate|scrub|rewrite|edit)\b[^.;\n]{0,40}\b(?:shell history"
                r"|bash history|command history|\.bash_history|\.zsh_history|audit (?:log|trail)s?|audit\.log"
                r"|the entries|traces?|evidence)\b|\bhistory -c\b|\bunset HISTFILE\b"
            ),
            _form(
                r"\b(?:say|tell (?:them|the user)|claim|answer|pretend|reply)\b[^.;\n]{0,30}\b(?:nothing (?:changed"
                r"|happened|was changed)|no changes|it was always|everything is fine)\b|\bif (?:the user |anyone "
                r"|someone )?(?:asks|asked)\b[^;\n]{0,60}\b(?:say|deny|claim|answer|pretend)\b"
            ),
        ),
    ),
    Rule(
        "credential-placement",
        "puts credentials where others can read them",
        (
            # The verb, the secret and where it goes, close together and in order
            # (or the place first: "when opening issues, paste the .env file").
            _form(_PLACE + r".{0,60}?" + _SECRET + r".{0,80}?" + _PLACE_TARGET, negatable=True),
            _form(_PLACE_TARGET + r".{0,40}?" + _PLACE + r".{0,60}?" + _SECRET, negatable=True),
            _form(r"\b(?:https?|git)://[^\s/@:]{1,64}:[^\s/@]{1,200}@"),
            _form(r"\b(?:hard-?code|hardcode)\b[^.;\n]{0,40}" + _SECRET, negatable=True),
            _form(
                r"\b(?:cat|type|print|echo|show|output)\b[^.;\n]{0,20}(?:~/\.(?:ssh|aws|kube|netrc|npmrc|pypirc|docker)"
                r"|\.env\b|\bid_(?:rsa|ed25519)\b|\.(?:netrc|npmrc|pypirc|git-credentials)\b)",
                negatable=True,
            ),
        ),
    ),
    Rule(
        "persistence",
        "plants something that runs later (keys, hooks, cron, shell start-up files)",
        (
            _form(r"\bauthorized_keys\b", negatable=True),
            _form(
                r"\b(?:add|adds|append|install|create|register|put|write|set up|setup|enable|schedule|set|git config"
                r"|drop|place)\b",
                r"(?:\.(?:bashrc|zshrc|profile|bash_profile|zprofile|zshenv|zlogin)\b|/etc/profile|\bcrontab\b|\bcron "
                r"(?:entry|job|line)\b|\blaunch(?:agents?|daemons?)\b|\.plist\b|\bsystemd (?:user )?(?:service|unit"
                r"|timer)s?\b|\b(?:git )?hooks?\b|\b(?:pre|post)-(?:commit|push|merge|checkout|receive|rewrite)\b"
                r"|\bhookspath\b|\bprompt_command\b|\b(?:startup|login) items?\b)",
                r"(?:\b(?:https?|s?ftp)://|\bcurl\b|\bwget\b|\bnc\b|/tmp/|/dev/shm\b|\bbase64\b|python[0-9.]* -c\b"
                r"|\balias (?:sudo|git|ssh|ls|cd|cp|mv)=|\bsource <\(|\beval\b|\$\(whoami\)|\bat login\b|\bon boot\b"
                r"|\bat boot\b|\bupload|\bexfil|ssh-(?:rsa|ed25519|dss)\b)",
                negatable=True,
            ),
            _form(r"ssh-(?:rsa|ed25519|dss|ecdsa)\s+AAAA", r"\b(?:add|append|install|put|authori[sz]e|trust)\b", negatable=True),
        ),
    ),
    Rule(
        "destructive",
        "destroys data, history or machines",
        (
            _form(
                r"\brm\s+(?:-[a-z]{0,8}\s+){0,3}-[a-z]{0,8}r[a-z]{0,8}\s+(?:--?[\w-]{1,30}\s+){0,3}"
                r"(?:/|~|\$home|\$\{home\}|\*|\.\.|/\*|~/\*|~/|\$home/\*?)(?:$|[\s`'\";)])",
                negatable=True,
            ),
            _form(
                r"--no-preserve-root|\bmkfs(?:\.\w+)?\b|\bdd\s+if=\S{1,100}\s+of=/dev/|>\s*/dev/(?:sd|nvme|disk)"
                r"|:\(\)\s*\{\s*:\|:&\s*\};:|\bchmod\s+-R\s+777\s+/(?:\s|$)|\bfind\s+/\s[^\n]{0,80}(?:-delete|\brm\s)",
                negatable=True,
            ),
            _form(
                r"\bgit\s+push\b[^\n;]{0,40}(?:--force|-f)(?:\s|$|`)[^\n;]{0,40}\b(?:main|master|production|prod"
                r"|release)\b|\bgit\s+push\b[^\n;]{0,40}\b(?:main|master)\b[^\n;]{0,20}(?:--force|-f)(?:\s|$|`)"
                r"|\bgit\s+reset\s+--hard\b[^\n]{0,60}\bgit\s+push\s+(?:\S+\s+){0,3}?(?:-f|--force)(?:\s|$|`)",
                negatable=True,
            ),
            _form(
                r"\b(?:drop|delete|destroy|wipe|truncate|purge|erase|remove|nuke|reset|rm)\b[^.;\n]{0,40}\b(?:production"
                r"|prod|live|all|every|entire|whole)\b[^.;\n]{0,30}\b(?:databases?|db|tables?|data|buckets?|namespaces?"
                r"|clusters?|backups?|volumes?|disks?|drives?|files|repos?|repositor(?:y|ies)|branches|users?|accounts?)\b",
                negatable=True,
            ),
            _form(
                r"\bkubectl\s+delete\s+(?:ns|namespaces?)\b|\bterraform\s+destroy\b|\baws\s+s3\s+(?:rm|rb)\b[^\n]{0,60}"
                r"--(?:recursive|force)\b|\bgsutil\s+(?:-m\s+)?rm\s+-r\b|\bdrop\s+(?:database|schema)\b|\bdropdb\b",
                negatable=True,
            ),
            _form(
                r"\b(?:delete|remove|rm\s+-rf?|wipe|erase)\b[^.;\n]{0,20}(?:\.git\b|\bgit directory\b)"
                r"|\b(?:delete|wipe|erase|remove|clean out)\b[^.;\n]{0,30}\b(?:home directory|home dir|root filesystem"
                r"|entire disk|all files)\b",
                negatable=True,
            ),
        ),
    ),
    Rule(
        "approval-bypass",
        "skips the person's review or approval",
        (
            _form(
                r"\b(?:merge|merging|approve|ship|deploy|push|commit|release|run)\b[^.;\n]{0,50}\bwithout\b[^.;\n]{0,30}"
                r"\b(?:review|reviews|approval|approvals|checks|ci|waiting|asking|confirmation|consent|permission"
                r"|sign-?off)\b"
            ),
            _form(
                r"--no-verify\b|--dangerously-skip-permissions|--yolo\b|\bskip[- _]permissions\b"
                r"|\bbypass[- _]?permissions\b|\bapprove (?:your|its|their) own\b|\bself-approve"
            ),
            _form(
                r"\b(?:disable|turn off|remove|bypass|skip|circumvent|lift|switch off)\b[^.;\n]{0,30}\b(?:branch protection"
                r"|required reviews?|code reviews?|review requirements?|required checks?|status checks|the sandbox"
                r"|sandboxing|permission prompts?|permission checks?|approvals?|2fa|mfa|commit signing"
                r"|signature verification|security scans?|safety checks)\b",
                negatable=True,
            ),
            _form(
                r"\bwithout (?:first )?(?:asking|waiting for|confirmation|confirming|approval|review|reviews|permission"
                r"|consent|sign-?off)\b"
            ),
            _form(
                r"\bauto-?(?:accept|approve)\b|\bautomatically (?:accept|approve)\b|\baccept all (?:file )?(?:edits"
                r"|tool calls|changes|prompts)\b|\b(?:no need|not need|never need) to (?:confirm|approve|review|ask)\b"
            ),
            _form(
                r"\bmark\b[^.;\n]{0,40}\b(?:checks?|tests?|ci|builds?|status)\b[^.;\n]{0,20}\b(?:passed|passing|green"
                r"|successful|success)\b"
            ),
            _form(
                r"\b(?:merge|deploy|ship|release|approve)\b[^.;\n]{0,40}\b(?:even if|even when|despite|regardless of)\b"
                r"[^.;\n]{0,30}\b(?:checks?|ci|tests?|reviews?)\b"
                r"|\b(?:checks?|ci|tests?) (?:fails?|failing|is red)\b[^\n]{0,80}\b(?:merge|deploy|ship)\b"
            ),
        ),
    ),
    Rule(
        "policy-spoofing",
        "claims an authority that grants the agent permissions",
        (
            _form(
                r"\b(?:anthropic|openai|security team|admin(?:istrator)?s?|admin notice|it department|compliance|legal team"
                r"|cto|ceo|official|policy update|by order of|repository owner|repo owner|org(?:anization)?"
                r"(?:'s)? policy|company policy)\b",
                # the agent, then within three words what it may or must do
                _AGENT_3P + r"\W{1,4}(?:\w{1,30}\W{1,4}){0,3}?(?:authori[sz]ed|permitted|allowed|may|can|must|exempt"
                r"|whitelisted|approved|pre-?approved|cleared|entitled|required|mandated)\b",
            ),
            _form(
                _AGENT + r"[^.;\n]{0,20}\b(?:is|are|has been|have been|shall be)\s+(?:now\s+|hereby\s+|officially\s+"
                r"|explicitly\s+){0,2}(?:authori[sz]ed|permitted|allowed|cleared|exempt|whitelisted|entitled|pre-?approved)\b"
            ),
            _form(
                r"\bpre-?approved\b|\bpre-?authori[sz]ed\b|\b(?:standing|blanket|permanent|unconditional|unrestricted)"
                r" (?:permission|approval|authori[sz]ation|consent|access)\b|\bhas (?:granted|given) (?:you|the "
                r"(?:agent|assistant|ai))\b"
            ),
        ),
    ),
    Rule(
        "block-forgery",
        "writes a line of bead's own memory block (a key, its trust mark and date), which reads as another fact",
        # `- user/review-policy (stated, 2025-01-02): ...`: a block flattens a value to one line, but the line's
        # grammar inside it still reads as a fact the person stated. Not "accepted": an ADR or PEP index says it
        # (`- adr-0007 (accepted, 2024-03-12): ...`).
        # Any bullet or none, a loose date or none where a colon follows (the pointers' `KEY (stated):`), and a full
        # key (it has a `/`) with any trust word: an adversarial pass wrote each past the first form.
        (
            _form(
                r"(?:^|\s)[-*+\x{2022}]?\s{0,4}[a-z0-9][\w/.\-]{0,200}\s{1,4}\((?:stated|inferred)(?:\s{0,4},?\s{0,4}"
                r"\d{4}-\d{1,2}-\d{1,2})(?:\s{0,4},\s{0,4}pinned)?\s{0,4}\)"
            ),
            _form(r"(?:^|\s)[-*+\x{2022}]?\s{0,4}[a-z0-9][\w/.\-]{0,200}\s{1,4}\((?:stated|inferred)\s{0,4}\)\s{0,4}:"),
            _form(
                r"(?:^|\s)[-*+\x{2022}]?\s{0,4}(?:(?:user|global)/[\w.\-]{1,200}|project/[\w.\-]{1,100}/[\w.\-]{1,200})"
                r"\s{1,4}\((?:stated|inferred|accepted)(?:\s{0,4},?\s{0,4}\d{4}-\d{1,2}-\d{1,2})?(?:\s{0,4},\s{0,4}pinned)?"
                r"\s{0,4}\)"
            ),
        ),
    ),
)

# Python's re splits faster than the RE2 binding (one call, no match objects);
# the pattern is bounded and cannot backtrack.
_CLAUSE = re.compile(r"[.;!?]\s{1,64}|\n")
_NEGATION = compile_linear(r"(?i)\b(?:never|not|don't|dont|do not|does not|doesn't|avoid|no)\b")
_NOT_A_NEGATION = compile_linear(r"(?i)^\W{0,4}(?:forget|fail|hesitate|skip|stop|miss|optional)\b")


def _negated(clause: str, start: int) -> bool:
    """A negation before ``start`` in the clause (not "never forget to", "don't fail to")."""
    for m in reversed(list(_NEGATION.finditer(clause, 0, start))):
        if not _NOT_A_NEGATION.search(clause[m.end() : m.end() + 24]):
            return True
    return False


def _holds(form: Form, clause: str, sentences: bool = False) -> bool:
    """Whether every pattern of ``form`` matches ``clause``, and no negation voids it. ``sentences``: the clause is a
    command joined over lines (``_commands``), which may hold several sentences; only a negation in the sentence of
    the match counts ("Never force-push. | curl ... | bash" is no rule against the fetch)."""
    first = None
    for p in form.patterns:
        m = p.search(clause)
        if m is None:
            return False
        first = m.start() if first is None else min(first, m.start())
    if not form.negatable or first is None:
        return True
    start = 0
    if sentences:
        for m in _CLAUSE.finditer(clause, 0, first):
            start = m.end()
    return not _negated(clause[start:], first - start)


# A line break a command goes on over (blank lines and indentation between too, as a shell reads them): after a
# pipe, `&&`, a backslash or an open parenthesis, or before a pipe or `&&` (`curl URL |` then `bash` on the next
# line). Python's engine: a match starts only at one of those characters or at a line break, and each repeat is
# bounded, so a text is walked a bounded number of times.
_CONTINUED = re.compile(r"(?:\||&&|\\|\()[ \t]{0,64}(?:\r?\n[ \t]{0,64}){1,4}|\r?\n(?:[ \t]{0,64}\r?\n){0,3}[ \t]{0,64}(?=\||&&)")
# A Markdown table's row starts and ends with a pipe: its lines are rows, not a command going on.
_TABLE_ROW = re.compile(r"^[ \t]{0,64}\|.*\|[ \t]*$")


def _joined(text: str) -> str:
    """``text`` with each line that goes on over a line break (``_CONTINUED``) joined to the next (not a Markdown
    table's rows)."""
    if "\n" not in text:
        return text

    def join(m: re.Match[str]) -> str:
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start() + 1]
        after = text[m.end() : text.find("\n", m.end()) % (len(text) + 1)]
        if _TABLE_ROW.match(line) or _TABLE_ROW.match(after):
            return m.group()
        return m.group().split("\n")[0].rstrip("\r \t") + " "

    return _CONTINUED.sub(join, text)


def _commands(text: str, joined: str) -> list[str]:
    """The lines of ``joined`` (``_joined(text)``) that were joined: each a command a clause split would cut in two."""
    if joined == text:
        return []
    lines = set(text.split("\n"))
    return [line for line in joined.split("\n") if line.strip() and line not in lines]


def _clauses(text: str) -> list[str]:
    """The clauses of ``text``; a `code span` is never split (a command's ``;`` or ``.`` is not a clause end)."""
    out: list[str] = []
    cur: list[str] = []
    for i, piece in enumerate(text.split("`")):
        if i % 2:
            cur.append("`" + piece + "`")
            continue
        first, *rest = _CLAUSE.split(piece)
        cur.append(first)
        for r in rest:
            out.append("".join(cur))
            cur = [r]
    out.append("".join(cur))
    return [c for c in out if c.strip()]


# What the prefilter judges is a fact (at most MAX_CHARS) or a "remember"
# value (the same bound); text far longer is no fact, and a person reads it.
MAX_JUDGED = 8 * MAX_CHARS
OVERSIZE = Rule("oversize", f"longer than {MAX_JUDGED} characters: no fact is, so a person reads it", ())


JOINED_RULES = frozenset({"remote-code-execution"})


def instruction_rule(text: str) -> Rule | None:
    """The first rule that finds ``text`` an instruction to a model (an attack), or None. The rules read the
    text's normal form (``bead.textform.fold``): invisible characters out, NFKC, ASCII for look-alike letters.

    A form is tried clause by clause only when each of its patterns matches
    somewhere in the whole text, so most forms cost one pass each.
    """
    if len(text) > MAX_JUDGED:
        return OVERSIZE
    # Judged as a reader sees it: "cu\u200brl | s\u200bh" or a Cyrillic "\u0455end" is the plain word (bead.textform).
    text = fold(text)
    clauses: list[str] | None = None
    joined = _joined(text)
    commands: list[str] | None = None
    for rule in RULES:
        for form in rule.forms:
            if all(p.search(text) for p in form.patterns):
                clauses = _clauses(text) if clauses is None else clauses
                if any(_holds(form, c) for c in clauses):
                    return rule
            # a command joined over lines: only the shell's own forms (a table's rows or a wrapped sentence are no
            # command, and words from two of them never sit together)
            if rule.name in JOINED_RULES and joined != text and all(p.search(joined) for p in form.patterns):
                commands = _commands(text, joined) if commands is None else commands
                if any(_holds(form, c, sentences=True) for c in commands):
                    return rule
    return None


def instruction_like(text: str) -> bool:
    return instruction_rule(text) is not None
