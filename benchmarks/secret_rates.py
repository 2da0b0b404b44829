"""How many passwords the secret scan leaves in clear, in the forms config files and command lines give them.

Two measures, printed; nothing is asserted (``tests/test_secrets.py`` holds the rules' own corpus):

- random 16-character passwords of letters, digits and punctuation (400 a context, a fixed seed) under a
  password's name: how many ``redact`` leaves unredacted;
- random 16-character passwords of all printable ASCII (1,000 a form) in quoted forms, escaped as each form
  escapes (JSON, a double-quoted .env or YAML value, a Python string, a getenv default): how many leave six
  characters or more in clear;
- a grid of 36 names a secret goes by (``DB_PASSWORD``, ``JWT_SECRET``, ``API_KEY``, ``DB_PASS``, ...) × 42 weak
  or common values (``postgres``, ``letmein``, ``Welcome1``, ``P@ssw0rd``, pwgen's ``ahb3Eeph``) × 9 ways of
  writing them (``.env``, spaced, YAML, YAML with a comment, a compose list item, quoted, ``:=``, Terraform, JSON):
  the lines where any of the value is left.

    .venv-test/bin/python benchmarks/secret_rates.py
"""

from __future__ import annotations

import itertools
import json
import random
import re
import string

from bead.capture.secrets import redact

CONTEXTS = [
    "DB_PASSWORD={}",
    "password: {}",
    "Server=db;User Id=sa;Password={};",
    "the password is {}",
    "export API_TOKEN={}",
    "spring.datasource.password={}",
]
NAMES = [
    "DB_PASSWORD", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "MYSQL_PASSWORD", "REDIS_PASSWORD", "ADMIN_PASSWORD",
    "SMTP_PASSWORD", "RABBITMQ_DEFAULT_PASS", "MONGO_INITDB_ROOT_PASSWORD", "PGPASSWORD", "KEYCLOAK_ADMIN_PASSWORD",
    "ELASTIC_PASSWORD", "GF_SECURITY_ADMIN_PASSWORD", "MINIO_ROOT_PASSWORD", "DATABASE_PASSWORD", "APP_SECRET",
    "JWT_SECRET", "SECRET_KEY", "DJANGO_SECRET_KEY", "API_KEY", "API_TOKEN", "AUTH_TOKEN", "SESSION_SECRET",
    "STRIPE_SECRET_KEY", "ENCRYPTION_KEY", "NEXTAUTH_SECRET", "CLIENT_SECRET", "MAIL_PASSWORD", "LDAP_BIND_PASSWORD",
    "KEYSTORE_PASSWORD", "DB_PASS", "REDIS_PASS", "SFTP_PASS", "VAULT_TOKEN", "GITHUB_TOKEN", "NPM_TOKEN",
]  # fmt: skip
VALUES = [
    "postgres", "letmein", "Welcome1", "password123", "admin123", "root", "toor", "hunter2", "P@ssw0rd", "Passw0rd!",
    "qwerty123", "dragon", "master", "mysecretpassword", "test1234", "Summer2024!", "abc123", "iloveyou", "monkey",
    "trustno1", "12345678", "secret", "admin", "password", "Password1", "welcome", "default", "superman",
    "football", "changeit", "ahb3Eeph", "Xk9mQ2pL", "qwErTyUiOpAsDfGh", "kRtwPzQmXbNvLsYhQWER", "Abcd_1234",
    "Welcome", "Secret", "MYPASSWORD", "P4ssword", "s3cret_ke_y", "sunshine", "minioadmin",
]  # fmt: skip
FORMS = {
    ".env": "{n}={v}",
    "spaced": "{n} = {v}",
    "yaml": "      {n}: {v}",
    "yaml, comment": "  {n}: {v}  # dev",
    "compose list": "  - {n}={v}",
    "quoted": '{n}="{v}"',
    ":=": "{n} := {v}",
    "terraform": '{n} = "{v}"',
    "json": '"{n}": "{v}"',
}
_MARK = re.compile(r"\[REDACTED:[^\]]*\]")
# Quoted forms, the password escaped as each writes its quote and backslash: a password of all printable ASCII holds
# `"` about one time in six, and a value that stopped at the escaped quote left the rest in clear.
QUOTED = {
    "JSON": lambda p: json.dumps({"password": p}),
    '.env, "..."': lambda p: 'DB_PASSWORD="' + p.replace("\\", "\\\\").replace('"', '\\"') + '"',
    'YAML, "..."': lambda p: 'password: "' + p.replace("\\", "\\\\").replace('"', '\\"') + '"',
    "Python": lambda p: "PASSWORD = " + json.dumps(p),
    "getenv default": lambda p: 'os.getenv("DB_PASSWORD", ' + json.dumps(p) + ")",
}


def main() -> None:
    rng = random.Random(7)
    chars = string.ascii_letters + string.digits + "!#%&()*+,-./:;<=>?@[]^_{|}~"
    print("random 16-character passwords left in clear (of 400):")
    for context in CONTEXTS:
        left = 0
        for _ in range(400):
            pw = "".join(rng.choice(chars) for _ in range(16))
            left += pw in redact(context.format(pw))[0]
        print(f"  {context:38s} {left:4d}")
    printable = [chr(c) for c in range(33, 127)]
    print("random 16-character passwords of all printable ASCII, escaped in quoted forms, in clear (of 1,000):")
    for form, write in QUOTED.items():
        left = 0
        for _ in range(1000):
            pw = "".join(rng.choice(printable) for _ in range(16))
            out = redact(write(pw))[0]
            left += any(pw[i : i + 6] in out for i in range(11))  # six characters of it or more
        print(f"  {form:38s} {left:4d}")
    print(f"weak and common values left in clear ({len(NAMES)} names x {len(VALUES)} values a form):")
    total = 0
    for form, template in FORMS.items():
        left = 0
        for name, value in itertools.product(NAMES, VALUES):
            left += value in _MARK.sub("#", redact(template.format(n=name, v=value))[0])
        total += left
        print(f"  {form:14s} {left:5d} of {len(NAMES) * len(VALUES)}")
    print(f"  {'all':14s} {total:5d} of {len(NAMES) * len(VALUES) * len(FORMS)}")


if __name__ == "__main__":
    main()
