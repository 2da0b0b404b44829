"""The secret scan: real-format fake credentials are redacted, look-alikes are not."""

from __future__ import annotations

import pytest

from bead.capture.secrets import redact, rules

# Fake credentials in the real formats (none of these are live).
SECRETS = [
    ("anthropic-api-key", "export ANTHROPIC_API_KEY=sk-ant-api03-" + "Xq9" * 30 + "AA"),
    ("openai-api-key", "OPENAI key: sk-proj-" + "aB3dE5fG7h" * 6),
    ("openai-api-key", "legacy sk-" + "a1B2c3D4e5F6g7H8i9J0" + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0"),
    ("aws-access-key-id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"),
    ("aws-secret-access-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("github-token", "git clone https://x:ghp_" + "a" * 18 + "B" * 18 + "@github.com/o/r"),
    ("github-token", "token github_pat_" + "11ABCDEFG0" + "x" * 72),
    ("gitlab-token", "GITLAB_TOKEN glpat-" + "Zx81mQ" * 4),
    ("slack-token", "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack-webhook", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("google-api-key", "key=AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWx"),
    ("stripe-key", "STRIPE_SECRET=sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("huggingface-token", "HF token hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz12345678"),
    ("npm-token", "//registry.npmjs.org/:_authToken=npm_" + "a1b2C3d4" * 4 + "e5F6"),
    ("pypi-token", "password = pypi-AgEIcHlwaS5vcmc" + "CJDQ2NzI5ZjQtNzQ3Mi00MGE3LWJh" * 2),
    ("sendgrid-api-key", "SG." + "abcdefghijklmnopqrstuv" + "." + "A" * 20 + "b" * 23),
    ("azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "a1B2" * 21 + "cD" + "=="),
    ("jwt", "Cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("url-password", "DATABASE_URL=postgres://app:Sup3rS3cret@db.internal:5432/app"),
    ("bearer-token", "curl -H 'Authorization: Bearer abcDEF123456ghiJKL789012mnoPQR'"),
    ("api-key-header", "curl -H 'x-api-key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0'"),
    ("password-assignment", 'db_password = "correct-horse-battery"'),
    ("generic-secret", "SESSION_SECRET=Zk83hd92KdlQ0pWmx7YtR4"),
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAA\n-----END OPENSSH PRIVATE KEY-----"),
    ("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7 (truncated in the middle of a paste"),
]

# Text that looks a little like a credential but is not one.
BENIGN = [
    "token: str",
    "password = input('Password: ')",
    "api_key = os.environ['OPENAI_API_KEY']",
    "SECRET_KEY = ${SECRET_KEY}",
    "secret_key: <your-secret-here>",
    "the tokenizer splits on whitespace",
    "We use scikit-learn (sk-learn) for the model",
    "git checkout 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "https://github.com/pallets/quart/blob/main/src/quart/app.py",
    "postgres://localhost:5432/app",
    "password_reset_token_ttl = 3600",
    "AKIA is the prefix of AWS access key ids",
    "Authorization: Bearer <token>",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
]


@pytest.mark.parametrize("rule,text", SECRETS, ids=[f"{r}-{i}" for i, (r, _) in enumerate(SECRETS)])
def test_credential_is_redacted(rule, text):
    clean, found = redact(text)
    assert f"[REDACTED:{rule}]" in clean, clean
    assert rule in found


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_unchanged(text):
    assert redact(text) == (text, [])


def test_every_rule_has_a_corpus_entry():
    assert {r.id for r in rules()} == {rule for rule, _ in SECRETS}


def test_redaction_keeps_surrounding_text():
    text = "connect with postgres://app:Sup3rS3cret@db:5432/app then run migrations"
    assert redact(text)[0] == "connect with postgres://app:[REDACTED:url-password]@db:5432/app then run migrations"


def test_secret_never_reaches_the_raw_file(mem):
    key = "sk-ant-api03-" + "Zz7" * 30
    t = mem.raw.append("s1", "user", f"my key is {key} please use it")
    data = t.path.read_bytes()
    assert key.encode() not in data and b"[REDACTED:anthropic-api-key]" in data
    assert t.flags["redacted"] == ["anthropic-api-key"]
