"""The secret scan: real-format fake credentials are redacted, look-alikes are not.

The corpus below is the measure of the rules: `test_rates` prints the
detection rate over the fakes and the false-positive rate over the
look-alikes (run pytest with -s to see them) and requires 100% and 0%.
Every fake is made here from a seeded generator in its provider's format
(none is live); each entry names the rule expected to catch it.
"""

from __future__ import annotations

import base64
import json
import random
import textwrap

import pytest

from bead.capture.secrets import candidates, redact, rules, ruleset, scan

_RNG = random.Random(20261130)
LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
DIGITS = "0123456789"
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def r(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def hex_uuid() -> str:
    """A random UUID's shape (8-4-4-4-12 hex digits), as many services' keys take it."""
    return "-".join(r(HEX, k) for k in (8, 4, 4, 4, 12))


# (a rule expected to find it, text, the secret that must not survive). Where
# several rules find one secret, the redaction is labelled by the provider's
# rule first; the test asks only that the named rule is among those finding it.
def _fakes() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []

    def add(rule: str, template: str, secret: str) -> None:
        out.append((rule, template.format(s=secret), secret))

    # Anthropic
    add("anthropic-api-key", "export ANTHROPIC_API_KEY={s}", "sk-ant-api03-" + r(URLSAFE, 93) + "AA")
    add("anthropic-key", "my claude token is {s}, keep it safe", "sk-ant-oat01-" + r(URLSAFE, 95) + "AA")
    add("anthropic-key", "try {s} (truncated in the paste)", "sk-ant-api03-" + r(URLSAFE, 40))
    add("anthropic-admin-api-key", "admin key: {s}", "sk-ant-admin01-" + r(URLSAFE, 93) + "AA")
    # OpenAI
    add("openai-api-key", "OPENAI_API_KEY={s}", "sk-proj-" + r(URLSAFE, 74) + "T3BlbkFJ" + r(URLSAFE, 74))
    add("openai-key", "OPENAI key: {s}", "sk-proj-" + r(ALNUM, 60))
    add("openai-api-key", "legacy {s}", "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20))
    add("openai-key", "service account {s}.", "sk-svcacct-" + r(URLSAFE, 48))
    # AWS
    add("aws-access-token", "aws_access_key_id = {s}", "AKIA" + r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))
    add("aws-access-token", "the temporary key {s} expires at noon", "ASIA" + r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))
    add("aws-secret-access-key", "aws_secret_access_key = {s}", r(ALNUM + "/+", 40))
    add("aws-secret-access-key", "the AWS secret key is {s}", r(ALNUM + "/+", 40))
    add("aws-secret-access-key", "Our aws account's secret access key: {s}. Rotate it monthly.", r(ALNUM + "/+", 40))
    add("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY={s}", r(ALNUM + "/+", 40))
    # GitHub
    add("github-pat", "git clone https://x:{s}@github.com/o/r", "ghp_" + r(ALNUM, 36))
    add("github-pat", "use the token {s}.", "ghp_" + r(ALNUM, 36))
    add("github-oauth", "gh auth token printed {s}", "gho_" + r(ALNUM, 36))
    add("github-app-token", "installation token {s}", "ghs_" + r(ALNUM, 36))
    add("github-fine-grained-pat", "token {s}", "github_pat_" + r(ALNUM + "_", 82))
    add("github-pat", "GITHUB_TOKEN={s}", "ghp_" + r(ALNUM, 36))
    # GitLab
    add("gitlab-pat", "GITLAB_TOKEN {s}", "glpat-" + r(URLSAFE, 20))
    add("gitlab-pat", "the runner uses {s}", "glpat-" + r(URLSAFE, 26))
    # Slack
    add("slack-bot-token", "SLACK_BOT {s}", "xoxb-" + r(DIGITS, 12) + "-" + r(DIGITS, 13) + "-" + r(ALNUM, 24))
    add(
        "slack-user-token",
        "my slack token is {s}",
        "xoxp-" + r(DIGITS, 12) + "-" + r(DIGITS, 12) + "-" + r(DIGITS, 13) + "-" + r(HEX, 32),
    )
    add(
        "slack-webhook-url",
        "post to {s}",
        "https://hooks.slack.com/services/T" + r(UPPER + DIGITS, 8) + "/B" + r(UPPER + DIGITS, 8) + "/" + r(ALNUM, 24),
    )
    # Stripe
    add("stripe-access-token", "STRIPE_SECRET={s}", "sk_live_" + r(ALNUM, 24))
    add("stripe-access-token", "the live key is {s}.", "sk_live_" + r(ALNUM, 99))
    add("stripe-access-token", "restricted {s}", "rk_live_" + r(ALNUM, 99))
    add("stripe-access-token", "test with {s}", "sk_test_" + r(ALNUM, 24))
    # Twilio
    add("twilio-api-key", "The Twilio API key is {s} and it is live", "SK" + r(HEX, 32))
    add("twilio-auth-token", "our twilio account auth token is {s}, do not share", r(HEX, 32))
    add("env-secret-assignment", "TWILIO_AUTH_TOKEN={s}", r(HEX, 32))
    # Mail and messaging
    add("sendgrid-api-token", "SENDGRID {s}", "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43))
    add("mailgun-private-api-token", "mailgun_key = {s}", "key-" + r(HEX, 32))
    add("mailchimp-api-key", "mailchimp api: {s}", r(HEX, 32) + "-us21")
    add("telegram-bot-api-token", "TELEGRAM_BOT_TOKEN={s}", r(DIGITS, 10) + ":A" + r(URLSAFE, 34))
    add("discord-api-token", "discord_token = {s}", r(HEX, 64))
    # Package registries
    add("npm-access-token", "//registry.npmjs.org/:_authToken={s}", "npm_" + r(ALNUM, 36))
    add("pypi-upload-token", "password = {s}", "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 70))
    add("huggingface-token", "HF token {s}", "hf_" + r(ALNUM, 34))
    add("huggingface-access-token", "login with {s}", "hf_" + r(LOWER + UPPER, 34))
    # Cloud and platforms
    add("gcp-api-key", "key={s}", "AIza" + r(URLSAFE, 35))
    add("digitalocean-pat", "doctl auth init -t {s}", "dop_v1_" + r(HEX, 64))
    add("shopify-access-token", "X-Shopify-Access-Token: {s}", "shpat_" + r(HEX, 32))
    add("databricks-api-token", "DATABRICKS_HOST=x {s}", "dapi" + r(HEX, 32))
    add("doppler-api-token", "doppler {s}", "dp.pt." + r(ALNUM, 43))
    add("linear-api-key", "linear {s}", "lin_api_" + r(ALNUM, 40))
    add("postman-api-token", "postman {s}", "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34))
    add("pulumi-api-token", "PULUMI_ACCESS_TOKEN={s}", "pul-" + r(HEX, 40))
    add("vault-service-token", "VAULT_TOKEN={s}", "hvs." + r(URLSAFE, 95))
    add("age-secret-key", "# created: today\n{s}", "AGE-SECRET-KEY-1" + r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58))
    add("grafana-service-account-token", "grafana {s}", "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8))
    add("flyio-access-token", "fly token {s}", "fo1_" + r(URLSAFE, 43))
    add("square-access-token", "square {s}", "sq0atp-" + r(URLSAFE, 22))
    add("alibaba-access-key-id", "alibaba id {s}", "LTAI" + r(ALNUM, 20))
    add("heroku-api-key", "heroku_api_key = {s}", f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}")
    add(
        "hashicorp-tf-api-token",
        'credentials app.terraform.io {{ token = "{s}" }}',
        r(LOWER + DIGITS, 14) + ".atlasv1." + r(LOWER + DIGITS, 67),
    )
    add(
        "azure-storage-key",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s};EndpointSuffix=core.windows.net",
        r(ALNUM + "+/", 86) + "==",
    )
    # Keys and tokens
    add(
        "private-key",
        "{s}",
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(r(B64, 64) for _ in range(4)) + "\n-----END RSA PRIVATE KEY-----",
    )
    add("private-key", "{s}", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + r(B64, 70) + "\n-----END OPENSSH PRIVATE KEY-----")
    # The secret near its key id in running text (an outside review found each of these whole in the raw log).
    for shape in (
        "here are the CI creds: AKIAZ7Q3W5E2R4T6Y8U1 / {s}",
        "the ci user's access key AKIAZ7Q3W5E2R4T6Y8U1, secret {s}",
        "AKIAZ7Q3W5E2R4T6Y8U1/{s}",
        "AKIAZ7Q3W5E2R4T6Y8U1 - {s}",
        "use AKIAZ7Q3W5E2R4T6Y8U1 and {s} for the deploy user",
    ):
        add("aws-secret-near-id", shape, r(LOWER, 12) + r(UPPER, 12) + r(DIGITS, 8) + r(ALNUM + "/+", 8))
    # Passwords in forms an outside review found whole in the raw log.
    add("password-option", "python manage.py createsuperuser --username admin --password {s} --noinput", "Vb9xQ2mZr7Kt")
    add("password-option", "./deploy --db-password {s} --env staging", "Hx8!pQ2wzLm")
    add("password-in-prose-intl", "Das Passwort für die Staging-DB: {s}", "Gr7#kLm2pQ")
    add("password-in-prose-intl", "パスワード：{s}", "Hk82jdLqP9")
    add("password-in-prose-intl", "пароль от VPN: {s}", "Zx9!Lp2Qwr")
    add("password-in-prose-intl", "le mot de passe : {s}", "Fr4nc3Pw!x")
    add("password-in-prose-intl", "密码：{s}", "Zh8Qw2!xpL")
    add("mysql-temporary-password", "[Note] [Server] A temporary password is generated for root@localhost: {s}", "hJ7#kq;Lp2>w")
    add("markup-named-secret", '<php><env name="DB_PASSWORD" value="{s}"/></php>', "Lv8qXz2!Pw")
    add("markup-named-secret", '<input type="password" name="pw" value="{s}">', "Fm4!xQz8Lp")
    add("password-piped-to-setter", "echo 'root:{s}' | sudo chpasswd", "Ch8pw!Xz2q")
    add("password-piped-to-setter", "echo '{s}' | passwd --stdin deploy", "Ps8!dQz2Lx")
    # A review's cases: CRLF lines (the scan reads each carriage return as a line end), verbs for the colon, more
    # forms of a password piped to passwd, the attributes in the other order.
    add(
        "private-key-tail",
        "$ tail -n 4 k.pem\r\n{s}\r\n",
        "\r\n".join(r(B64, 64) for _ in range(3)) + "\r\n-----END RSA PRIVATE KEY-----",
    )
    add("private-key-body", "{s}\r\n", "\r\n".join(r(B64, 64) for _ in range(5)))
    add("password-in-prose-intl", "Das Passwort ist {s}", "Gr7#kLm2pQ")
    add("password-in-prose-intl", "비밀번호는 {s}", "Ko8!pwQz2x")
    add("password-piped-to-setter", 'echo -e "{s}" | passwd deploy', "Deb8!pwQz\\nDeb8!pwQz")
    add("password-piped-to-setter", "chpasswd <<< 'root:{s}'", "Her8!pwQz")
    add("markup-named-secret", '<input value="{s}" type="password">', "Fm4!xQz8Lp")
    # Forms the previous sessions' notes listed as still kept whole: a URL query's pass=, a Wi-Fi key's name, a
    # password handed to sudo -S as a here-string, wpa_passphrase's argument.
    add("query-password", "curl 'https://api.example.com/login?user=ben&pass={s}'", "Qp8mLqv9zX")
    add("query-password", "Server=db;Uid=ben;Pwd={s};", "Cs7!kLq2zP")
    add("env-secret-assignment", "WIFI_PSK={s}", "Wf9kLq2zPx")
    add("env-secret-assignment", "export WIFI_PSK='{s}'", "correct horse battery")
    add("sudo-password-here-string", "sudo -S apt update <<< '{s}'", "Su8!dQz2Lx")
    add("sudo-password-here-string", "sudo -k -S systemctl restart nginx <<< {s}", "Su9dQz2Lxw")
    add("wifi-passphrase-command", "wpa_passphrase HomeNet {s} > /etc/wpa_supplicant.conf", "Wp8kLq2zPxq")
    # A gitleaks rule whose first group is a repeated piece of the secret: all of it goes, not four characters of it.
    _guid = "-".join(r(HEX, n) for n in (8, 4, 4, 4, 12))
    add(
        "microsoft-teams-webhook",
        f"post the alert to https://acme.webhook.office.com/webhookb2/{_guid}@{_guid}/IncomingWebhook/{{s}}/{_guid}",
        r(HEX, 32),
    )
    add("credentials-pair-assignment", "BASIC_AUTH=admin:{s}", "Ba5!cQz8Lp")
    # a review's: what the first mends let through again
    add("credentials-pair-assignment", "BASIC_AUTH=admin:{s}", "Xk9/mQ2zLp+7w")
    add("credentials-pair-assignment", "BASIC_AUTH=admin:{s}", "maple-quartz-lantern-orbit")
    add("password-said-in-prose", "the wifi pw={s}", "Xk9mQ2zLp")
    add("password-said-in-prose", "my pw: {s}", "Summer2024-Blue")
    add("password-said-in-prose", "the password for staging db is {s}", "Welcome1-Staging")
    add("password-in-prose-intl", "Wi-Fi parolası: {s}", "Xk9mQ2zLp7")
    add("password-in-prose", "la password dell'utente admin è {s}", "Xk9mQ2zLp7")
    add("password-in-prose", "la password è : {s}", "Xk9mQ2zLp7")
    # the third review's: longer names, a paren, more Italian
    add("credentials-pair-assignment", "REGISTRY_CREDENTIALS_B64=admin:{s}", "Xk9mQ2zLp7")
    add("credentials-pair-assignment", "TRAEFIK_BASIC_AUTH_USERS=admin:{s}", "Xk9mQ2zLp7")
    add("password-said-in-prose", "(pw={s})", "Xk9mQ2zLp7")
    add("password-in-prose", "la password dell'account di staging è {s}", "Xk9mQ2zLp7")
    # the fourth review's: a password with a small word after a year, a colon after it, parentheses in it
    add("password-said-in-prose", "I changed the password to {s}", "Summer2024-blue")
    add("password-said-in-prose", "I reset the password to {s}: please update your .env", "Xk9mQ2zLp7")
    add("password-said-in-prose", "pw: {s}", "Tr0ub(4)dor&3")
    add("credentials-pair-assignment", "GPG_PASSPHRASE={s}", "plume crater sixty walnut")
    add("password-in-prose", "la password del db è {s}", "It4l!aQz8L")
    add("password-in-prose", "La password è: {s}", "It4l!aQz8L")
    add("password-in-prose", "La password dell'admin è {s}", "It4l!aQz8L")
    add("query-password", "(see https://x/?a=1&pass={s}).", "Qp8mLqv9zX")
    add("password-in-prose-intl", "hasło do bazy to {s}", "Pl8!hQz2Lx")
    add("password-in-prose-intl", "şifre: {s}", "Tr8!sQz2Lx")
    add("password-in-prose-intl", "Das Kennwort lautet {s}", "De8!kQz2Lx")
    add("password-in-prose-intl", "heslo je {s}", "Cz8!hQz2Lx")
    # How a person says a password they set (an outside attack had "remember that I changed ... to X" stored as a
    # fact and pinned in the next conversation).
    add("password-said-in-prose", "remember that I changed the staging root password to {s}", "Wq7zL3nVx8Kd")
    add("password-said-in-prose", "the password for the staging db is {s}", "Sd4!kLq2zPx")
    add("password-said-in-prose", "remember that the deploy token is {s}", "Pm4xR9cTz2Bh")
    add("password-said-in-prose", "use {s} as the admin password", "Ad9#mQ2vLx")
    add("password-said-in-prose", "password (staging): {s}", "St8gQz2!Lp")
    add("password-said-in-prose", "my pw: {s}", "Pw7kLq2zPx")
    add("password-said-in-prose", "creds: admin:{s}", "Cr3d!Qz8Lp")
    add("private-key-block", "here: {s}", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI" + r(B64, 30))
    # A key's end or middle without its BEGIN line (`tail -n 8 key.pem`, `sed -n 5,20p`, a Read from an offset with
    # its line numbers): an outside review rebuilt the whole key from a tail's exponents and the public modulus.
    add(
        "private-key-tail",
        "$ tail -n 4 deploy/key.pem\n{s}\n",
        "\n".join(r(B64, 64) for _ in range(3)) + "\n-----END RSA PRIVATE KEY-----",
    )
    add(
        "private-key-tail",
        "{s}\n",
        "".join(f"    {n}\u2192{r(B64, 64)}\n" for n in range(20, 23)) + "    23\u2192-----END PRIVATE KEY-----",
    )
    add("private-key-body", "$ sed -n 5,9p deploy/key.pem\n{s}\n$ ", "\n".join(r(B64, 64) for _ in range(5)))
    add("private-key-body", "{s}\n", "\n".join(f"{n}\t{r(B64, 70)}" for n in range(8, 13)))
    add(
        "private-key",
        '{{"type": "service_account", "private_key": "{s}"}}',
        "-----BEGIN PRIVATE KEY-----\\n" + r(B64, 64) + "\\n" + r(B64, 40) + "\\n-----END PRIVATE KEY-----\\n",
    )
    add("jwt", "Cookie: session={s}", "eyJhbGciOiJIUzI1NiJ9.eyJ" + r(URLSAFE, 30) + "." + r(URLSAFE, 43))
    # Passwords and headers
    add("url-password", "DATABASE_URL=postgres://app:{s}@db.internal:5432/app", "Sup3r" + r(ALNUM, 10))
    add("url-password", "redis: rediss://default:{s}@cache.example.net:6380", r(ALNUM, 24))
    add("authorization-header", "curl -H 'Authorization: Bearer {s}'", r(ALNUM, 32))
    add("authorization-header", "Authorization: Basic {s}", r(B64, 28) + "==")
    add("api-key-header", "curl -H 'x-api-key: {s}'", r(HEX, 32))
    add("password-assignment", 'db_password = "{s}"', "correct-horse-" + r(LOWER, 8))
    add("password-assignment", '{{"client_secret": "{s}"}}', r(ALNUM, 30))
    add("env-secret-assignment", "DB_PASSWORD={s}", r(ALNUM, 14))
    add("env-secret-assignment", "MYSQL_ROOT_PASSWORD={s}", "Summer2024!")
    add("env-secret-assignment", "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: {s}\n", "s3cr3t-Pg!")
    add("env-secret-assignment", 'export API_KEY="{s}"', r(ALNUM, 20))
    add("env-secret-assignment", "SESSION_SECRET={s}", r(ALNUM, 22))
    add("env-secret-assignment", "REDIS_PASSWORD='{s}'", "two words " + r(LOWER, 6))
    add("url-password", "REDIS_URL=redis://:{s}@cache:6379/0", "Rd" + r(ALNUM, 18))
    add("url-password", "curl https://:{s}@files.example.com/x", r(ALNUM, 20))
    add("cli-password-flag", "docker login -u ci -p {s} registry.example.com", r(ALNUM, 24))
    add("cli-password-flag", "mysql -h db -u root -p{s} shop", "Sq" + r(ALNUM, 12))
    add("cli-password-flag", "sshpass -p '{s}' ssh deploy@web1", "Ss" + r(ALNUM, 12))
    add("password-element", "<datasource><user>app</user><password>{s}</password></datasource>", "Xm" + r(ALNUM, 14))
    add("ini-password", "[database]\nuser = app\npass = {s}\n", "In1" + r(ALNUM, 11))
    add("netrc-password", "machine api.example.com login deploy password {s}", r(ALNUM, 20))
    add("pgpass-line", "db.internal:5432:shop:app:{s}", "Pg9" + r(ALNUM, 13))
    add("password-in-prose", "ssh in as deploy, the password is {s}", "Tr0ub4dor&3")
    add("password-in-prose", "wifi passphrase: {s}", "Kettle-" + r(DIGITS, 4))
    # shapes an outside review found missing (2026-12-06)
    add("mailgun-key-bare", "mailgun key-{s}", r(HEX, 32))
    add("twilio-client-auth-token", "client = Client('AC" + r(HEX, 32) + "', '{s}')", r(HEX, 32))
    # an outside attack's (2026-12-08): Notion's integration token before `ntn_`, HTTPie's bearer auth in short options
    add("notion-legacy-token", "notion token {s}", "secret_" + r(ALNUM, 43))
    add("httpie-bearer", "http -A bearer -a {s} https://api.example.com/me", r(ALNUM, 32))
    add("httpie-bearer", "https -a {s} -A bearer example.com/api", r(ALNUM, 40))
    add(
        "multipart-secret-field",
        '--xyz\r\nContent-Disposition: form-data; name="api_key"\r\n\r\n{s}\r\n--xyz--\r\n',
        r(ALNUM, 40),
    )
    add(
        "multipart-secret-field",
        '--b\nContent-Disposition: form-data; name="password"\nContent-Type: text/plain\n\n{s}\n--b--\n',
        "Zq8p" + r(ALNUM, 10),
    )
    add("password-stdin-heredoc", "docker login ghcr.io -u bob --password-stdin <<'EOF'\n{s}\nEOF", r(ALNUM, 22))
    add("provider-secret-prefixes", "my bitbucket creds: bob / {s}", "ATBB" + r(ALNUM, 32))
    add("provider-secret-prefixes", "use {s} for the together calls", "tgp_v1_" + r(ALNUM, 43))
    add("provider-secret-prefixes", "fireworks is {s}", "fw_Zq8" + r(ALNUM, 21))
    add("config-file-secrets", "database:\n  db_pass: >-\n    {s}\n", "Xm4" + r(ALNUM, 15))
    # their variants a review found (2026-12-06)
    add("provider-secret-prefixes", "TOGETHER={s}", "tgp_v1_" + r(ALNUM, 43))
    add("provider-secret-prefixes", "export FW={s}", "fw_Zq8" + r(ALNUM, 21))
    add("password-stdin-heredoc", "docker login --password-stdin <<< {s}", "Zq8" + r(ALNUM, 14))
    add("password-stdin-heredoc", "cat <<EOF | docker login ghcr.io -u bob --password-stdin\n{s}\nEOF", "Zq8" + r(ALNUM, 14))
    add("config-file-secrets", "db:\n  passphrase: |\n    {s}\n", "Zq8" + r(ALNUM, 14))
    add("config-file-secrets", "db:\n  api-key: |\n    {s}\n", "Zq8" + r(ALNUM, 14))
    add("password-in-prose", "`DB_PASSWORD` is set to {s}", "Zq8" + r(ALNUM, 14))
    add("multipart-secret-field", "--b\r\nContent-Disposition: form-data; name=api_key\r\n\r\n{s}\r\n--b--", "Zq8" + r(ALNUM, 14))
    add(
        "multipart-secret-field",
        "--b\r\nContent-Disposition: form-data; name='password'\r\n\r\n{s}\r\n--b--",
        "Zq8" + r(ALNUM, 14),
    )
    add(
        "multipart-secret-field",
        '--b\r\nContent-Disposition: form-data; name="clientSecret"\r\n\r\n{s}\r\n--b--',
        "Zq8" + r(ALNUM, 14),
    )
    add(
        "multipart-secret-field",
        '--b\r\nContent-Disposition: form-data; name="session[password]"\r\n\r\n{s}\r\n--b--',
        "hunterhunter",
    )
    add(
        "multipart-secret-field",
        '--b\r\nContent-Disposition: form-data; name="db_password_2"\r\n\r\n{s}\r\n--b--',
        "Zq8" + r(ALNUM, 14),
    )
    add("password-in-prose", "the 'password' is {s}", "Tr0ub4dor&3x")
    add("mailgun-key-bare", "# Mailgun\n{s}", "key-" + r(HEX, 32))
    # a variable's name in an answer's prose (after `printenv`), bare or as code
    add("password-in-prose", "DB_PASSWORD is {s}", "Qz8" + r(ALNUM, 13))
    add("password-in-prose", "`STAGING_DB_PASSWORD` is `{s}` on the box", "Vt2" + r(ALNUM, 11))
    add("pin-in-prose", "remember my bank PIN is {s}", r(DIGITS, 4))
    add("pin-in-prose", "the unlock code for the office door is {s}.", r(DIGITS, 6))
    add("recovery-code-in-prose", "GitHub recovery codes: {s}", r(ALNUM, 5).lower() + "-" + r(DIGITS, 5))
    add("pin-in-prose", "remember my bank PIN:{s}", r(DIGITS, 4))
    add("pin-in-prose", "my phone passcode is: {s}", r(DIGITS, 6))
    add(
        "recovery-code-in-prose",
        "GitHub recovery codes:\n{s}\n",
        "\n".join(r(LOWER + DIGITS, 4) + r(DIGITS, 1) + "-" + r(LOWER + DIGITS, 5) for _ in range(16)),
    )
    # Passwords as config files, connection strings and command lines give them (an outside tester's forms)
    add("password-value", "spring.datasource.password={s}", "Summer2024!" + r(ALNUM, 4))
    add("password-value", "Server=db;Database=app;User Id=sa;Password={s};", "P@ssw0rd" + r(DIGITS, 3))
    add("password-value", "host=db port=5432 dbname=app user=admin password={s} sslmode=require", "Tr0ub4dor&3")
    add("password-value", "jdbc:postgresql://db:5432/app?user=admin&password={s}", "hunter2" + r(LOWER, 6))
    add("password-value", "mysql_root_password: {s}", "correct-horse-battery-staple")
    add("password-value", "db_password={s}", "Welcome1" + r(DIGITS, 2))
    add("password-define", "define( 'DB_PASSWORD', '{s}' );", "Summer2024!" + r(ALNUM, 3))
    add("password-pair", "env:\n  - name: DB_PASSWORD\n    value: {s}\n", "Kx9#mQ2$vL8pZ4wN")
    add("password-pair", '<add key="DbPassword" value="{s}"/>', "Xm" + r(ALNUM, 12))
    add("password-pair", "requests.get(url, auth=('admin', '{s}'))", "Summer2024!")
    add("short-password-key", '{{"user": "admin", "pass": "{s}"}}', "Summer2024!")
    add("dsn-password", 'dsn := "admin:{s}@tcp(db:3306)/app"', "P@ssw0rd" + r(DIGITS, 3))
    add("query-secret", "https://api.example.com/v1/forecast?q=x&api_key={s}", r(ALNUM, 32))
    add("query-secret", "GET /data/2.5/weather?q=Berlin&appid={s}", r(HEX, 32))
    add("env-secret-assignment", "PGPASSWORD={s} psql -h db", "Kx9#mQ2$vL8pZ4wN")
    add("secret-in-prose", "the client secret is {s}", "cs_" + r(ALNUM, 20) + r(DIGITS, 4))
    add("cli-secret-flag", "redis-cli -h cache -a {s} ping", "Rd" + r(ALNUM, 12))
    add("cli-secret-flag", "ssh-keygen -t ed25519 -N '{s}' -f deploy_key", "Hunter2Pass!")
    add("cli-secret-flag", "openssl pkcs12 -export -passout pass:{s} -out a.p12", "Op3n" + r(ALNUM, 10))
    add("cli-secret-flag", "mysqldump -u root --password={s} shop", "Summer2024!")
    add("cookie-header", "curl -H 'Cookie: sessionid={s}' https://x", r(ALNUM, 32))
    add("cookie-header", "Cookie: theme=dark; sessionid={s}; lang=en", r(ALNUM, 32))
    add("pass-name-assignment", "DB_PASS={s}", "Summer2024!" + r(DIGITS, 2))
    add("pass-name-assignment", "RABBITMQ_DEFAULT_PASS: {s}", "Rb9" + r(ALNUM, 14))
    add("pass-name-assignment", "SMTP_PW={s}", "Sm7" + r(ALNUM, 12))
    add("password-value", "ansible_become_pass={s}", "Summer2024!")
    add("password-value", "ansible_ssh_pass: {s}", "P@ssw0rd" + r(DIGITS, 3))
    # a third review's misses
    add("cookie-header", "curl -H 'Cookie: _ga=GA1.1.1234567890.1700000000; sessionid={s}' https://x", r(LOWER + DIGITS, 32))
    add("query-secret", "GET https://www.googleapis.com/drive/v3/files?access_token={s}&alt=json", "ya29.a0Af" + r(URLSAFE, 40))
    add("query-secret", "https://api.example.com/v1?api_key={s}", r(LOWER + UPPER, 26))
    add("secret-in-prose", "the client secret is {s}", "Xk9!mQ2@vLp7#Rt5$")
    add("password-value", "db_password: {s}", "summer_2024")
    add("password-value", "db_password_prod: {s}", "Kx9mQ2vLp7")
    add("cli-secret-flag", "redis-cli -h cache.internal -a {s}", "K9X2M7Q4P8Z3")
    add("password-in-prose", "the wifi password is {s}", "Sunflowerfields")
    add("pass-name-assignment", "DB_PASS={s}", "Kx9mQ2v;L8z#")
    add("pass-name-lower", "db_pass: {s}", "Xk9#mQ2vL")
    add("pass-name-lower", "$db_pass = '{s}';", "Kx9mQ2vL")
    add("pass-name-lower", "rabbitmq_pass: {s}", "guest1234!")
    # a seventh review's: weak passwords in .env files, one opening with "!", a hyphenated key in prose
    add("weak-password-assignment", "POSTGRES_PASSWORD={s}", "postgres")
    add("weak-password-assignment", "SESSION_SECRET={s}", "keyboardCat")
    add("weak-password-assignment", "API_TOKEN={s}", "KQXZPLMRTV")
    add("env-secret-assignment", "ADMIN_PASSWORD={s}", "!Summer")
    add("pass-name-assignment", "DB_PASS={s}", "correct-horse-battery-staple")
    add("secret-in-prose", "the API key is {s}", "sk1234-live-prod")
    add("env-secret-assignment", "TOTP_SECRET={s}", "JBSWY3DPEHPK3PXP")
    add("env-secret-assignment", "DB_PASSWORD={s}", "!QAZ2wsx")
    add("cookie-header", "Cookie: sid={s}", "3f2b9c1e-7a4d-4e2b-9f1a-2c3d4e5f6a7b")
    add("secret-in-prose", "the API key is {s}", "3f2b9c1e-7a4d-4e2b-9f1a-2c3d4e5f6a7b")
    add("cli-secret-flag", "mysql -u root --password={s}", "letmein")
    # an eighth review's: weak passwords under any name that ends in the secret's word, a connection string's, and
    # passwords holding a bracket (once read as code)
    add("weak-password-assignment", "DB_PASS={s}", "letmein")
    add("weak-password-assignment", "DB_PASSPHRASE={s}", "letmein")
    add("weak-password-assignment", "KEYSTORE_PASS: {s}", "changeit1")
    add("weak-password-assignment", "DB_PASSWORD={s}", "SUMMER")
    add("weak-password-assignment", "DB_PASSWORD={s}", "Welcome")
    add("weak-password-assignment", "Data Source=db;User Id=sa;Password={s};", "letmein")
    add("weak-password-assignment", "Server=tcp:db;User ID=sa;Pwd={s};", "Xk9mQ2vLp")
    add("env-secret-assignment", "DB_PASSWORD={s}", "x7}Gq2!vRm(Lp9")
    add("env-secret-assignment", "JWT_SECRET={s}", "Zm9v)YmFyYmF6cXV4")
    add("password-value", "spring.datasource.password={s}", "PtY]gj)mU/h#Bel3")
    add("password-in-prose", "the password is {s}", "Tr0ub4dor&3(x")
    add("cli-password-flag", 'mysql -uroot -p"{s}" shop', "Xk9mQ2vLp")
    add("secret-value", "oauth:\n  client_secret: {s}\n", "Xk9mQ2vLp7")
    add("secret-value", "  secret: {s}", "aB3-dE5fG7")
    # a weak password on a command line or a quoted compose item; a secret key's; a quote of the other kind inside
    add("weak-password-assignment", "PGPASSWORD={s} psql -h localhost -U app", "postgres")
    add("weak-password-assignment", "docker run -d -e POSTGRES_PASSWORD={s} -p 5432:5432 postgres:16", "sunshine")
    add("weak-password-assignment", '    environment:\n      - "POSTGRES_PASSWORD={s}"\n', "sunshine")
    add("weak-password-assignment", "SECRET_KEY={s}", "qwertyuiop")
    add("password-assignment", '{{"username": "admin", "password": "{s}"}}', "pv#ME[c&'0g;oRqG")
    # a tenth review's: Windows line ends, *_KEY names, a YAML anchor, a pointer-like start, connection strings' forms
    add("weak-password-assignment", "DB_PASSWORD={s}\r\nDB_USER=app\r\n", "postgres")
    add("weak-password-assignment", "MINIO_ACCESS_KEY={s}", "minioadmin")
    add("weak-password-assignment", "docker run -e API_KEY={s} app", "letmein")
    add("weak-password-assignment", "DB_PASSWORD: &dbpass {s}", "postgres")
    add("env-secret-assignment", "POSTGRES_PASSWORD: &pgpass {s}", "s3cr3tPassw0rd")
    add("env-secret-assignment", "DB_PASSWORD={s}", "*Secret.2024")
    add("weak-password-assignment", "Server=db;Database=app;User Id=sa;Password = {s};", "letmein")
    add("weak-password-assignment", '"Host=localhost;Database=app;Username=postgres;Password={s}"', "hunter")
    # an eleventh review's: pwgen's and other short or letters-only values under *_KEY and *_SECRET names, with
    # spaces around "=", quoted; "master" and "default" as passwords
    add("env-secret-assignment", "JWT_SECRET = {s}", "ohXe4ool")
    add("env-secret-assignment", "ENCRYPTION_KEY={s}", "kRtwPzQmXbNvLsYh")
    add("env-secret-assignment", "SIGNING_KEY={s}", "Abcd_1234")
    add("weak-password-assignment", "DB_PASSWORD = {s}", "postgres")
    add("weak-password-assignment", 'ADMIN_PASSWORD = "{s}"', "admin")
    add("weak-password-assignment", "ENCRYPTION_KEY={s}", "letmein")
    add("weak-password-assignment", "REDIS_PASSWORD={s}", "master")
    add("weak-password-assignment", "POSTGRES_PASSWORD: {s}", "default")
    add("weak-password-assignment", "DB_PASSWORD := {s}", "postgres")
    add("password-assignment", 'JWT_SECRET="{s}"', "{noop}admin")
    # typed forms: pydantic's settings, TypeScript's and Rust's constants, C's #define, Makefile's ?=
    add("password-assignment", '    SECRET_KEY: str = "{s}"', "changethis")
    add("password-assignment", 'const API_KEY: string = "{s}";', "Xk9mQ2vLp7")
    add("weak-password-assignment", 'const DB_PASSWORD: &str = "{s}";', "root")
    add("weak-password-assignment", "DB_PASSWORD ?= {s}", "postgres")
    add("password-define", '#define WIFI_PASSWORD "{s}"', "sunshine1")
    add("weak-password-assignment", 'PASSWORD="{s}",', "admin")
    # a fifteenth review's: a subscript's name, JSON name/value pairs, aws sts text, Discord webhooks, short Vault
    # tokens, a scheme with "_"
    add("password-assignment", 'os.environ["MISTRAL_API_KEY"] = "{s}"', r(ALNUM, 32))
    add("password-assignment", "app.config['SECRET_KEY'] = '{s}'", r(ALNUM, 40))
    add("password-assignment", 'api_key <- "{s}"', r(ALNUM, 32))
    add("password-pair", '{{"name": "DB_PASSWORD", "value": "{s}"}}', "Xk9mQ2vLp7" + r(ALNUM, 6))
    add("password-pair", "- name: DB_PASS\n  value: {s}", "Xk9mQ2vLp7")
    add("aws-sts-text", "CREDENTIALS\tASIAQVQELPOIWRWPUVI6\t2026-12-03T12:00:00Z\t{s}", r(ALNUM, 40) + "\t" + r(ALNUM, 200))
    add("discord-webhook", "https://discord.com/api/webhooks/123456789012345678/{s}", r(URLSAFE, 68))
    add("vault-token", "token               hvs.{s}", r(ALNUM, 24))
    add("url-password", "oracle+cx_oracle://scott:{s}@db:1521/orcl", "Tg7" + r(ALNUM, 9))
    add("url-password-slash", 'psql "postgresql://app:{s}@db:5432/app"', "Sl4" + r(B64, 8) + "/" + r(B64, 9))
    add("url-password-slash", "DATABASE_URL=mysql://root:{s}@db/shop", "Sl5/" + r(B64, 14) + "=")
    add("url-password-slash", "postgres://app:{s}@db:5432/app", "/Kx9+abQ2/cdZ7w==")
    add("url-password", "postgres://admin:{s}@db.internal:5432/app", "Xk9[vQ2]mZ7pL")
    add("url-password", "redis://:{s}@cache:6379", "$2b$10$abcdefghijkLMNOP")
    add("shell-secret-forms", 'setx AZURE_CLIENT_SECRET "{s}"', "Az7" + r(URLSAFE, 30))
    add("shell-secret-forms", "echo {s} | docker login -u ci --password-stdin registry.example.com", "Dk9" + r(ALNUM, 13))
    add("shell-secret-forms", "htpasswd -b /etc/nginx/.htpasswd admin {s}", "Ht5" + r(ALNUM, 9))
    add("shell-secret-forms", '$p = ConvertTo-SecureString "{s}" -AsPlainText -Force', "Ps3" + r(ALNUM, 11))
    add("shell-secret-forms", "export SSHPASS={s}; sshpass -e ssh deploy@host", "Ss1" + r(ALNUM, 9))
    # a sixteenth review's variants
    add("shell-secret-forms", "echo -n '{s}' | docker login -u me --password-stdin", "Dk9" + r(ALNUM, 13))
    add("shell-secret-forms", "htpasswd -Bbn user {s}", "Ht5" + r(ALNUM, 9))
    add("shell-secret-forms", 'setx /M DB_PASSWORD "{s}"', "Az7" + r(ALNUM, 12))
    add("shell-secret-forms", '"{s}" | ConvertTo-SecureString -AsPlainText -Force', "Ps3" + r(ALNUM, 11))
    add("discord-webhook", "https://discord.com/api/v10/webhooks/123456789012345678/{s}", r(URLSAFE, 68))
    add("password-pair", '{{\n  "name": "DB_PASSWORD",\n  "value": "{s}"\n}}', "Xk9mQ2vLp7" + r(ALNUM, 6))
    # a seventeenth review's: secrets known by their prefix, SQL, tools' own password options, the IAM console's
    # CSV, config files, a cookie inside JSON
    # The OpenAI-compatible APIs' keys, pasted bare (named, `OPENROUTER_API_KEY=...` is caught by the assignment rule)
    add("llm-provider-keys", "here is my openrouter key {s} - wire it in", "sk-or-v1-" + r(HEX, 64))
    add("llm-provider-keys", "groq: {s}", "gsk_" + r(ALNUM, 52))
    add("llm-provider-keys", "the xai key {s}.", "xai-" + r(ALNUM, 80))
    add("llm-provider-keys", "perplexity {s}", "pplx-" + r(ALNUM, 48))
    add("llm-provider-keys", "cerebras {s}", "csk-" + r(LOWER + DIGITS, 48))
    add("llm-provider-keys", "deepseek key {s} for the client", "sk-" + r(HEX, 32))
    add("llm-provider-keys", "an old openai key {s}", "sk-" + r(ALNUM, 48))
    add("provider-secret-prefixes", "STRIPE_WEBHOOK_SECRET={s}", "whsec_" + r(ALNUM, 32))
    add("provider-secret-prefixes", '"client_secret": "{s}"', "GOCSPX-" + r(URLSAFE, 28))
    add("provider-secret-prefixes", "curl -H 'x: {s}'", "ya29." + r(URLSAFE, 150))
    add("provider-secret-prefixes", "refresh_token: {s}", "1//0" + r(URLSAFE, 100))
    add("provider-secret-prefixes", "curl https://api.telegram.org/bot{s}/getUpdates", "7012345678:AA" + r(URLSAFE, 33))
    add("sql-password", "CREATE USER bob WITH PASSWORD '{s}';", "Sq1" + r(ALNUM, 11))
    add("sql-password", "CREATE USER 'bob'@'%' IDENTIFIED BY '{s}';", "Sq2" + r(ALNUM, 11))
    add("sql-password", "ALTER ROLE postgres WITH ENCRYPTED PASSWORD '{s}';", "Sq3" + r(ALNUM, 11))
    add("sql-password", "CREATE LOGIN app WITH PASSWORD = '{s}';", "Sq4" + r(ALNUM, 11))
    add("sql-password", "CREATE USER 'bob'@'localhost' IDENTIFIED BY \"{s}\";", "Sq5" + r(ALNUM, 11))
    add("sql-password", "SET PASSWORD FOR 'bob'@'%' = '{s}';", "Sq6" + r(ALNUM, 11))
    add("sql-password", "ALTER USER app WITH PASSWORD E'{s}';", "Sq7" + r(ALNUM, 11))
    add("tool-password-options", "redis-server --port 6380 --requirepass {s}", "Rd2" + r(ALNUM, 17))
    add("tool-password-options", "kubectl exec -it mongo-0 -- mongosh -u root -p {s}", "Mg2" + r(ALNUM, 11))
    add("tool-password-options", "docker exec -it db mongodump -u root -p {s} --out /dump", "Mg3" + r(ALNUM, 11))
    add("config-file-secrets", "network={{\n  psk={s}\n}}", r(HEX, 64))
    add("tool-password-options", "wget --user=bob --password {s} https://files.example.com/a.tgz", "Wg1" + r(ALNUM, 11))
    add("tool-password-options", "keytool -importkeystore -srckeystore a.p12 -storepass {s} -noprompt", "Kt1" + r(ALNUM, 11))
    add("tool-password-options", "ldapsearch -x -D cn=admin,dc=example,dc=org -w {s} -H ldap://h", "Ld1" + r(ALNUM, 11))
    add("tool-password-options", "mongosh --host db -u admin -p {s} --authenticationDatabase admin", "Mg1" + r(ALNUM, 11))
    add("tool-password-options", "bind 127.0.0.1\nrequirepass {s}\n", "Rd1" + r(ALNUM, 17))
    add(
        "aws-secret-beside-id",
        "User name,Password,Access key ID,Secret access key\nbob,,AKIAQYLPMN5HFIQR7XYZ,{s}\n",
        r(ALNUM + "/+", 40),
    )
    add("aws-secret-beside-id", "| AccessKeyId | AKIAQYLPMN5HFIQR7XYZ |\n| SecretAccessKey | {s} |", r(ALNUM + "/+", 40))
    add("config-file-secrets", 'network={{\n  ssid="home"\n  psk="{s}"\n}}', "Wp1" + r(ALNUM, 11))
    add("config-file-secrets", "<auth-user-pass>\nbob\n{s}\n</auth-user-pass>", "Ov1" + r(ALNUM, 11))
    add("config-file-secrets", "Encryption: none\nPrivate-Lines: 1\n{s}\nPrivate-MAC: 00", "AAAAI" + r(B64, 43))
    add("config-file-secrets", "db:\n  password: |\n    {s}\n", "Ym1" + r(ALNUM, 13))
    add("cookie-header", '{{"headers": {{"Cookie": "session={s}"}}}}', r(ALNUM, 40))
    add("cookie-header", '{{"name": "Cookie", "value": "csrftoken=abc; sessionid={s}"}}', r(ALNUM, 32))
    add("session-cookie", '"cookies": [{{"name": "laravel_session", "value": "{s}", "path": "/"}}]', r(ALNUM, 40))
    add("session-cookie", 'document.cookie = "sid={s}; path=/";', r(HEX, 32))
    add("session-cookie", "requests.get(url, cookies={{'sessionid': '{s}'}})", r(ALNUM, 32))
    # an eighteenth review's: database clients' and other tools' own password options and arguments
    add("sqlserver-passwords", 'sqlcmd -S db -U sa -P {s} -Q "select 1"', "Ms1" + r(ALNUM, 11))
    add("sqlserver-passwords", "bcp db.dbo.t out f.dat -S srv -U sa -P{s}", "Ms2" + r(ALNUM, 11))
    add("oracle-passwords", "sqlplus -s scott/{s}@//db:1521/XE @run.sql", "Or1" + r(ALNUM, 11))
    add("oracle-passwords", "expdp userid=system/{s} directory=dp dumpfile=full.dmp", "Or2" + r(ALNUM, 11))
    add("oracle-passwords", "rman target sys/{s}@prod", "Or3" + r(ALNUM, 11))
    add("oracle-passwords", "CREATE USER scott IDENTIFIED BY {s};", "Or4" + r(ALNUM, 11))
    add("oracle-passwords", "ALTER USER system IDENTIFIED BY {s} ACCOUNT UNLOCK;", "Or5" + r(ALNUM, 11))
    add("db-client-passwords", "SET PASSWORD FOR 'bob'@'%' = PASSWORD('{s}');", "My1" + r(ALNUM, 11))
    add(
        "db-client-passwords",
        "UPDATE mysql.user SET authentication_string=PASSWORD(\"{s}\") WHERE User='root';",
        "My2" + r(ALNUM, 11),
    )
    add("db-client-passwords", "127.0.0.1:6379> AUTH default {s}", "Rd3" + r(ALNUM, 17))
    add("db-client-passwords", "redis-cli -h cache.internal AUTH {s}", "Rd4" + r(ALNUM, 17))
    add("sqlserver-passwords", "Invoke-Sqlcmd -ServerInstance db -Username sa -Password {s}", "Ps1" + r(ALNUM, 11))
    add("db-client-passwords", "influx -username admin -password {s} -execute 'SHOW DATABASES'", "If1" + r(ALNUM, 11))
    add("tool-passwords", "az login -u bob@example.com -p {s}", "Az1" + r(ALNUM, 11))
    add("tool-passwords", "oc login -u admin --password={s} https://api.crc.testing:6443", "Oc1" + r(ALNUM, 11))
    add("tool-passwords", "jf c add art --url https://x.jfrog.io --user bob --password {s}", "Jf1" + r(ALNUM, 11))
    add("tool-passwords", "zip -r -P {s} backup.zip secrets/", "Zp1" + r(ALNUM, 11))
    add("tool-passwords", "7z a -p{s} -mhe=on backup.7z secrets", "Sz1" + r(ALNUM, 11))
    add("tool-passwords", "gpg --batch --yes --passphrase '{s}' -c notes.txt", "Gp1" + r(ALNUM, 11))
    add("remote-login-passwords", "smbclient //files/share -U CORP/bob%{s} -c ls", "Sm1" + r(ALNUM, 11))
    add("remote-login-passwords", "xfreerdp /v:win10 /u:bob /p:{s} /cert:ignore", "Rp1" + r(ALNUM, 11))
    add("remote-login-passwords", "nmcli dev wifi connect HomeNet password {s}", "Wf1" + r(ALNUM, 11))
    add("remote-login-passwords", "lftp -u bob,{s} sftp://files.example.com", "Lf1" + r(ALNUM, 11))
    add("remote-login-passwords", "rabbitmqctl add_user bob {s}", "Rb1" + r(ALNUM, 11))
    add("remote-login-passwords", "net use Z: \\\\files\\share {s} /user:CORP\\bob", "Nu1" + r(ALNUM, 11))
    add("admin-tool-passwords", "echo '{s}' | sudo -S systemctl restart nginx", "Su1" + r(ALNUM, 11))
    add("admin-tool-passwords", "ipmitool -I lanplus -H bmc1 -U admin -P {s} chassis power status", "Ip1" + r(ALNUM, 11))
    add("admin-tool-passwords", "mosquitto_pub -h broker -u bob -P {s} -t home/temp -m 21", "Mq1" + r(ALNUM, 11))
    add("admin-tool-passwords", "snmpwalk -v3 -l authPriv -u bob -a SHA -A {s} -x AES -X x host", "Sn1" + r(ALNUM, 11))
    # a nineteenth review's: the same on continued lines, quoted with spaces, followed by more lines, second on a line
    add("db-client-passwords", "127.0.0.1:6379> AUTH {s}\nOK\n127.0.0.1:6379> KEYS *", "Rd5" + r(ALNUM, 17))
    add("oracle-passwords", "sqlplus scott/{s}\nSQL> select 1 from dual;", "Or6" + r(ALNUM, 11))
    add("oracle-passwords", "rman target / catalog rman/{s}@rcat", "Or7" + r(ALNUM, 11))
    add("oracle-passwords", "rman TARGET sys/Or8Xk9mQ2pL7@db CATALOG rman/{s}@rcat", "Or9" + r(ALNUM, 11))
    add("sqlserver-passwords", "sqlcmd -S db -U sa \\\n  -P {s} \\\n  -Q 'select 1'", "Ms3" + r(ALNUM, 11))
    add("sqlserver-passwords", 'sqlcmd -S db -U sa -P "{s}"', "Ms4 " + r(ALNUM, 5) + " " + r(ALNUM, 6))
    add("oracle-passwords", "SQL> connect sys/{s} as sysdba", "Or10" + r(ALNUM, 10))
    add("oracle-passwords", "CREATE USER scott\n  IDENTIFIED BY {s}\n  DEFAULT TABLESPACE users;", "Or11" + r(ALNUM, 10))
    add("oracle-passwords", "CREATE DATABASE LINK r CONNECT TO scott IDENTIFIED BY {s} USING 'r';", "Or12" + r(ALNUM, 10))
    add("db-client-passwords", 'echo "AUTH {s}" | redis-cli -h cache', "Rd6" + r(ALNUM, 17))
    add("sqlserver-passwords", "Invoke-Sqlcmd -ServerInstance db `\n  -Password {s}", "Ps2" + r(ALNUM, 11))
    add("db-client-passwords", "influx setup -u admin -p {s} -o org -b bucket -f", "If2" + r(ALNUM, 11))
    add("oracle-passwords", "sql scott/{s}@db.example.com:1521/orcl", "Or13" + r(ALNUM, 10))
    add("oracle-passwords", "GRANT CONNECT, RESOURCE TO scott IDENTIFIED BY {s};", "Or14" + r(ALNUM, 10))
    add("oracle-replace-password", "ALTER USER app IDENTIFIED BY Or15Xk9mQ2pL REPLACE {s};", "Or16" + r(ALNUM, 10))
    # a twenty-somethingth review's: the Oracle JDBC URL, and a value with "false" in it (gitleaks' global allowlist
    # let any through)
    add("jdbc-oracle-password", "url=jdbc:oracle:thin:scott/{s}@//db:1521/ORCL", "Oj1" + r(ALNUM, 11))
    add("jdbc-oracle-password", "jdbc:oracle:thin:scott/{s}@db:1521:ORCL", "Oj2" + r(ALNUM, 11))
    add(
        "password-value",
        "spring.datasource.url=jdbc:mysql://db:3306/app?user=root&password={s}&useSSL=false",
        "Uf6" + r(ALNUM, 13),
    )
    add("tool-passwords", "az login --service-principal \\\n  -u APP_ID \\\n  -p {s}", "Az2" + r(ALNUM, 11))
    add("tool-passwords", "gpg --batch --passphrase '{s}' -c notes.txt", "Gp2 " + r(ALNUM, 5) + " " + r(ALNUM, 6))
    add("tool-passwords", "zip -rP {s} backup.zip secrets/", "Zp2" + r(ALNUM, 11))
    add("admin-tool-passwords", "printf '%s\\n' '{s}' | sudo -S true", "Su2" + r(ALNUM, 11))
    add("tool-passwords", "crackmapexec smb 10.0.0.5 -u admin -p {s}", "Cm1" + r(ALNUM, 11))
    add(
        "remote-login-passwords",
        'lftp -e "set ssl:verify-certificate no; open -u bob,{s} files.example.com"',
        "Lf2" + r(ALNUM, 11),
    )
    add("admin-tool-passwords", "snmpget -v3 -u bob -a SHA -A Sn2Xk9mQ2pL7 -x AES -X {s} host sysName.0", "Sn3" + r(ALNUM, 11))
    add("admin-tool-passwords", "mosquitto_sub -h broker -u bob --pw {s} -t '#'", "Mq2" + r(ALNUM, 11))
    # a twentieth review's: a Cookie header with an encoded or placeholder-like value beside the session, a long
    # header, escaped quotes, Selenium's and curlconverter's cookies, passwords quoted with spaces
    add("cookie-header", "Cookie: recent_search=%EC%84%9C%EC%9A%B8; sessionid={s}", r(ALNUM, 32))
    add("cookie-header", '{{"name": "Cookie", "value": "tracker=xxxxxxxx; sessionid={s}"}}', r(ALNUM, 32))
    add(
        "cookie-header",
        "Cookie: " + "; ".join(f"_ga_{i}=GS1.1.17000{i}.1.1.0.0.0" for i in range(60)) + "; sid={s}",
        r(ALNUM, 32),
    )
    add("cookie-header", 'Cookie: csrftoken="abc"; sessionid={s}', r(ALNUM, 32))
    add("session-cookie", '{{"name": "session-token", "value": "\\"{s}\\""}}', r(ALNUM, 40))
    add("session-cookie", "driver.add_cookie({{'name': 'sessionid', 'value': '{s}'}})", r(ALNUM, 32))
    add("session-cookie", "cookies = {{\n    '_ga': 'GA1.2.1234567890.1700000000',\n    'sessionid': '{s}',\n}}", r(ALNUM, 32))
    add("remote-login-passwords", 'smbclient //files/share -U "CORP\\bob%{s}"', "Sm2 " + r(ALNUM, 5) + " " + r(ALNUM, 6))
    add("admin-tool-passwords", "echo '{s}' | sudo -u postgres -S psql", "Su3" + r(ALNUM, 11))
    add("remote-login-passwords", "nmcli con mod HomeNet wifi-sec.psk {s}", "Wf2" + r(ALNUM, 11))
    add(
        "sqlserver-passwords",
        'test: ["CMD", "/opt/mssql-tools18/bin/sqlcmd", "-U", "sa", "-P", "{s}", "-Q", "SELECT 1"]',
        "Ms5" + r(ALNUM, 11),
    )
    add("oracle-passwords", "rman target=sys/Or15Xk9mQ2p@prod catalog=rman/{s}@rcat", "Or16" + r(ALNUM, 10))
    # a URL's password with an unencoded `@`, or after an e-mail address as the user; unixODBC's positional isql;
    # every session cookie of a cookies dict
    add("url-password-at", "DATABASE_URL=postgres://app:{s}@db.internal:5432/shop", "P@" + r(ALNUM, 10))
    add(
        "url-password-at", "mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/?retryWrites=true", r(ALNUM, 5) + "@" + r(ALNUM, 6)
    )
    add("url-password-at", "redis://:{s}@cache:6379/0", "R@" + r(ALNUM, 8))
    add("url-password-at", "SMTP_URL=smtp://alerts@example.com:{s}@smtp.example.com:587", "Sm7" + r(ALNUM, 13))
    add("sqlserver-passwords", 'sqlcmd -S db -Q "SELECT 1; SELECT 2" -U sa -P {s}', "Ms7" + r(ALNUM, 11))
    add("odbc-isql-password", "isql -v MyDSN sa {s}", "Od1" + r(ALNUM, 11))
    add("odbc-isql-password", "$ isql prod_dsn dbuser {s} < query.sql", "Od2" + r(ALNUM, 11) + "!")
    add("session-cookie", "cookies = {{'sessionid': 'k2j3h4g5f6d7s8a9q0w1e2r3', 'laravel_session': '{s}'}}", r(ALNUM, 32))
    add("session-cookie", '{{"user": "ann", "auth_token": "{s}"}}', r(ALNUM, 40))
    # a local proxy's base URL with its token, as `env` prints the claude wrapper's
    add("loopback-path-token", "ANTHROPIC_BASE_URL=http://127.0.0.1:7077/{s}", "Qx7" + r(URLSAFE, 26) + "k9Z")
    add("loopback-path-token", "export OPENAI_BASE_URL=http://localhost:7077/{s}/openai/v1", "aB3" + r(URLSAFE, 26) + "Zz9")
    # a password that starts with `<` or ends with `>` (a generator's every printable character), not a placeholder
    add("env-secret-assignment", "DB_PASSWORD='{s}'", "Vb2#mQ7!kT9>")
    add("weak-password-assignment", '      POSTGRES_PASSWORD: "{s}"', "<Hq8$wZ3@nR5")
    # a quoted password with a character the rule's value stops at: redacted to its closing quote
    add("shell-secret-forms", "htpasswd -b -c .htpasswd admin '{s}'", "Tr0ub4dor&3xQ!")
    add("cli-password-flag", "sshpass -p '{s}' ssh deploy@h", "Tr0ub4dor 3xQ!")
    # a secret that a cloud's command line sets
    add("cloud-secret-commands", "aws configure set aws_secret_access_key {s} --profile deploy", r(ALNUM + "/+", 40))
    add(
        "cloud-secret-commands",
        "aws ssm put-parameter --name /prod/db/password --type SecureString --value '{s}'",
        "Tr0ub4dor&3xQ!",
    )
    add("cloud-secret-commands", "aws ssm put-parameter --name /prod/db/pw --value {s} --type SecureString", "Ss2" + r(ALNUM, 11))
    add("cloud-secret-commands", "aws secretsmanager create-secret --name prod/api --secret-string '{s}'", "Sm9" + r(ALNUM, 13))
    add("cloud-secret-commands", "gh secret set JWT_SECRET --body '{s}'", r("0123456789abcdef", 64))
    add(
        "cloud-secret-commands",
        "az keyvault secret set --vault-name prod-kv --name db-password --value '{s}'",
        "Vx9#mQ2!pL7$wZ4k",
    )
    add("cloud-secret-commands", "mysqladmin -u root password {s}", "My3" + r(ALNUM, 11))
    add("cloud-secret-commands", "http -a admin:{s} POST api.example.com/deploy", "Ht4" + r(ALNUM, 11))
    # an adversarial pass's shapes: curl -u with a password gitleaks' rule stops in, a 32-hex api_key, a token flag
    # with a space, IAM's text output, other Authorization schemes, CRLF, Spring XML, an implicit grant's redirect,
    # .netrc's default, a Markdown table in an edit tool's JSON input
    add("cli-user-password", "curl -u admin:{s} https://grafana.internal/api/health", "S3cr3t!" + r(ALNUM, 8) + "%x")
    add("cli-user-password", "curl --user 'deploy:{s}' -X POST https://ci/api", "Pw9+" + r(ALNUM, 10))
    add("secret-in-prose", "site: datadoghq.eu\napi_key: {s}\n", r(HEX, 32))
    add("secret-in-prose", "APIKEY={s}", r(ALNUM, 24))
    add("cli-token-flag", "vercel deploy --prod --token {s}", r(ALNUM, 24))
    add("cli-token-flag", "argocd login cd.example.com --auth-token={s}", r(ALNUM, 32))
    add("cli-token-flag", "ngrok config add-authtoken {s}", r(ALNUM, 27) + "_" + r(ALNUM, 21))
    add("aws-iam-text", "ACCESSKEY\tAKIAQX3MPLE7KD2ZXNWA\t2024-05-01T10:00:00+00:00\t{s}\tActive\tbob", r(ALNUM + "/+", 40))
    add("authorization-scheme", "curl -H 'Authorization: ApiKey {s}' https://es:9200", r(ALNUM, 40) + "==")
    add("authorization-scheme", '{{"Authorization": "Bot {s}"}}', r(ALNUM, 24) + "." + r(ALNUM, 6) + "." + r(ALNUM, 27))
    add("authorization-scheme", "Authorization: SSWS {s}", r(ALNUM, 42))
    add("authorization-scheme", "Authorization: key={s}", "AAAA" + r(URLSAFE, 36))
    add("api-key-header", "Ocp-Apim-Subscription-Key: {s}", r(HEX, 32))
    add("pgpass-line", "db.internal:5432:shop:app:{s}\r\n", "Kx9" + r(ALNUM, 10))
    add("password-property", '<property name="password" value="{s}"/>', "Kx9" + r(ALNUM, 10) + "!")
    add("password-property", '<entry key="db.password">{s}</entry>', "Kx8" + r(ALNUM, 10))
    add("query-secret", "http://localhost:8888/callback#access_token={s}&token_type=bearer", r(ALNUM, 40))
    add("netrc-password", "default login deploy password {s}", "Kx7" + r(ALNUM, 10) + "!")
    add("netrc-password", "machine api.example.com password {s} login ann", "Kx6" + r(ALNUM, 10))
    add("netrc-password", "machine a login b password c0ffee1x default login x password {s}", "Kx5" + r(ALNUM, 10))
    # a dotted token followed by a comma in prose is a token, not code (a review found it left by an allow rule)
    add("secret-in-prose", "the bot token is {s}, keep it safe", r(ALNUM, 24) + "." + r(ALNUM, 6) + "." + r(ALNUM, 27))
    # a twenty-fourth review's leaks: a value with an escaped quote in it (a generated password holds `"` about one
    # time in six), a value that starts with `$` or `/` or holds `{x}`, a token as a URL's user, an AWS secret after
    # its id and a space or colon, a signed URL's signature, tokens known by their prefix
    add("password-assignment", '{{"password": "{s}"}}', "Xk9" + r(ALNUM, 4) + '\\"' + r(ALNUM, 8))
    add("password-assignment", '{{"client_secret": "{s}"}}', r(ALNUM, 6) + '\\"' + r(ALNUM, 10))
    add("env-secret-assignment", 'DB_PASSWORD="{s}"', "Ab1" + '\\"' + r(ALNUM, 9))
    add("password-assignment", '{{"password": "{s}"}}', "/UNJZ3>O5" + r(ALNUM, 6))
    add("password-assignment", '{{"password": "{s}"}}', "Xk9{{vQ2}}" + r(ALNUM, 6))
    add("url-token-user", "git clone https://{s}@dev.azure.com/org/proj/_git/repo", r(LOWER + DIGITS, 52))
    add("url-token-user", "https://{s}@github.com/org/repo.git", r(HEX, 40))
    akia = "AKIA" + r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    add("aws-secret-beside-id", "mc alias set s3 https://s3.amazonaws.com " + akia + " {s}", r(ALNUM + "/+", 40))
    add("aws-secret-beside-id", akia + ":{s}", r(ALNUM + "/+", 40))
    add(
        "query-secret",
        "https://b.s3.amazonaws.com/k?X-Amz-Security-Token=IQoJb3JpZ2lu" + r(ALNUM, 20) + "&X-Amz-Signature={s}",
        r(HEX, 64),
    )
    add("query-secret", "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature={s}", r(HEX, 64))
    add("provider-secret-prefixes", "my token is {s}", "nfp_" + r(ALNUM, 36))
    add("provider-secret-prefixes", "export DOPPLER_TOKEN={s}", "dp.st.dev." + r(ALNUM, 40))
    add("cli-token-flag", "tailscale up --auth-key {s}", "tskey-auth-" + r(ALNUM, 12) + "-" + r(ALNUM, 30))
    # a secret's name and value as columns or fields apart: `vault kv get`, tab-separated, box-drawn, az's app
    # settings, SSM's parameter, Terraform's outputs; a YAML anchor or tag before a password
    add("secret-table-row", "Key                Value\n---                -----\npassword           {s}", "Xk9" + r(ALNUM, 12))
    add("secret-table-row", "DB_PASSWORD\t{s}\t2024-01-01T00:00:00Z", "Xk8" + r(ALNUM, 12))
    add("secret-table-row", "│ DB_PASSWORD │ {s} │", "Xk7" + r(ALNUM, 12))
    add("password-pair", '[{{"name": "DB_PASSWORD", "slotSetting": false, "value": "{s}"}}]', "Xk6" + r(ALNUM, 12))
    add(
        "password-pair",
        '{{"Parameter": {{"Name": "/prod/db/password", "Type": "SecureString", "Value": "{s}"}}}}',
        "Xk5" + r(ALNUM, 12),
    )
    add("password-pair", '{{"db_password": {{"sensitive": true, "type": "string", "value": "{s}"}}}}', "Xk4" + r(ALNUM, 12))
    add("password-value", "password: &pw {s}", "Xk3" + r(ALNUM, 12))
    add("password-value", "password: !!str {s}", "Xk2" + r(ALNUM, 12))
    # a review's: passphrases of words, a default or a setter's argument after a comma, a name that holds "tokeniz",
    # a value that starts with `[\`, a `$` before a password that reads as a variable up to a sign, a Neon key
    add("env-secret-assignment", 'WIFI_PASSWORD="{s}"', "Purple Monkey Dishwasher " + r(UPPER, 1) + r(LOWER, 5))
    add("password-assignment", '{{"password": "{s}"}}', "Blue sky over the harbor " + r(DIGITS, 2))
    add("hashicorp-tf-password", 'DB_PASSWORD = os.environ.get("POSTGRES_PASSWORD", "{s}")', "Sup3r" + r(LOWER + DIGITS, 9))
    add("hashicorp-tf-password", 'viper.SetDefault("database.password", "{s}")', "Sup3r" + r(LOWER + DIGITS, 9))
    add("password-assignment", '{{"tokenization_secret": "{s}"}}', "Xk9!" + r(ALNUM, 9))
    add("password-assignment", 'password = "{s}"', "[\\\\Xk9" + r(ALNUM, 8))
    add("provider-secret-prefixes", "NEON_API_KEY is {s}", "napi_" + r(LOWER + DIGITS, 64))
    # XML that names the secret in an attribute or a plist key; a variable set with a space
    add("named-element-secret", '<property name="hibernate.connection.password">{s}</property>', "Xk1" + r(ALNUM, 12))
    add("named-element-secret", '<string name="stripe_secret_key">{s}</string>', "Xk0" + r(ALNUM, 16))
    add("named-element-secret", "<key>API_SECRET</key>\n<string>{s}</string>", "Xj9" + r(ALNUM, 16))
    add("env-secret-space", "ENV DB_PASSWORD {s}", "Xj8" + r(ALNUM, 10))
    add("env-secret-space", "set -x DB_PASSWORD {s}", "Xj7" + r(ALNUM, 10))
    add("env-secret-space", "setenv DB_PASSWORD {s}", "Xj6" + r(ALNUM, 10))
    # a second review's: Ansible's !unsafe, a table row's value with a comma or a sign first, a URL-safe token as a
    # URL's user, a passphrase in a sentence's shape, defaults of any kind beside a secret's name
    add("password-value", "ansible_become_password: !unsafe {s}", "p4ss!w0rd" + r(ALNUM, 6))
    add("secret-table-row", "password    {s}", "Xk9," + r(ALNUM, 9) + "!")
    add("secret-table-row", "password    {s}", "&Xk9" + r(ALNUM, 10))
    add("url-token-user-mixed", "git clone https://{s}@git.example.com/org/repo.git", r(ALNUM, 18) + "_" + r(ALNUM, 18))
    add("env-secret-assignment", 'WIFI_PASSWORD="{s}"', "I love my dog " + r(DIGITS, 2) + "!")
    add("env-secret-assignment", 'DB_PASSWORD="{s}"', "Welcome to the jungle " + r(DIGITS, 4))
    add("password-assignment", 'passphrase = "{s}"', "The quick brown fox jumps over the lazy " + r(LOWER, 5))
    add("secret-default", 'os.environ.get("POSTGRES_PASSWORD", "{s}")', "supersecret" + r(LOWER, 6) + r(DIGITS, 2))
    add("secret-default", 'os.getenv("DB_PASSWORD", "{s}")', "S3cr3t!Pass#" + r(DIGITS, 4))
    add("secret-default", "config.set('redis', 'password', '{s}')", "Tr0ub4dor&" + r(DIGITS, 2))
    # a third review's: a password with a digit or a word of mixed case beside a secret's kind, values after a comma
    # in Java and PHP calls, a default by keyword, XML's <value> and spaced `=`, ENV's other names and forms
    add("env-secret-assignment", 'DB_PASSWORD="{s}"', "tokenRing" + r(DIGITS, 1) + " blue sky")
    add("env-secret-assignment", 'WIFI_PASSWORD="{s}"', "Blue Sky Password " + r(DIGITS, 2) + "!")
    add("hashicorp-tf-password", 'map.put("password", "{s}")', "letmein" + r(DIGITS, 3))
    add("hashicorp-tf-password", 'Map.of("username", "admin", "password", "{s}")', "qwerty_" + r(DIGITS, 3))
    add("secret-default", 'config("SECRET_KEY", default="{s}")', "Xk9" + r(ALNUM, 10))
    add("named-element-secret", '<property name="password"><value>{s}</value></property>', "Xk2" + r(ALNUM, 11))
    add("named-element-secret", '<property name = "hibernate.connection.password">{s}</property>', "Xk3" + r(ALNUM, 11))
    add("env-secret-space", 'ENV DB_PASSWORD "{s}"', "correct horse battery " + r(LOWER, 6))
    add("env-secret-space", "ENV DB_PASS {s}", "Xk4" + r(ALNUM, 10))
    add("env-secret-space", "set --export DB_PASSWORD {s}", "Xk5" + r(ALNUM, 10))
    # a Discord bot's token alone in code; a JSON Web Key's private parts
    add("discord-bot-token", "client.run('{s}')", "MTA5ODc2NTQzMjEwOTg3NjU0Mw." + r(URLSAFE, 6) + "." + r(ALNUM, 38))
    add("jwk-private-key", '{{"kty": "OKP", "crv": "Ed25519", "x": "' + r(URLSAFE, 43) + '", "d": "{s}"}}', r(URLSAFE, 43))
    add("jwk-private-key", '{{"kty": "oct", "k": "{s}", "alg": "HS256"}}', r(URLSAFE, 43))
    add("token-value", "users:\n- name: admin\n  user:\n    token: {s}", r(LOWER + DIGITS, 12) + "sync" + r(LOWER + DIGITS, 24))
    # a secret as a call's positional argument where the call names it, or piped to a command that stores it
    add("credential-call-argument", 'server.login("me@gmail.com", "{s}")', " ".join(r(LOWER, 4) for _ in range(4)))
    add("credential-call-argument", "smtp.login(EMAIL_USER, '{s}')", "Xk6" + r(ALNUM, 10))
    add("credential-call-argument", 'requests.get(url, auth=HTTPBasicAuth("admin", "{s}"))', "Xk7" + r(ALNUM, 10))
    add("credential-call-argument", 'new PasswordAuthentication("svc", "{s}".toCharArray())', "Xk8" + r(ALNUM, 10))
    add("credential-call-argument", 'new NetworkCredential("svc", "{s}", "CORP")', "Xk9" + r(ALNUM, 10))
    add("jwt-key-argument", 'jwt.encode(payload, "{s}", algorithm="HS256")', "Xk1" + r(ALNUM, 20))
    add("credential-call-argument", 'ClientSecretCredential(tenant_id, client_id, "{s}")', "Xk2~" + r(ALNUM, 30))
    add("credential-call-argument", 'keyring.set_password("deploy", "me", "{s}")', "Xk3" + r(ALNUM, 10))
    add("credential-call-argument", 'user.set_password("{s}")', "Tr0ub4dor&" + r(DIGITS, 3))
    add("shell-secret-forms", 'echo "{s}" | gh secret set API_KEY', "Xk4" + r(ALNUM, 20))
    add("shell-secret-forms", "printf %s {s} | wrangler secret put STRIPE_KEY", "Xk5" + r(ALNUM, 20))
    add("shell-secret-forms", "echo {s} | skopeo login -u me --password-stdin quay.io", "Xk6" + r(ALNUM, 20))
    add("shell-secret-forms", "net user svc_backup {s} /add", "Xk7" + r(ALNUM, 10))
    # a review's: a test helper's third argument, arguments on lines of their own, other languages' calls, sudo and
    # npx before the command, printf's own string, a here-string, a quoted password with a space
    add("credential-call-argument", "await login(page, 'admin', '{s}')", "Adm1n" + r(ALNUM, 9) + "!")
    add("credential-call-argument", 'server.login(\n    "me@gmail.com",\n    "{s}",\n)', " ".join(r(LOWER, 4) for _ in range(4)))
    add("credential-call-argument", 'auth := smtp.PlainAuth("", "me@x.com", "{s}", host)', "Xk1" + r(ALNUM, 10))
    add("credential-call-argument", 'req.SetBasicAuth("svc", "{s}")', "Xk2" + r(ALNUM, 10))
    add("jwt-key-argument", 'jwt.sign(payload, "{s}")', "Xk3" + r(ALNUM, 20))
    add("credential-call-argument", '$mail->login($user, "{s}")', "Xk4" + r(ALNUM, 10))
    add("shell-secret-forms", "echo {s} | sudo -E gh -R acme/shop secret set API_KEY", "Xk5" + r(ALNUM, 20))
    add("shell-secret-forms", "printf '{s}' | npx wrangler secret put API_KEY", "Xk6" + r(ALNUM, 20))
    add("shell-secret-forms", 'gh secret set API_KEY <<< "{s}"', "Xk7" + r(ALNUM, 20))
    add("shell-secret-forms", 'net user alice "{s}" /add', "Sup3r " + r(ALNUM, 8))
    add("hashicorp-tf-password", 'Map.of("password", "{s}")', "sha256" + r(LOWER + DIGITS, 8))
    # a second review's: an object before the key, a key of words, a passphrase of hyphenated words, reqwest's
    # Some(...), ftplib's FTP(host, user, password), vercel env add
    add("jwt-key-argument", 'jwt.sign({{ id: user.id }}, "{s}")', "Tr0ub4dor" + r(DIGITS, 3))
    add("jwt-key-argument", 'jwt.encode({{"sub": 1}}, "{s}")', "my_super_secret_" + r(LOWER, 6))
    add("credential-call-argument", 'smtp.login(user, "{s}")', "-".join(r(LOWER, 5) for _ in range(4)))
    add("credential-call-argument", '.basic_auth("admin", Some("{s}"))', "Tr0ub4dor" + r(DIGITS, 3))
    add("credential-call-argument", 'ftp = FTP("ftp.example.com", "alice", "{s}")', "Tr0ub4dor" + r(DIGITS, 3))
    add("shell-secret-forms", "echo {s} | vercel env add DB_PASSWORD production", "Tr0ub4dor" + r(DIGITS, 3))
    # An outside attack's everyday forms (2026-12-07)
    add("pass-key-quoted", "auth: {{ user: 'me@gmail.com', pass: '{s}' }}", r(ALNUM, 6) + "7Qx" + r(ALNUM, 3))
    add("pass-name-assignment", '{{"SMTP_HOST": "smtp.acme.io", "SMTP_PASS": "{s}"}}', "Rg7mV2" + r(ALNUM, 9))
    add("dotted-password-property", "db.user=app\ndb.pwd={s}\n", "Wm4x" + r(ALNUM, 8))
    add("password-word-value", "ssh to root@10.0.0.5 with password {s} and restart nginx", "Hq3v" + r(ALNUM, 8))
    add("password-word-value", "log in (password {s}) please", "Kd8f" + r(ALNUM, 8))
    add(
        "jenkins-initial-admin-password",
        "Please use the following password to proceed to installation:\n\n{s}\n\nThis may also be found at: x",
        r("0123456789abcdef", 32),
    )
    add("app-password-in-prose", "my gmail app password is {s}, set up SMTP with it", r("abcdefghijklmnopqrstuvwxyz", 16))
    add("login-pair-in-prose", "remember the staging login is admin / {s}", "Kd8fQ" + r(ALNUM, 7))
    add("login-pair-in-prose", "username and password are root/{s}", "Zq4" + r(ALNUM, 9))
    # The same attack's forms left over, and a review's (2026-12-07, the sixteenth session)
    add("token-name-assignment", "GH_PAT={s}", r(ALNUM, 40))
    add("token-name-assignment", "ADO_PAT: '{s}'", r(LOWER + DIGITS, 52))
    add("token-name-assignment", '"containerEnv": {{ "GH_PAT": "{s}" }}', r(ALNUM, 36))
    add("token-name-assignment", "JIRA_PAT={s}", r(B64, 40))
    add("token-name-assignment", "ADO_PAT ?= {s}", r(ALNUM, 36))
    add("token-name-assignment", "APP_SALT={s}", r(ALNUM, 16) + "Q7")
    add("token-name-assignment", 'export BW_SESSION="{s}"', r(B64, 86) + "==")
    add(
        "seed-phrase",
        'new HDWalletProvider("{s}", url)',
        "legal winner thank year wave sausage worth useful legal winner thank yellow",
    )
    add(
        "seed-phrase",
        'const words = "{s}";',
        "letter advice cage absurd amount doctor acoustic avoid letter advice cage above",
    )
    add(
        "seed-phrase",
        "my seed phrase is {s}. Store it offline",
        "gallery rain budget orphan velvet lunar ripple cousin tent anchor mystery fold",
    )
    # a second review's
    add(
        "wallet-private-key-in-prose",
        "my wallet address is 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23 and the private key is 0x{s}",
        r(HEX, 64),
    )
    add("wallet-private-key-in-prose", "private key (hex): 0x{s}. Its hash is irrelevant.", r(HEX, 64))
    add("token-name-hex", "APP_SALT={s}", r(HEX, 16) + "a1")
    add("token-name-assignment", "GH_PAT_2={s}", r(ALNUM, 36))
    add("bitwarden-session-flag", "$ bw list items --session {s}", r(B64, 86) + "==")
    add("mongo-auth-password", 'db.auth(username, "{s}")', "Mg2" + r(ALNUM, 10))
    add("mongo-auth-password", 'db.auth("admin", "{s}")', "Xk9m'" + r(ALNUM, 8))
    add("seed-phrase", "my wallet words: {s}", "LEGAL WINNER THANK YEAR WAVE SAUSAGE WORTH USEFUL LEGAL WINNER THANK YELLOW")
    add(
        "seed-phrase",
        "{s}",
        '["gallery", "rain", "budget", "orphan", "velvet", "lunar", "ripple", "cousin", "tent", "anchor", "mystery", "fold"]',
    )
    add(
        "seed-phrase",
        "restore it with {s} tonight",
        "gallery-rain-budget-orphan-velvet-lunar-ripple-cousin-tent-anchor-mystery-fold",
    )
    add(
        "mnemonic-assignment", 'MNEMONIC="{s}"', "gallerry rain budget orphan velvet lunar ripple cousin tent anchor mystery fold"
    )
    # a third review's: a bare comma, a column's padding (checked by BIP39's checksum where a list's gap stands)
    add(
        "seed-phrase",
        "my recovery phrase is {s}",
        "legal, winner, thank, year, wave, sausage, worth, useful, legal, winner, thank, yellow",
    )
    add(
        "seed-phrase",
        "{s}",
        "legal   winner   thank     year\nwave    sausage  worth     useful\nlegal   winner   thank     yellow",
    )
    add("wallet-private-key-in-prose", "I sent ETH to the new address, my private key is 0x{s}", r(HEX, 64))
    add("wallet-private-key-in-prose", "wallet address looks fine but the private key 0x{s} won't import", r(HEX, 64))
    add("mongo-auth-password", "db.auth('admin', '{s}')", "Mg0" + r(ALNUM, 10))
    add("mongo-auth-password", 'db.getSiblingDB("admin").auth("root", "{s}")', "correct" + r(LOWER, 5))
    add("mongo-auth-password", 'client.admin.authenticate("u", "{s}")', "Mg1" + r(ALNUM, 9))
    add("wallet-private-key-in-prose", "my metamask private key is 0x{s}, import it", r(HEX, 64))
    add("wallet-private-key-in-prose", "the private key for my new hot wallet is now {s}", r(HEX, 64))
    add("wallet-private-key-in-prose", "use this private key 0x{s} for the deploy", r(HEX, 64))
    add(
        "wallet-private-key-in-prose",
        "the private key for the hot wallet is {s}",
        "K" + r("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 51),
    )
    add(
        "bip32-extended-private-key",
        "restore from {s}",
        "xprv9s21" + r("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 103),
    )
    # Tools an agent's code calls, known by their prefix (an outside attack found them in clear pasted alone, in
    # prose, in a constructor), and a Telegram bot's token wherever it stands
    add("ai-tool-keys", "{s}", "tvly-" + r(ALNUM, 32))
    add("ai-tool-keys", "my tavily key is {s}", "tvly-dev-" + r(ALNUM, 32))
    add("ai-tool-keys", "JINA key {s} for the reranker", "jina_" + r(ALNUM, 60))
    add("ai-tool-keys", "LlamaParse(api_key='{s}')", "llx-" + r(ALNUM, 48))
    add("ai-tool-keys", "nvidia: {s}", "nvapi-" + r(URLSAFE, 64))
    add(
        "ai-tool-keys",
        "Langfuse(secret_key='{s}')",
        "sk-lf-" + hex_uuid(),
    )
    add("ai-tool-keys", "my elevenlabs key is {s}", "sk_" + r(HEX, 48))
    add("ai-tool-keys", "e2b {s}", "e2b_" + r(HEX, 40))
    add("ai-tool-keys", 'FirecrawlApp(api_key="{s}")', "fc-" + r(HEX, 32))
    add("ai-tool-keys", "new Resend('{s}')", "re_" + r(ALNUM, 8) + "_" + r(ALNUM, 24))
    add("ai-tool-keys", "runpod key {s}", "rpa_" + r(UPPER + DIGITS, 44))
    add("ai-tool-keys", "render api key {s}", "rnd_" + r(ALNUM, 32))
    add("ai-tool-keys", "browserbase: {s}", "bb_live_" + r(URLSAFE, 27))
    add("ai-tool-keys", "sonar token {s}", "sqp_" + r(HEX, 40))
    add("ai-tool-keys", "BLOB_RW {s}", "vercel_blob_rw_" + r(ALNUM, 16) + "_" + r(ALNUM, 30))
    add("ai-tool-keys", "mapbox secret {s}", "sk.eyJ1" + r(URLSAFE, 60) + "." + r(URLSAFE, 22))
    add("telegram-bot-token-bare", 'bot = telebot.TeleBot("{s}")', r(DIGITS, 10) + ":AA" + r(URLSAFE, 33))
    # Keys of more services by their shape (reported in clear by an outside attack)
    add("service-keys-by-shape", "voyageai.Client(api_key='{s}')", "pa-" + r(URLSAFE, 43))
    add(
        "service-keys-by-shape",
        'os.environ["FAL_KEY"] = "{s}"',
        hex_uuid() + ":" + r(HEX, 32),
    )
    add("service-keys-by-shape", "npx convex deploy --cmd-url-env-var-name X with {s}", "prod:happy-otter-123|" + r(ALNUM, 64))
    add(
        "service-keys-by-shape",
        "braintree.BraintreeGateway(access_token='{s}')",
        "access_token$production$" + r(LOWER + DIGITS, 16) + "$" + r(HEX, 32),
    )
    add("service-keys-by-shape", "az devops login, then paste {s}", r(ALNUM, 76) + "AZDO" + r(ALNUM, 4))
    add("service-keys-by-shape", "libhoney.init(writekey: {s})", "hcaik_" + r(LOWER + DIGITS, 58))
    add("service-keys-by-shape", "curl -H 'X-Honeycomb-Team: {s}' https://api.honeycomb.io/1/events/ds", r(ALNUM, 32))
    # Positional secrets of CLI commands, an Ethereum key in code (an outside attack)
    add("cli-positional-secret", "wandb login {s}", r(HEX, 40))
    add(
        "cli-positional-secret",
        "snyk auth {s}",
        hex_uuid(),
    )
    add("cli-positional-secret", "cargo login {s}", "cio" + r(ALNUM, 32))
    add("cli-positional-secret", "npm config set //registry.npmjs.org/:_authToken {s}", "npm_" + r(ALNUM, 36))
    add("cli-positional-secret", "mc alias set myminio https://minio.internal:9000 admin {s}", r(ALNUM, 24))
    add("cli-positional-secret", "poetry config http-basic.private deploy {s}", r(ALNUM, 20))
    add(
        "cli-positional-secret",
        "bash <(curl -s https://codecov.io/bash) -t {s}",
        hex_uuid(),
    )
    add("cli-positional-secret", "npx @vscode/vsce publish minor -p {s}", r(ALNUM, 52))
    add("cli-positional-secret", "twine upload -u deploy -p {s} dist/*", r(ALNUM, 16))
    add("cli-positional-secret", "vsce publish --pat {s}", r(ALNUM, 52))
    add(
        "cli-positional-secret",
        "codecov upload-process -f coverage.xml -t {s}",
        hex_uuid(),
    )
    add("cli-positional-secret", "npx @vscode/vsce@latest publish -p {s}", r(ALNUM, 52))
    add("cli-positional-secret", "poetry config http-basic.private deploy {s}", "CORRECTHORSEBATTERYSTAPLE")
    add("eth-private-key-in-code", 'const wallet = new ethers.Wallet("{s}", provider)', "0x" + r(HEX, 64))
    add("eth-private-key-in-code", "accounts: ['{s}'],", "0x" + r(HEX, 64))
    add("eth-private-key-in-code", "forge script Deploy --private-key {s} --broadcast", r(HEX, 64))
    # A key named in prose by words the other rules do not know (an outside attack)
    add("key-in-prose", "my key is {s}", r(ALNUM, 32))
    add("key-in-prose", "the secret is {s}", r(ALNUM, 40))
    add("key-in-prose", "my mistral key is {s}, can you wire it up?", r(ALNUM, 32))
    add("key-in-prose", "use this token {s}", r(ALNUM, 36))
    add("key-in-prose", "new key: {s}", r(ALNUM, 32))
    add("key-in-prose", "API Key\n{s}", r(ALNUM, 32))
    add("key-in-prose", "Here's my Mistral key:\n```\n{s}\n```", r(ALNUM, 32))
    add(
        "telegram-bot-token-bare",
        "Use this token to access the HTTP API:\n{s}\nKeep your token secure",
        r(DIGITS, 9) + ":AA" + r(URLSAFE, 33),
    )
    return out


FAKES = _fakes()

# Text that looks a little like a credential but is not one: hashes, UUIDs,
# base64 images, lock-file integrity strings, code that names a secret.
BENIGN = [
    # look-alikes of positional secrets and Ethereum keys (the twentieth session)
    "wandb login --relogin",
    "cargo login --registry my-registry",
    "npm config set //registry.npmjs.org/:_authToken ${NPM_TOKEN}",
    "mc alias set myminio https://minio.internal:9000 admin $MINIO_SECRET",
    "the tx hash is 0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060",
    "block 0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6 was mined",
    # look-alikes of a key named in prose (the twentieth session)
    "Primary key\ncustomer_id_and_invoice_number",
    "the token\nHelloWorldControllerFactoryBean\nis a class",
    "Generated token\n3f2a9c1b7d4e5f60a1b2c3d4e5f6a7b8",
    "The secret:\nkeep functions small and focused on one thing",
    "sort by key\nMyComponentName2024Version is next in the list",
    "the key is to keep functions small and focused on one thing",
    "the cache key is invoice:pdf:2024-01-15:customer42",
    "the request key is 3f2a9c1b7d4e5f60a1b2c3d4e5f6a7b8",
    "my key is the one on the keyring next to the door",
    "the primary key is customer_id_and_invoice_number_together",
    "the token is TOKEN_EXPIRED_PLEASE_LOGIN_AGAIN_NOW",
    "that secret is stored in SOPS_ENCRYPTED_FILE_PATH_VARIABLE",
    "the key is HelloWorldControllerFactoryBean",
    # look-alikes of the services' shapes (the twenty-first session)
    "We upload coverage to codecov, then docker build -t myorg/backend:latest .",
    "run codecov and docker build -t myorg/backend:latest .",
    "codecov step: pytest -x -t tests/integration_tests",
    "vsce publish and docker run -p 3000:3000 web",
    "- run: pip install codecov && docker build -t ghcr.io/acme/shop:latest .",
    "python -m build && twine upload dist/* && docker run -p 8080:8080 shop",
    "brew install codecov; tmux new -t development-session",
    "set to false; cache entry 1a2b3c4d-0000-1111-2222-333344445555:eeaeda979d008123ace9725dc568cc9b",
    'const id = "pa-3f9a2c1e-1111-2222-3333-deadbeefdeadbeefdeadbeef"',
    "licenseKey: 'GPL-3.0-or-later'",
    'license_key = "Apache-2.0"',
    "codecov -t ${{ secrets.CODECOV_TOKEN }}",
    "codecov -t -f coverage.xml",
    "vsce publish -p $VSCE_PAT",
    "twine upload dist/* -p <your-password>",
    "twine upload --help shows -p PASSWORD, --password PASSWORD",
    "the deployment prod:happy-otter-123 serves the shop",
    "X-Honeycomb-Team: ${HONEYCOMB_API_KEY}",
    "the fal request id is 1a2b3c4d-0000-1111-2222-333344445555",
    '<div class="pa-4 pa-md-8 pa-lg-12 ma-2">',
    "access_token$production$ is how Braintree names its tokens",
    "falls back to 9f86d081-884c-4d63-9a2f-c7a0bfe2c8a5 when none is set",
    # look-alikes of the tool keys' prefixes (the twentieth session)
    "re_compile_the_pattern_once_and_reuse_it_everywhere",
    "re_validate_user_input_fields_before_saving",
    "the class pa-4 ma-2 adds padding",
    "sk_live is Stripe's prefix, sk_test its test one",
    "fc-column-header-cell-renderer-wrapper",
    "jina_embeddings_v3_model_name_for_long_context_usage",
    "rnd_seed_for_the_shuffle_in_tests",
    "the time is 12:30:AA and the port 8080:AAAA",
    # look-alikes of the sixteenth session's forms, and a review's
    "the private key is stored in ~/.ssh/id_ed25519",
    "private_key: ${PRIVATE_KEY}",
    "private key = load_pem_private_key(data, None)",
    "PASSWORD_SALT=bcrypt",
    "TMUX_SESSION=work1",
    "USE_PAT=true",
    "PR_PAT=${{ secrets.PR_PAT }}",
    "private_key_path: /etc/ssl/private/site.key",
    "db.auth(user, pwd)",
    "db.auth('admin', passwordPrompt())",
    'db.auth("reportUser", "SCRAM-SHA-256")',
    "the private key is the one in 1password",
    "the ed25519 public key for this private key is d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    "the Taproot x-only pubkey of the private key is 79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798",
    "the SHA-256 hash of the private key is 3f5a8c0e9d1b2a4c6e8f0a1b3c5d7e9f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d",
    'private_key: "0000000000000000000000000000000000000000000000000000000000000001"',
    "DEFAULT_PAT = DEFAULT_FILENAME_PATTERN",
    "_CAMEL_PAT = CamelCaseIdentifierPattern",
    'IDENT_PAT = "identifier_pattern_value"',
    'HEX_PAT = "0123456789abcdefABCDEF"',
    "GH_PAT=YourPersonalAccessTokenHere",
    "ADO_PAT=REPLACE_WITH_YOUR_PAT_TOKEN_123",
    "HASH_SALT=sha512crypt",
    "CACHE_SALT=release-2024.06.01",
    "ASSET_SALT=build20240601",
    'public static final String MNEMONIC = "invokevirtual";',
    'MNEMONIC = "dup_x1"',
    "MNEMONIC_PATH=\"m/44'/60'/0'/0\"",
    "The zoo has a lion, a tiger and an elephant; we walk past the river every day in summer.",
    "Animals: cat, dog, horse, lion, tiger, zebra, monkey, rabbit, mouse, snake, eagle, whale.",
    # a long list of the word list's own words: some window of it carries the checksum by chance (a reread)
    ", ".join(
        ["abandon", "ability", "able", "about", "above", "absent", "absorb", "abstract", "absurd", "abuse"] * 2
        + ["access", "accident", "account", "accuse", "achieve", "acid", "acoustic", "acquire", "across", "act"] * 2
    ),
    "- Apple\n- Banana\n- Cherry\n- Orange\n- Lemon\n- Grape\n- Melon\n- Peach\n- Tomato\n- Potato\n- Onion\n- Garlic",
    "Shopping list:\n1. Milk\n2. Bread\n3. Butter\n4. Cheese\n5. Apple\n6. Banana\n7. Orange\n8. Lemon\n9. Coffee\n10. Sugar\n11. Salt\n12. Pepper",
    "EXCLUDE_PAT=node_modules/some-package/dist",
    "ROUTE_PAT=/api/v1/users/profile-image",
    "BRANCH_PAT=release/2024-q3-hotfix-branch",
    'MNEMONIC: "mov rax, qword ptr [rbp-8]"',
    "the SHA-256 hash of the private key is 3f5a8c0e9d1b2a4c6e8f0a1b3c5d7e9f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d and nothing else",
    "word list: abandon ability able about above absent absorb abstract absurd abuse (ten of them)",
    "orchard orchard orchard orchard orchard orchard orchard orchard orchard orchard orchard orchard orchard",
    "build test run build test run build test run build test run build test run",
    '_INIT_FACTORY_PAT = "__attr_factory_%s"',
    "URL_PAT = r'^https?://[a-z0-9.-]+/[a-z_]+$'",
    "    private_key: PKCS7PrivateKeyTypes,",
    "the private key's sha256 is 3f5a8c0e9d1b2a4c6e8f0a1b3c5d7e9f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d in the audit log",
    "log in with password authentication enabled",
    "use the pass: true flag",
    "send them password reset links with password expiry",
    "(password required)",
    "db.pass=${DB_PASS}",
    "the render pass: 'shadow'",
    "the app password is required",
    "using the pw manager",
    "self.pwd = os.getcwd()",
    "this.pwd = process.cwd();",
    "this.pass = pass;",
    "spring.datasource.pwd=@db.pwd@",
    "mail.smtp.pass=SMTP_PASSWORD_ENV",
    "The credentials are read from env: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY",
    "Login: api/v1/auth",
    "The login endpoint is auth/token/refresh-v2",
    "login uses: passport, passport-local2",
    "Use OAuth with password grant-type flows.",
    "Authenticate with password grant_type=password",
    "Protect the PDF with password AES-256",
    "ssh in with password PasswordAuthentication=no",
    "using the second pass LightingPass2",
    "(pass ShadowPass2)",
    "The app password is what lets your mail client sign in.",
    "the app password is internationalized",
    "{ pass: 'required|min:8' }",
    'jobs: { pass: "build-2.0x" }',
    "the login page is /auth/login and the logout is /auth/logout",
    "login: user/settings, then credentials: see the auth page",
    "my bank login page is https://paypal.com/login",
    "CREDENTIALS_HOST=db.internal:5432 CREDENTIALS_SERVER=vault:8200 HTTP_AUTH_TYPE=basic:digest",
    "CREDS_IMAGE=ghcr.io/acme/creds:latest",
    "Rate limit: 5 attempts per password per IP: 10/min",
    "pw: Base64-encoded; pw → Argon2id-hashed; pw: Python3-compatible; pw: Node18-alpine; pw: OAuth2-only",
    "The password format is base64-encoded; The password offset is 0x1F4A2B",
    "The password form is React-hook-form-based",
    # A review's: what the new prose, query, pair and Wi-Fi rules took that holds no secret
    "The default token is GITHUB_TOKEN, provided by Actions.",
    "the CSRF token is X-CSRF-Token; This token is HMAC-SHA256 signed.",
    "the session token is UUIDv4-based",
    "use argon2id as the password hashing algorithm",
    "password (env): POSTGRES_PASSWORD",
    "password -> POSTGRES_PASSWORD and PASSWORD -> PBKDF2-SHA256",
    "Rotate the password to v2-format",
    "let pw = Password::new(&input)?;",
    "img.png?pw=1280&ph=720",
    "DOCKER_CREDS=registry.example.com:5000/v2/token",
    "HTTP_AUTH: basic:realm=staging",
    "?next=/&pass=reset_flow",
    "usage: wpa_passphrase <ssid> [passphrase]",
    "La parola chiave è `async_await`",
    'Translate "parola" to English: geslo to Slovenian: NotSure',
    "heslo je správné, la password è obbligatoria, şifre: required",
    "BASIC_AUTH=https://example.com/path and USE_BASIC_AUTH=true",
    "GOOGLE_APPLICATION_CREDENTIALS=/home/ben/key.json",
    # What a person says about passwords and tokens without giving one.
    "I changed the password validation to use zxcvbn",
    "changed the password policy to min_length=12",
    "the password for the db is in 1Password",
    "the token is stored in ~/.config/gh/hosts.yml",
    "password -> hashed with argon2id",
    "use bcrypt as the password hasher",
    "the password for staging is in the vault under secret/staging/db",
    "set PASSWORD to ${DB_PASSWORD}",
    "password (optional): str",
    "the CSRF token is generated per session",
    # Look-alikes of the query's pass=, sudo's here-string and wpa_passphrase's argument.
    "sudo pacman -S vim <<< y",
    "sudo -S apt update <<< $PASS",
    'sudo -S cmd <<< "$(cat pw.txt)"',
    "wpa_passphrase HomeNet < pw.txt",
    "?page=2&pass=true and ?mode=pass&psk=required",
    "https://x/?a=1&pass=%PASSWORD%",
    "WIFI_PSK=${WIFI_PSK}",
    # public blocks printed whole, help texts, templates, and what a label in another language points to
    "-----BEGIN CERTIFICATE-----\n" + "\n".join(r(B64, 64) for _ in range(6)) + "\nQQ==\n-----END CERTIFICATE-----\n",
    "gpgsig -----BEGIN PGP SIGNATURE-----\n \n " + "\n ".join(r(B64, 64) for _ in range(5)) + "\n -----END PGP SIGNATURE-----",
    "  --db-password DB_PASSWORD\n                        database password",
    "  --password Password   Password for authentication",
    'cmd = f"pg_dump --password {db_password} --host {host}"',
    "Das Passwort ist: user.password_hash",
    "密码：getPassword()",
    "Passwort: (leer)",
    "パスワードはdocker-compose.ymlに記載されています",
    "密码：见README.md",
    "Das Passwort steht in der Datei: config/secrets.yml",
    '<param name="maxToken" value="2048"/>',
    '<input name="next_page_token" value="CAoQAA">',
    # options that name no value, labels with none, markup naming no secret
    "docker login --password-stdin < token.txt",
    "gpg --batch --passphrase-file key.txt --decrypt a.gpg",
    "the --password option is required; pass it as --password",
    "rsync --pass-through mode is off",
    "contraseña: requerida",
    "Passwort: siehe 1Password",
    '<env name="APP_ENV" value="testing"/>',
    '<input type="password" name="pw" value="">',
    # a git hash beside a key id is no secret (aws-secret-near-id wants three character classes)
    "rotated AKIAZ7Q3W5E2R4T6Y8U1 in commit 3f2a9c1e0b7d4a6f8e2c1b0a9d8e7f6c5b4a3f2e yesterday",
    # a twenty-fourth review's look-alikes: a list of field names, messages about a password, a tokenizer's setting,
    # an identifier that starts like a prefixed token, a variable that starts with `$`
    'fields = ["password", "username"]',
    'sensitive_attributes = ["password", "master_password"]',
    "CREATE VIRTUAL TABLE x USING fts5(body, tokenize='porter unicode61')",
    'tokenizer_name = "bert-base-uncased"',
    '"tokenizer": "meta-llama/Llama-2-7b-hf"',
    "phx_component_renderer_for_layouts = render",
    '{"password": "$DB_PASSWORD"}',
    "DB_PASSWORD='${DB_PASSWORD}'",
    "https://git@github.com/org/repo.git",
    "password_hash       varchar(255)",
    "token_expires_at   timestamp",
    "Key                Value\n---                -----\ntoken_ttl          768h",
    "password           ********",
    # a review's look-alikes: columns of SQL and Go, a file listing, a URL beside a name, Node-API calls,
    # CloudFormation's tags, long user names in URLs, a form's label
    "    password_hash  varchar(255),",
    # a fourth review's look-alikes: variables in PHP, PowerShell, Perl and shell, plist and Android idioms, vault's
    # accessor, a kubectl secret's name, nginx's file, long user names in clone URLs, a GCP secret's path, ENV words
    "$this->password = $password;",
    "$password = $_POST['password'];",
    "$env:ARM_CLIENT_SECRET = $sp.PasswordCredentials.SecretText",
    "my $DB_PASSWORD = $ENV{'DB_PASSWORD'};",
    "export DB_PASSWORD=$DB_PASS; ./run.sh",
    "<key>API_KEY</key><string>$(API_KEY)</string>",
    '<string name="label_password">Password:</string>',
    '<string name="label_password">Contraseña</string>',
    "<property name=\"password\">#{systemProperties['db.password']}</property>",
    "token_accessor       8609694a-cdbc-db9b-d345-e782dbb562ed",
    "│ access_token │ Optional[str] │",
    "default-token-x7k2p       kubernetes.io/service-account-token",
    "ssl_password_file    /etc/nginx/ssl/global.pass;",
    "https://myorganizationname2024@dev.azure.com/myorganizationname2024/Project/_git/Repo",
    "token: projects/my-proj/secrets/db-password/versions/latest",
    "ENV JWT_SECRET_KEY HS256",
    'os.getenv("API_TOKEN", "default_value")',
    "ENV CLIENT_SECRET client-secret-from-vault",
    "ENV APP_KEY base64:${APP_KEY}",
    '{"kty": "RSA", "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw", "e": "AQAB"}',
    "Microsoft.Extensions.DependencyInjection.Abstractions.ServiceCollection",
    # a third review's look-alikes: settings whose name goes on past the secret's word, Android's labels, Go fields,
    # SQL in capitals, paths and files where ENV gives a key's name
    'os.getenv("TOKEN_URL", "https://oauth2.googleapis.com/token")',
    'os.getenv("PASSWORD_HASHER", "argon2")',
    'headers.get("X-Auth-Token", "anonymous")',
    '<string name="action_forgot_password">Forgot?</string>',
    '<item name="passwordToggleTint">@color/gray</item>',
    '<property name="passwordEncoder">BCrypt</property>',
    "set -x SSH_KEY ~/.ssh/id_ed25519",
    "ENV SORT_KEY created_at",
    "ENV HF_TOKEN hf_file.txt",
    "  password   VARCHAR(255),",
    "\tPassword  *PasswordConfig",
    "\tsecrets   *[]string",
    # a second review's look-alikes: Django's field lists, messages that name the secret's kind, calls with no
    # secret beside the name, a Go field, a list in a table
    'fields = ("username", "password1", "password2")',
    'fields = ("old_password", "new_password1", "new_password2")',
    'os.getenv("DB_PASSWORD", "")',
    'os.environ.get("API_TOKEN", "changeme")',
    'request.form.get("password", "default")',
    "ssh://jenkins-deploy-user-2024@build.example.com/repo.git",
    "MasterUserPassword: !Ref DBPassword",
    '<string name="password_hint">@string/hint</string>',
    '<property name="db.password">${DB_PASSWORD}</property>',
    "ENV DB_PASSWORD_FILE /run/secrets/db_password",
    "set -x GITHUB_TOKEN $GITHUB_TOKEN",
    "<key>NSFaceIDUsageDescription</key>\n<string>Unlock with Face ID</string>",
    "    api_token      varchar(64),",
    "\taccessToken  *oauth2.Token",
    "\ttokenSource  oauth2.TokenSource",
    "    Secrets      map[string]string",
    "token_policies      [default]",
    "secrets.py        docker-compose.yml",
    "token_endpoint     https://oauth2.googleapis.com/token",
    "napi_create_string_utf8(env, str, len, &result)",
    "MasterUserPassword: !Ref DBPassword",
    "MasterUserPassword: !ImportValue shared-db-password-v2",
    "https://fabrikam-fiber-engineering@dev.azure.com/org/proj/_git/repo",
    "postgresql://analytics_service_account@db.internal:5432/analytics",
    "  token: ${{ secrets.NPM_TOKEN }}",
    "next_page_token: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    '[{"name":"APP_MODE","slotSetting":false,"value":"production"}]',
    # look-alikes of the shapes above: a variable, a placeholder, a command's output, a name, an expression
    "curl -u $USER:$PASS https://ci.example.com/api",
    "curl -u admin:changeme http://localhost:8080",
    "kubectl --token $(cat /var/run/secrets/token) get pods",
    "vercel --token <your-token> deploy",
    "gh run --secret my-secret-name-here",
    "netlify deploy --auth $NETLIFY_AUTH_TOKEN",
    "Authorization: Required for every endpoint listed below",
    "The Authorization header carries the scheme and the credentials.",
    '<property name="password" value="${db.password}"/>',
    "api_key: ${DATADOG_API_KEY}",
    "api_key=os.environ['DATADOG_API_KEY']",
    "see the #access_token section of the guide",
    "ACCESSKEY\tStatus\tUserName",
    "by default password authentication is disabled and should stay so",
    "  apiKey: process.env.OPENAI_API_KEY,",
    "const client = new OpenAI({ apiKey: import.meta.env.VITE_KEY });",
    # a twenty-first review's look-alikes: URLs with `@` that hold no password, isql in prose, session ids
    "smtp://me@gmail.com:587/x",
    "https://user@host/p?email=a@b.com&x=c@d",
    "git+ssh://git@github.com:org/repo.git",
    "http://localhost:8080/users/@me@x",
    "isql is a tool that connects to a data source",
    "isql MyDSN sa $ODBC_PW",
    'sqlcmd -S db -Q "a;b" ; echo -P notit',
    '{"session_id": "9b2c1f0e-6a7d-4e8f-9a0b-1c2d3e4f5a6b", "session_type": "interactive_long_running"}',
    '{"sessionStorage": "/var/lib/app/sessions", "sso": "https://sso.example.com/login/start"}',
    '{"Sid": "AllowReadOnlyAccessEC2Resource2024", "Effect": "Allow"}',
    '"TrafficMirrorSessionId": "tms-0567a4c684abcdef0123",',
    '"AwsGlueSessionUserRestrictedPolicy": "arn:aws:iam::aws:policy/AwsGlueSessionUserRestrictedPolicy",',
    '"Auth": "Configure authentication, see https://docs.aws.amazon.com/serverless-application-model/latest/x.html"',
    # an eighteenth review's look-alikes: the same tools without a secret in their line
    "sqlplus -s / as sysdba",
    "sqlplus /nolog @scripts/run.sql",
    "expdp parfile=conf/exp.par",
    "sqlplus scott@orcl @scripts/setup.sql",
    "CREATE USER scott IDENTIFIED BY VALUES 'S:ABC';",
    "CREATE USER ops$alice IDENTIFIED EXTERNALLY;",
    "ALTER USER app IDENTIFIED BY :new_pw;",
    "ALTER USER app IDENTIFIED BY :new_pw REPLACE :old_pw;",
    "ALTER USER app IDENTIFIED BY $NEW_PW REPLACE $OLD_PW;",
    "Each tenant is identified by name replace spaces with dashes in it",
    "jdbc:oracle:thin:@//db:1521/ORCL",
    "jdbc:oracle:thin:${DB_USER}/${DB_PASSWORD}@db:1521:ORCL",
    "a 100% fine &amp; plain text, 50%off, %2Fusr&#47;bin and C:\\new\\test",
    "DB_PASSWORD=false",
    "password: null",
    "> AUTH is required before any command",
    "AUTH failed: WRONGPASS invalid username-password pair",
    "redis-cli --askpass -h cache",
    'sqlcmd -S db -E -Q "select 1"',
    "sqlcmd -S db -U sa -P $SA_PASSWORD",
    "Invoke-Sqlcmd -ServerInstance db -Password $pw",
    "Invoke-Sqlcmd -ServerInstance db -Query 'select 1'",
    "gpg --batch --passphrase-file keys/pass.txt -d f.gpg",
    "gpg --passphrase-fd 0 -d f.gpg",
    "oc login --token=$(cat tok) https://api:6443",
    "rdesktop -u alice host",
    "nmcli dev wifi connect Home --ask",
    "lftp -u alice sftp://host",
    "net use Z: \\\\srv\\share /user:alice *",
    "echo $PASS | sudo -S apt-get update",
    "echo hello | sudo tee /etc/motd",
    "ipmitool -I lanplus -H bmc -U admin -E power status",
    "snmpwalk -v2c -c public host",
    "smbclient -L //srv -U alice",
    "xfreerdp /v:host /u:alice /p:$PW",
    'hash = password("Enter your password")',
    "jf rt u build/ repo/ --flat",
    "the isql tool and the bcp utility ship with SQL Server",
    "sqlplus handles input/output fine",
    'f"sqlcmd -S {server} -U {user} -P {password}"',
    'cursor.execute(f"CREATE USER {username} IDENTIFIED BY {password}")',
    "sqlcmd -S db -U sa -P (Get-Content pw.txt)",
    "smbclient //files/share -U {user}%{pw}",
    "7z x -p{password} backup.7z",
    "hydra -L users.txt -P passwords.txt ssh://host",
    "rdesktop -u bob -P winserver.corp.local",
    "wget https://example.com/archive/main.zip -P ./vendor",
    'docker run -v "$PWD/out.zip:/out.zip" -P nginx:latest',
    "openssl enc -d -in backup.7z -out backup.tar -passin env:PW",
    "az login --service-principal -u $APP_ID -p ~/certs/sp.pem --tenant contoso",
    "nmcli -s -g 802-11-wireless-security.psk connection show HomeNet",
    "net use X: https://webdav.example.com/dav /user:bob",
    "Our rman backups/archivelogs are stored on NFS.",
    "With redis-cli you need to send AUTH first",
    "smtp.example.com:25> AUTH PLAIN",
    "mail.example.com> AUTH LOGIN",
    "if form.password == password('confirm'):",
    "gpg: Support --passphrase with --quick-gen-key.",
    "127.0.0.1:6379> AUTH default",
    "lftp -u anonymous,guest@example.com ftp://ftp.example.com",
    "grant access to users identified by their email",
    "syn include @SQL syntax/sql.vim",
    "Yet another simple Postgres SQL parser/modifier",
    "to allow grantee to write the ACL. Grantee identified by account email",
    "https://registry.npmjs.org:443/@scope/pkg",
    "http://localhost:8080/users/@me",
    "jdbc:mysql://db:3306/shop?user=app@example.com",
    "curl http://host:port/api/@me",
    "open http://localhost:${PORT}/@vite/client",
    "http://[::1]:4873/@scope%2fpkg",
    "pip install --index-url https://user:pass@pypi.example.com/simple pkg",
    "scheme://[[user][:pass]@]host[:port]/path",
    "net use Z: \\\\fileserver\\share /user:CORP\\bob /persistent:yes",
    "open -u https://example.com/search?q=red,green,blue",
    "connect tcp/udp as needed",
    "conn client/server",
    "new_password = password('confirm')",
    "ALTER USER x IDENTIFIED BY certificate",
    '{"name": "OAUTH_GRANT_TYPE", "value": "authorization_code"}',
    '{"name": "AUTH_BACKEND", "value": "OpenIDConnectBackend"}',
    '{"name": "sidebar_component", "value": "NavigationSidebarWide"}',
    "Cookie: session=${SESSION_TOKEN_VALUE_X}",
    'case "cookie": value = require_helper_cookie_index.getCookie(c);',
    "Send Cookie: theme=dark; lang=en and then see the internationalization notes for the rest",
    "!function(){var a={cookie:t.cookie},b=window.addEventListener;c=1}",
    "Cookie: sessionid=YOUR_SESSION_ID_HERE",
    'echo "vim git curl" | sudo xargs pacman -S --noconfirm',
    "printf 'y\\ny\\n' | sudo pacman -S base-devel",
    '{"name": "Cookie", "value": "theme=dark-mode-enabled-v2"}',
    '{"name": "session_timeout", "value": "3600"}',
    '{"name": "auth_method", "value": "oauth2-authorization-code"}',
    '{"name": "auth_callback", "value": "https://example.com/accounts/callback"}',
    'document.cookie = "theme=dark; path=/";',
    "cookies={'lang': 'en-US'}",
    # a seventeenth review's look-alikes: the forms the new rules read, without a secret in them
    "wget --password-file=~/.wgetpass https://files.example.com/a.tgz",
    "mysql --password shop < dump.sql",
    "keytool -list -keystore a.p12 -storepass:env STOREPASS",
    "mongosh --host db -u admin -p --authenticationDatabase admin",
    "CREATE USER bob WITH PASSWORD '$DB_PASSWORD';",
    "Load and return a dynamic library identified by 'name'.",
    "ALTER USER app PASSWORD :'new_password';",
    "# requirepass foobared",
    "docker run -d --name mongo -p 27017:27017 mongo:7",
    'Each user is identified by "user_id" in the payload',
    'The login form needs a password "field" with autocomplete',
    "mongosh --port 27017 -p 27017",
    "cd services/mongo && mkdir -p data/db",
    "mongosh --host localhost -p 27017",
    "ldapsearch -x -H ldap://localhost -b dc=example,dc=org -W cn=admin",
    "keytool -list -keystore cacerts -storepass changeit",
    "secret: >\n  the name of the Kubernetes secret that holds the TLS certificate",
    "requirepass yes is needed before masterauth works",
    "see https://developers.google.com/identity/protocols/oauth2 for ya29 tokens",
    "the Stripe docs call it whsec_... in the dashboard",
    "set OPENROUTER_API_KEY to your sk-or-v1-... key",
    "the groq docs show gsk_... keys and xai- prefixed ones",
    "a branch named sk-0123456789abcdef and a task-sk-learn-notes",
    "uuid sk-00000000000000000000000000000000 is a placeholder",
    "| AccessKeyId | AKIAIOSFODNN7EXAMPLE |",
    'psk="$WIFI_PSK"',
    "password: |\n  {{ vault_db_password }}\n",
    '{"headers": {"Cookie": "theme=dark"}}',
    'docker login -u ci -p "$REGISTRY_TOKEN" registry.example.com',
    "mysql -u root -p shop   # asks for the password",
    "[server]\npass = true\n",
    "<password></password> stays empty in the sample config",
    "token: str",
    '{"name": "sort_key", "value": "created_at"}',
    "  const password = process.env.DB_PASSWORD;",
    "htpasswd -b /etc/nginx/.htpasswd admin password",
    'echo "$REGISTRY_TOKEN" | docker login -u ci --password-stdin registry.example.com',
    'setx JAVA_HOME "C:\\Program Files\\Java"',
    "htpasswd -B /etc/nginx/.htpasswd admin",
    "export SSHPASS=$DEPLOY_PW; sshpass -e ssh deploy@host",
    'os.environ["OPENAI_API_KEY"] = os.getenv("KEY")',
    '{"name": "DB_PASSWORD", "value": ""}',
    "see https://discord.com/developers/docs/resources/webhook",
    "the docs are at http://localhost:3000/api-docs-for-the-billing-service",
    "curl http://127.0.0.1:7077/v1/messages -d @body.json",
    "password = input('Password: ')",
    "password = getpass.getpass()",
    "api_key = os.environ['OPENAI_API_KEY']",
    "SECRET_KEY = os.environ.get('SECRET_KEY')",
    "SECRET_KEY = ${SECRET_KEY}",
    "DB_PASSWORD=${DB_PASSWORD}",
    "OPENAI_API_KEY=<your key here>",
    "secret_key: <your-secret-here>",
    "STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
    "API_TOKEN=changeme",
    # settings about a secret, not the secret; YAML tags; a prose line after a secret's name
    "SECRET_PROVIDER=azure",
    "TOKEN_STORE=redis",
    "PASSWORD_HASHERS: django",
    "SECRET_KEY_BASE: required",
    "TOKEN_TYPE=bearer",
    "DbPassword: !Join ['', [!Ref Prefix, pw]]",
    "DB_PASSWORD: !Select [0, !Ref Passwords]",
    "  db_password: !unsafe '{{ foo }}'",
    "DB_PASSWORD: must be at least 8 characters",
    "password: Optional[str] = None",
    "DB_PASSWORD: {{ vault_db_password }}",
    "password={password}",
    "password=%(db_password)s",
    "secret: true",
    # C-family code assigning a variable; an ARN; settings' words
    "    password = newPassword;",
    "  pwd = optarg;",
    "  password = &buf[0];",
    "    password = await bcrypt.hash(password, 10);",
    "let x = 1; password = candidate;",
    "db_secret: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbC123",
    "TOKEN: Bearer",
    "LOG_TOKEN=DEBUG",
    # code, commands, status lines, paths to key files, placeholders
    "const API_TOKEN=process.env.API_TOKEN||'';",
    "TOKEN=`cat /run/secrets/token`",
    "  readonly GITHUB_TOKEN: string;",
    "NPM_TOKEN:=$(shell cat ~/.npmrc | grep authToken)",
    'TOKEN:=os.Getenv("TOKEN")',
    "Environment: GITHUB_TOKEN=present NPM_TOKEN=absent",
    "  API_KEY: apiKey,",
    "settings.configure(SECRET_KEY=secret, DEBUG=True)",
    "DB_PASSWORD: *default_password",
    "if DB_PASSWORD is None: raise SystemExit('set it')",
    "bypass: >-\n   some_long_text_here\n",
    '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhello world data\r\n--xyz--\r\n',
    '--xyz\r\nContent-Disposition: form-data; name="password"\r\n\r\n{{password}}\r\n--xyz--\r\n',
    "self.fw_downloadfirmwareversions = True",
    "pip/_vendor/platformdirs/version.py,sha256=qaN-fw_htIgKUVXoAuAEVgKxQu3tZ9qE2eiKkWIS7LA,160",
    "cache hit for key-d41d8cd98f00b204e9800998ecf8427e",
    'return self.post(url, {"username": username, "password": password})',
    '"password": auth[1]}',
    "`npm profile set password`: Change your password",
    "fw_cdev_get_cycle_timer2(fd, &t)",
    '--b\r\nContent-Disposition: form-data; name="max_tokens"\r\n\r\n128000\r\n--b--',
    '--b\r\nContent-Disposition: form-data; name="tokenizer"\r\n\r\ncl100k_base\r\n--b--',
    '--b\r\nContent-Disposition: form-data; name="secret_santa"\r\n\r\nAlice and Bob\r\n--b--',
    "STAGING_DB_PASSWORD was required_for_staging in the old settings",
    "TLS_PRIVATE_KEY=certs/tls.key",
    'sed -i "s/^DB_PASSWORD=.*/DB_PASSWORD=$NEW_PASS/" .env',
    'grep -q "^SECRET_KEY=" .env || echo "SECRET_KEY=$(openssl rand -hex 32)" >> .env',
    "`OPENAI_API_KEY=sk-...`",
    "NEXTAUTH_SECRET=generate-with-openssl",
    "ROOT_SECRET=kv/data/app",
    "    password: &self.password,",
    "      - POSTGRES_PASSWORD=${POSTGRES_PASSWORD:?required}",
    "MAX_TOKEN=4096",
    # a twelfth review's: constants, enums, i18n tables and special tokens under a secret's name
    'ACCESS_TOKEN = "accessToken";',
    "  REFRESH_TOKEN = 'refreshToken',",
    'SESSION_KEY = "session"',
    '"SHOW_PASSWORD": "Show"',
    'START_TOKEN = "START"',
    'SHADOW_PASS = "shadow"',
    "MAX_TOKEN=128000",
    "TOKEN = token",
    "SIGNING_KEY := release",
    "  SIGNING_KEY: CryptoKey",
    "PASSWORD = TODO",
    "    password: Optional[str] = None",
    "    secret_key: SecretStr = Field(default=...)",
    "SECRET_KEY: str = secrets.token_urlsafe(32)",
    '    credentials_file: str = "credentials.json"',
    'GOOGLE_APPLICATION_CREDENTIALS = "keys/service-account.json"',
    '#define PASSWORD_LEN "8"',
    "TESTS_PASS: 120/120",
    "secret: projects/my-proj-730/secrets/db-password/versions/1",
    "  secret:\n    secretName: db-creds",
    "secret: my-app-secret2",
    "client_secret: settings.OAUTH_CLIENT_SECRET",
    "TOKEN_TTL=3600",
    "SESSION_TOKEN_EXPIRY=15m",
    "DB_PASSWORD_FILE=/run/secrets/db_password",
    "token = self.token",
    "the tokenizer splits on whitespace",
    "reset your password in the settings page; the password is required",
    "We use scikit-learn (sk-learn) for the model",
    "git checkout 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 fixed the token refresh",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "FROM python:3.11-slim@sha256:" + r(HEX, 64),
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "api_id = 550e8400-e29b-41d4-a716-446655440000",
    '"integrity": "sha512-' + r(B64, 86) + '=="',
    "  integrity sha512-" + r(B64, 86) + "==",
    "    resolution: {integrity: sha512-" + r(B64, 86) + "==}",
    "golang.org/x/text v0.14.0 h1:" + r(B64, 43) + "=",
    "requests==2.31.0 --hash=sha256:" + r(HEX, 64),
    '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk' + r(B64, 40) + '==">',
    "echo SGVsbG8gV29ybGQ= | base64 -d",
    '"resolved": "https://registry.npmjs.org/react/-/react-18.2.0.tgz"',
    "color: #1e90ff; background: #ffcc00;",
    "arn:aws:iam::123456789012:role/deploy",
    "https://github.com/pallets/quart/blob/main/src/quart/app.py",
    "postgres://localhost:5432/app",
    "AKIA is the prefix of AWS access key ids",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + r(B64, 43) + " ben@laptop",
    "valueFrom:\n  secretKeyRef:\n    name: db\n    key: password",
    "the AWS secret key lives in the vault, never in the repo",
    "password_reset_token_ttl = 3600",
    "pin requests to 2.31.0 and urllib3 below 2",
    "the version pin is 2.31.0 in requirements.txt",
    "set pin: true on the GPIO header",
    "PIN 17 drives the LED; the pin is 17.",
    "the recovery code is printed on the card we sent",
    "backup codes are generated-daily by the cron job",
    "the security code: READ-ME before you change it",
    "spring.datasource.password=${DB_PASSWORD}",
    "password: ${{ secrets.DB_PASSWORD }}",
    "login(user, password=password)",
    "conn = connect(host, password=settings.db_password)",
    "password=os.environ['DB_PASSWORD']",
    "Password=********;",
    "the password: required, at least 12 characters",
    "password_min_length: 12",
    "--password-file /run/secrets/db",
    "mysql -u root --password shop   # asks for it",
    "define('WP_DEBUG', true);",
    "define( 'AUTH_KEY', 'put your unique phrase here' );",
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db, key: password}",
    "https://example.com/search?q=python&page=2&key=value",
    "the API key is in the vault, not here",
    "Set-Cookie: theme=dark",
    # an outside tester's look-alikes for the password and secret rules
    "auth/password.py: Handle empty reset tokens",
    "src/chpasswd.c: Ignore a missing shadow file",
    "conn = connect(password=postgres_password)",
    "self.key_password = key_password",
    "password_file: secrets/db.txt",
    "password_policy: strong-v2",
    "password-store: gnome-libsecret",
    "password_hasher=argon2id",
    "gpg --batch --passphrase-file=keys/pass.txt",
    "If an access token is intercepted, it will expire quickly.",
    "res.send({ accessToken: newAccessToken })",
    "self.access_token = access_token",
    "const secretKey = process.env.JWT_SECRET_KEY;",
    "api_key: ApiGatewayApiKey",
    "client_secret: ClientSecretCredential",
    "https://s3.example.com/bucket?key=uploads/2024/avatar.png",
    "GET /api/cache?key=user_profile_12345",
    "https://oss-fuzz.com/testcase?key=6254792024915968",
    "curl 'https://api.example.com/x?appid=MY_API_KEY'",
    "the server sends Set-Cookie: theme=dark; Path=/ and Safari needs SameSite=None too",
    "curl -H 'Cookie: lang=en-US' https://example.com",
    "{'pass': 'bandpass'}",
    '{"pass": "12 of 14"}',
    "openssl pkcs12 -export -passout env:PFX_PASS -out a.p12",
    "mysqldump --password=PROMPT shop",
    'dsn := "user:password@tcp(localhost:3306)/dbname"',
    "  username: String,\n  password: String,\n",
    "\t* tree-ssa-strlen.cc (strlen_pass::handle_assign,",
    "print \"Set-Cookie: cs-trivf=$Cookie{'cs-trivf'}; path=/\"",
    "def step(self, shrink_pass: ShrinkPass, *, random_order: bool = False) -> bool:",
    "        is_password: FilterOrBool = False,",
    "<code>{pem: &#x3C;string|buffer>[, passphrase: &#x3C;string>]}</code>",
    ">>> r = requests.get('https://httpbin.org/basic-auth/user/pass', auth=('user', 'pass'))",
    'headers.append("Set-Cookie: p1=perm; Domain=.perlmeister.com;")',
    '    REFRESH_TOKEN = "REFRESH_TOKEN"',
    '    METADATA_KEY = "MetadataKey"',
    "ROOT_KEY = '__root__'",
    "HIVE_SITE_KEY = '--hive-site'",
    "ERRORTOKEN = PythonTokenTypes.ERRORTOKEN",
    "ORIGIN_TRACE_HEADER_ATTR_KEY = '_origin_trace_header'",
    "            user.password = new_password",
    "        password: SecretStr",
    "    password: hashedPassword,",
    '      "output_token": "nextToken",',
    '      "input_token": "Marker",',
    '        "input_token": "next_token",',
    "LINT_PASS: enabled",
    "FIRST_PASS=complete",
    "AUTH_PW: required",
    "TEST_PASS=PASSED",
    "render_pass: pass2",
    "shader_pass = DepthPass1",
    "render_pass = RenderPass3D",
    "render_pass: pass2",
    "  password: !secret mqtt_password",
    "TESTS_PASS: 120/120",
    "\t* man/Attic/chpasswd.8: s/protect/protected/",
    "JWT_SECRET_ALGORITHM=HS256",
    "TOKEN_CIPHER: AES256",
    "Cookie: _ga=GA1.2.1234567890.1700000000",
    "Set-Cookie: theme=dark-mode-enabled-v2; Path=/",
    "db_password_prod: !vault |",
    "OAUTH_TOKEN_URL=https://oauth2.googleapis.com/token",
    "SECRET_ARN=arn:aws:secretsmanager:us-east-1:123456789012:secret:db",
    "PASSWORD_RESET_TIMEOUT=1h30m",
    "mysqldump --password=prompt shop",
    "The access token is short-lived-15min",
    "the secret key: see-docs-section-4.2",
    # cloud command lines that set no secret, or one from a file, a variable or stdin
    "aws configure set region us-east-1 --profile deploy",
    "aws ssm put-parameter --name /app/log-level --type String --value debug",
    "aws secretsmanager create-secret --name prod/db --secret-string file://creds.json",
    'gh secret set API_KEY --body "$API_KEY"',
    "gh secret set JWT_SECRET < jwt.txt",
    "http -a $API_USER:$API_PASS api.example.com",
    "see http://example.com -a note",
    # calls that name a secret but pass a variable or a placeholder, and commands that set one from a variable
    'client.login("admin", "password")',
    'jwt.encode(payload, "secret")',
    'jwt.encode(payload, settings.SECRET_KEY, algorithm="HS256")',
    "login(request, user)",
    "HTTPBasicAuth(user, pw)",
    'user.set_password(form.cleaned_data["password1"])',
    'auth.login(request, "${NEXT}")',
    'HTTPBasicAuth("admin", "<your-password>")',
    'echo "$API_KEY" | gh secret set API_KEY',
    "net user admin * /add",
    "net user admin /active:yes",
    "net user bob %PW% /add",
    # a review's: a helper's page and user, a view's redirect, ftp's anonymous login, an algorithm's name, a
    # placeholder, net user in prose
    'login(request, "home")',
    "auth.login(req, 'next')",
    'self.login(user, "dashboard")',
    'ftp.login("anonymous", "anonymous@")',
    'login(u, "test")',
    'jwt.encode(payload, "HS256")',
    'set_password(s, u, f"{prefix}")',
    "await login(page, 'standard_user')",
    "login(page, 'alice@example.com')",
    "login(u, `${pw}`)",
    "I ran net user admin twice",
    "run net user joe smith",
    "printf '%s' \"$X\" | gh secret set K",
    # a password hasher's name beside "password" (Django)
    'check_password("password", "pbkdf2_sha256")',
    'make_password("password", None, "argon2")',
    # a message beside a login (a second review)
    'login(req, res, "Invalid credentials")',
    'auth.login(user, "Welcome back!")',
    'cy.login(user.username, "INVALID")',
]


def _redacted(text: str, secret: str) -> bool:
    clean, _ = redact(text)
    return secret not in clean


@pytest.mark.parametrize("rule,text,secret", FAKES, ids=[f"{rule}-{i}" for i, (rule, _, _) in enumerate(FAKES)])
def test_credential_is_redacted(rule, text, secret):
    clean, found = redact(text)
    assert secret not in clean and found, clean
    assert rule in {f.rule for f in candidates(text)} | set(found), (clean, found)


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_unchanged(text):
    assert redact(text) == (text, [])


def test_rates():
    """Detection over the fakes and false positives over the look-alikes: 100% and 0% (printed with -s)."""
    assert len(FAKES) >= 60 and len(BENIGN) >= 30
    providers = {rule for rule, _, _ in FAKES}
    detected = sum(_redacted(text, secret) for _, text, secret in FAKES)
    false_pos = sum(redact(text)[1] != [] for text in BENIGN)
    print(
        f"\nsecret scan: detected {detected}/{len(FAKES)} fake credentials ({detected / len(FAKES):.0%}) "
        f"of {len(providers)} kinds; false positives {false_pos}/{len(BENIGN)} look-alikes "
        f"({false_pos / len(BENIGN):.0%}); gitleaks {ruleset().gitleaks_version}, {len(rules())} rules"
    )
    assert detected == len(FAKES) and false_pos == 0


def test_every_bead_rule_has_a_corpus_entry():
    """bead's own rules are each exercised by the corpus (gitleaks' rules come with gitleaks' own tests)."""
    own = {r.id for r in rules() if r.source == "bead"}
    assert own <= {rule for rule, _, _ in FAKES}


def test_rules_are_gitleaks_plus_bead_and_all_compile_on_re2():
    """gitleaks' rules (pinned) and bead's, unique ids, every pattern RE2 (rules compile lazily, so compile all here)."""
    rs = ruleset()
    assert rs.gitleaks_version == "v8.30.1"
    assert sum(r.source == "gitleaks" for r in rs.rules) > 200
    assert len({r.id for r in rs.rules}) == len(rs.rules)
    for rule in rs.rules:
        assert rule.pattern is not None, rule.id


def test_a_hex_secret_found_once_is_redacted_in_either_case_and_behind_0x():
    """A webhook secret found in lower case and quoted back in upper case, as C writes a constant (`0x7C4E...`), is the
    same value: it reached the raw log and the trace so (an outside attack). A longer word holding it stays."""
    from bead.capture.secrets import redact_messages

    value = r(HEX, 32)
    (_, first), (said, again) = redact_messages(
        [[f"STRIPE_WEBHOOK_SECRET={value}"], [f"it is 0x{value.upper()} here, {value.upper()}"]]
    )
    assert value.upper() not in said and said.startswith("it is 0x[REDACTED:") and again
    kept = f"the build id x{value}"
    assert redact_messages([[f"STRIPE_WEBHOOK_SECRET={value}"], [kept]])[1][0] == kept


def test_known_hex_values_are_looked_for_in_linear_time():
    """Hex values are looked for in either case: as a case-blind regular expression that took text length times the
    value's (18 s for a megabyte against 64 values, a review); the text's hex letters in lower case and a plain find
    take linear time, and no more per value than before."""
    from linear import assert_linear

    from bead.capture.secrets import redact_known

    known = {"a1" * (60 + i) + f"b{i % 10}": "x" for i in range(64)}
    assert_linear(lambda text: redact_known(text, known), lambda n: "a1" * (n // 2), 256 * 1024, limit=0.25)


def test_redaction_keeps_surrounding_text():
    text = "connect with postgres://app:Sup3rS3cret@db:5432/app then run migrations"
    assert redact(text)[0] == "connect with postgres://app:[REDACTED:url-password]@db:5432/app then run migrations"


def test_a_provider_key_in_a_quoted_string_takes_only_itself():
    """A quoted value runs to its closing quote for a rule that names a secret by its context, not for a key of
    a provider's shape: the log line's words after the token stay."""
    pat = "ghp_" + "4f8Kq2LmN7pR3sT9vW1xY5zA6bC0dE2gH8jK"
    clean, _ = redact(f'log.info("{pat} expired; refreshing for user bob at 12:00")')
    assert clean == 'log.info("[REDACTED:github-pat] expired; refreshing for user bob at 12:00")'


def test_a_redacted_text_scanned_again_is_left_as_it_is():
    pat = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    assert redact(f"[REDACTED:{pat}]")[0] == "[REDACTED:[REDACTED:github-pat]]", "a key in marker-like brackets is a key"
    for text in [
        'export API_KEY="Qx7vLr2TnW4xPk9sZz81"',
        "REDIS_PASSWORD='Tr0ub4dor3xQ9zz'",
        'dsn := "admin:Tr0ub4dor3xQ9zz@tcp(db:3306)/app"',
    ]:
        once = redact(text)[0]
        assert once != text and redact(once) == (once, [])


@pytest.mark.parametrize(
    "shape",
    [
        "本番のStripeキーは{k}。テストでは使わないで",
        "本番のStripeキーは{k}、テストでは使わないで",
        "la clé est «{k}» en production",
        "key—{k}—do not share",
        "https://api.example.com/charge?key={k}&amount=100",
        "the callback was https://app.example.com/cb?id=7&jwt={j}&state=xyz",
        "トークンは{j}。",
        "[{k}](https://dashboard.stripe.com)",
        "value<{k}> in the template",
    ],
)
def test_a_key_is_redacted_whatever_follows_it_in_running_text(shape):
    """A key's closing boundary was made for files and English punctuation: a Stripe key or a JWT followed by a
    Japanese full stop, French quotes, an em dash, a URL's next parameter or a bracket passed whole (an outside
    review). A key's own characters are ASCII, so any other character ends it, as do `&`, brackets and the like."""
    stripe = "sk_live_51" + r(ALNUM, 60)
    jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwiaWF0IjoxNzE2MjM5MDIyfQ." + r(URLSAFE, 43)
    text = shape.format(k=stripe, j=jwt)
    clean, found = redact(text)
    assert stripe[-20:] not in clean and jwt[-20:] not in clean and found, clean


def test_a_longer_key_leaves_no_tail():
    """A rule that matches the usual length redacts the whole token, not its first characters."""
    token = "ghp_" + r(ALNUM, 36) + r(ALNUM, 8)
    clean, _ = redact(f"token {token} here")
    assert clean == "token [REDACTED:github-pat] here"


def test_scan_is_linear_on_hostile_text():
    """Near-misses repeated a quarter megabyte long scan in linear time (RE2: no backtracking; tests/linear.py)."""
    from linear import assert_linear

    unit = "password=" + "a" * 30 + " aws secret " + "A" * 39 + " twilio token "
    assert_linear(scan, lambda n: unit * (n // len(unit)), 256 * 1024, limit=0.25)


@pytest.mark.parametrize(
    "unit",
    [
        " sqlcmd \\\n",  # a command line continued without end
        " sqlcmd -x \\\n -y `\n",
        ' sqlcmd -P "ab\n',  # a quote never closed on its line
        " zip -rrrrrrrrP",
        'sqlplus -M "x" ',  # options without a user/password after them
        "sqlplus a=b ",
        "rman target catalog ",
        "grant a, b to ",
        " redis-cli -h x ",
        "printf '%s\\n' ",
        " nmcli connect ",
        "a:1> auth b c d\n",
        'Cookie: a=\\"',  # cookies: escaped quotes, a header line, a HAR header, a dict never closed
        '\nCookie: a="b"; ',
        '"name": "cookie", "value": "a=',
        "cookies = {'a': '",
        "x://:/a/b/c",  # a URL's password with slashes
        "nxc -U a%bcd ",  # one tool in two forms on one line (a gap without a bound read to the line's end)
        "lftp -e 'open -u ab,Secr3tpw h' ",
        '["sqlcmd", "-S", "db", "-P", "Secr3tpw"], ',
        "x://a:b@c@",  # a URL's password with an `@`, never ended by a host
        "x://a@b:c@d@",
        " isql -v a b ",  # isql's words, never a third
        ' sqlcmd "b;" ',  # a quoted query with a `;` in it, never followed by -P
        "'sid': 'a',",  # session-ish names whose value is never a token
    ],
)
def test_the_command_line_rules_take_linear_time(unit):
    """The database and tool password rules (a command's options, continued lines, quoted values), the cookie rules
    and the URL's password with a slash run in linear time on a quarter megabyte of their own near misses
    (tests/linear.py)."""
    from linear import assert_linear

    assert_linear(redact, lambda n: unit * (n // len(unit)), 256 * 1024, limit=0.5, what=repr(unit))


def test_secret_never_reaches_the_raw_file(mem):
    key = "sk-ant-api03-" + "Zz7" * 30
    t = mem.raw.append("s1", "user", f"my key is {key} please use it")
    data = t.path.read_bytes()
    assert key.encode() not in data and b"[REDACTED:anthropic-key]" in data
    assert t.flags["redacted"] == ["anthropic-key"]


@pytest.mark.parametrize("wire", ["proxy", "import"])
def test_a_secret_named_in_the_persons_words_and_pasted_below_them_never_reaches_the_raw_file(mem, wire):
    """The raw log keeps a message's typed words and its code fence apart (their sources differ); the scan reads
    them as one text, so a value named only in the words above it is still a secret (and `bead import` keys a
    message's runs as the raw log wrote them: imported twice, it is added once)."""
    from bead.conversation import identify
    from bead.core import capture, history

    signing = "4f9a1c2e8b7d6f5a3c1e9b8d7f6a5c4e3b2a1d9c8e7f6a5b4c3d2e1f0a9b8c7d"
    said = f"here is the stripe webhook signing secret for staging:\n```\n{signing}\n```\nput it in the env config"
    said += '\nand export API_KEY="Qx7vLr2TnW4xPk9sZz81" too'  # a quoted one: once redacted, never read again
    assert redact(said)[1], "read whole, the message holds a secret"
    if wire == "proxy":
        from bead.wire.anthropic import conversation_of

        conv = conversation_of({"messages": [{"role": "user", "content": said}]}, {})
        ident = identify({"x-bead-session": "split"}, conv, None)
        turns = capture.request_turns(conv, ident, 0)
        assert {t.flags["source"] for t in turns} == {"typed", "pasted"}, "the raw log keeps the runs apart"
        capture.capture(mem, ident, turns)
    else:
        from bead.wire.formats import read_items

        line = {"type": "user", "sessionId": "split", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/src/shop"}
        root = mem.home.root.parent / "claude-projects" / "-src-shop"
        root.mkdir(parents=True)
        (root / "split.jsonl").write_text(json.dumps({**line, "message": {"role": "user", "content": said}}) + "\n")
        counts = [history.import_claude_code(mem, read_items, root.parent) for _ in range(2)]
        assert counts[0].turns_added == 3 and counts[1].turns_added == 0 and counts[0].redacted == 2
    raw = b"".join(p.read_bytes() for p in mem.raw.files())
    assert signing.encode() not in raw and b"Qx7vLr2TnW4xPk9sZz81" not in raw and b"[REDACTED:generic-api-key]" in raw
    assert b"put it in the env config" in raw and b"[REDACTED:[REDACTED" not in raw


def test_secrets_written_through_a_tool_call_never_reach_the_raw_file(mem):
    """A tool call's input is captured as written, not JSON-escaped, so the scan sees a quoted secret whole."""
    from bead.conversation import identify
    from bead.core import capture
    from bead.wire.anthropic import conversation_of

    password, stripe = "Qz8vLr2TnW4xPk9sHd3J", "sk_live_51HaB3" + "x7Kq2Lm9Np4Rs8Tv1Wy6Zb3Cd5Ef"
    env = f'DB_PASSWORD="{password}"\nSTRIPE_KEY="{stripe}"\n'
    data = {
        "messages": [
            {"role": "user", "content": "write the env file"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "/srv/app/.env", "content": env}}
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        ]
    }
    conv = conversation_of(data, {})
    ident = identify({"x-bead-session": "envfile"}, conv, None)
    turns = capture.request_turns(conv, ident, 0)
    assert any("file_path: /srv/app/.env" in t.text for t in turns), "the input is readable, field by field"
    capture.capture(mem, ident, turns)
    raw = b"".join(p.read_bytes() for p in mem.raw.files())
    assert password.encode() not in raw and stripe.encode() not in raw
    assert b"[REDACTED:" in raw


PRINTED_PASSWORD = "Qz8vLr2TnW4xPk9s"


def _printed_requests(command: str, output: str) -> dict[str, tuple[str, bytes]]:
    """One conversation in each wire: the person asks, the agent runs ``command``, the tool answers ``output``."""
    ask = "what is the staging db password set to?"
    anthropic_body = {
        "messages": [
            {"role": "user", "content": ask},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]},
        ]
    }
    call = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": json.dumps({"command": command})}}
    chat_body = {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": ask},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": output},
        ],
    }
    codex_call = json.dumps({"command": ["bash", "-lc", command]})
    responses_body = {
        "model": "gpt-test",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": codex_call},
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ],
    }
    return {
        "anthropic": ("anthropic", json.dumps(anthropic_body).encode()),
        "chat": ("chat", json.dumps(chat_body).encode()),
        "responses": ("responses", json.dumps(responses_body).encode()),
    }


def _captured(mem, wire: str, body: bytes, session: str) -> bytes:
    from bead.conversation import identify
    from bead.core import capture
    from bead.wire import openai
    from bead.wire.anthropic import conversation_of

    if wire == "anthropic":
        conv = conversation_of(json.loads(body), {})
    else:
        conv = (openai.CHAT if wire == "chat" else openai.RESPONSES).parse(body, {})[1]
    ident = identify({"x-bead-session": session}, conv, None)
    capture.capture(mem, ident, capture.request_turns(conv, ident, 0))
    return b"".join(p.read_bytes() for p in mem.raw.files() if session in p.name)


@pytest.mark.parametrize("wire", ["anthropic", "chat", "responses"])
@pytest.mark.parametrize(
    "command",
    [
        "printenv DB_PASSWORD",
        'echo "$STAGING_DB_PASSWORD"',
        "aws configure get aws_secret_access_key --profile staging",
        "vault kv get -field=password secret/staging/db",
        "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d",
        "security find-generic-password -s staging-db -w",
    ],
)
def test_a_secret_a_command_prints_alone_never_reaches_the_raw_file(mem, wire, command):
    """The agent runs a command whose output is the bare secret (`printenv DB_PASSWORD`): no rule finds a value with
    no name beside it, so the tool's output was captured in clear. A tool result after a call that prints a secret is
    redacted word by word, on every wire."""
    name, body = _printed_requests(command, PRINTED_PASSWORD + "\n")[wire]
    raw = _captured(mem, name, body, f"printed-{wire}")
    assert PRINTED_PASSWORD.encode() not in raw and b"[REDACTED:printed-secret]" in raw
    assert b"what is the staging db password set to?" in raw, "the rest of the conversation is captured as it was"


def _two_calls_requests(ids: tuple[str | None, str | None]) -> dict[str, bytes]:
    """One answer with two calls, `printenv DB_PASSWORD` and `cat README.md`, and their results, in each wire; the
    calls' ids as given (None: the wire's item has none)."""
    printing, reading = "printenv DB_PASSWORD", "cat README.md"
    outputs = (PRINTED_PASSWORD, "Run BuildTools.sh first; see CONTRIBUTING.md for TestMatrix2024 setup")
    ask = "what is the staging db password set to, and how do I build?"

    def keep(d: dict, **kv: object) -> dict:
        return {**d, **{k: v for k, v in kv.items() if v is not None}}

    anthropic_body = {
        "messages": [
            {"role": "user", "content": ask},
            {
                "role": "assistant",
                "content": [
                    keep({"type": "tool_use", "name": "Bash", "input": {"command": c}}, id=i)
                    for c, i in zip((printing, reading), ids, strict=True)
                ],
            },
            {
                "role": "user",
                "content": [
                    keep({"type": "tool_result", "content": o}, tool_use_id=i) for o, i in zip(outputs, ids, strict=True)
                ],
            },
        ]
    }
    chat_body = {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": ask},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    keep({"type": "function", "function": {"name": "shell", "arguments": json.dumps({"command": c})}}, id=i)
                    for c, i in zip((printing, reading), ids, strict=True)
                ],
            },
            *(keep({"role": "tool", "content": o}, tool_call_id=i) for o, i in zip(outputs, ids, strict=True)),
        ],
    }
    responses_body = {
        "model": "gpt-test",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]},
            *(
                keep({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": c})}, call_id=i)
                for c, i in zip((printing, reading), ids, strict=True)
            ),
            *(keep({"type": "function_call_output", "output": o}, call_id=i) for o, i in zip(outputs, ids, strict=True)),
        ],
    }
    return {
        "anthropic": json.dumps(anthropic_body).encode(),
        "chat": json.dumps(chat_body).encode(),
        "responses": json.dumps(responses_body).encode(),
    }


@pytest.mark.parametrize("wire", ["anthropic", "chat", "responses"])
def test_a_result_paired_by_its_id_with_a_call_that_prints_nothing_is_captured_as_it_was(mem, wire):
    """One answer runs `printenv DB_PASSWORD` and `cat README.md`: every result of the message was redacted word by
    word, so the README's `BuildTools.sh` and `TestMatrix2024` were lost. The harness pairs each result with its call
    by an id; the README's result, paired with a call that prints nothing, is now captured as it was, the printed
    secret still redacted."""
    raw = _captured(mem, wire, _two_calls_requests(("call_a", "call_b"))[wire], f"paired-{wire}")
    assert PRINTED_PASSWORD.encode() not in raw and b"[REDACTED:printed-secret]" in raw
    assert b"BuildTools.sh first; see CONTRIBUTING.md for TestMatrix2024 setup" in raw


@pytest.mark.parametrize("wire", ["anthropic", "chat", "responses"])
@pytest.mark.parametrize("ids", [(None, None), ("same", "same")], ids=["no-ids", "a-shared-id"])
def test_a_result_not_surely_paired_is_read_as_a_printed_secrets(mem, wire, ids):
    """Without ids, or with one id for both calls, nothing tells which result is which call's: every result of the
    message is redacted word by word (the safe side), so the secret never reaches the file."""
    raw = _captured(mem, wire, _two_calls_requests(ids)[wire], f"unpaired-{wire}-{ids[0]}")
    assert PRINTED_PASSWORD.encode() not in raw
    assert b"TestMatrix2024" not in raw and b"[REDACTED:printed-secret]" in raw


@pytest.mark.parametrize(
    "call",
    [
        {"type": "local_shell_call", "call_id": "c1", "action": {"type": "exec", "command": ["printenv", "DB_PASSWORD"]}},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "shell",
            "arguments": json.dumps({"command": ["gh", "auth", "token"]}),
        },
    ],
    ids=["local-shell-call", "argument-vector"],
)
def test_a_command_given_as_an_argument_vector_is_read_as_a_shell_reads_it(mem, call):
    """Codex's local shell call and a `shell` call given a list: the command's words were read as JSON
    (`printenv", "DB_PASSWORD`), so the printed secret went through (a review)."""
    output_type = "local_shell_call_output" if call["type"] == "local_shell_call" else "function_call_output"
    body = {
        "model": "gpt-test",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "what is it set to?"}]},
            call,
            {"type": output_type, "call_id": "c1", "output": PRINTED_PASSWORD},
        ],
    }
    raw = _captured(mem, "responses", json.dumps(body).encode(), "vector")
    assert PRINTED_PASSWORD.encode() not in raw and b"[REDACTED:printed-secret]" in raw


@pytest.mark.parametrize("split", [True, False], ids=["two-messages", "one-message"])
def test_a_secret_printed_in_claude_codes_bash_mode_never_reaches_the_raw_file(mem, split):
    """The person runs `! printenv DB_PASSWORD` in Claude Code: the harness sends the command and its output as the
    person's message, with no tool call for the output to follow (a review). What `<bash-stdout>` holds is redacted;
    an ordinary command's output is not."""
    secret_run = [
        "<bash-input>printenv DB_PASSWORD</bash-input>",
        f"<bash-stdout>{PRINTED_PASSWORD}</bash-stdout><bash-stderr></bash-stderr>",
    ]
    plain_run = [
        "<bash-input>ls reports/</bash-input>",
        "<bash-stdout>report_2024Q3.pdf</bash-stdout><bash-stderr></bash-stderr>",
    ]
    for name, run in (("secret", secret_run), ("plain", plain_run)):
        if split:
            messages = [{"role": "user", "content": text} for text in run]
        else:
            messages = [{"role": "user", "content": [{"type": "text", "text": text} for text in run]}]
        messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "thanks"}]
        raw = _captured(mem, "anthropic", json.dumps({"messages": messages}).encode(), f"bash-{name}-{split}")
        if name == "secret":
            assert PRINTED_PASSWORD.encode() not in raw and b"<bash-stdout>[REDACTED:printed-secret]</bash-stdout>" in raw
        else:
            assert b"report_2024Q3.pdf" in raw


@pytest.mark.parametrize(
    "command",
    [
        'echo "${GITHUB_TOKEN:-unset}"',
        "echo $SECRET_KEY_BASE",
        "printenv GITHUB_TOKEN_CI",
        "GH_HOST=github.com gh auth token",
        "timeout 5 op read op://vault/db/password",
        'kubectl get secret -n prod db -o jsonpath="{.data.password}" | base64 -d',
        "cat token.txt",
        "argocd admin initial-password -n argocd",  # an outside attack (2026-12-07)
        # another outside attack's (the twentieth session): a token, a private key, a new password printed alone
        "heroku auth:token",
        "wg genkey",
        "bin/elasticsearch-reset-password -u elastic",
        # a review's: the names of this session's rules, and Bitwarden's documented way to its session key
        "printenv GH_PAT",
        "echo $BW_SESSION",
        "bw unlock --raw",
        "printenv MNEMONIC",
        "echo ${APP_SALT}",
        # An outside attack's: a secret made on the spot, a key file, a decoding, a value cut from .env
        "python3 -c 'import secrets; print(secrets.token_hex(32))'",
        "ruby -e 'require \"securerandom\"; puts SecureRandom.hex(32)'",
        "jq -r .token x.json",
        # a review's: the interpreter reached another way, a heredoc, sed scripts holding | or ;
        "python3 - <<'EOF'\nimport secrets\nprint(secrets.token_hex(32))\nEOF",
        "uv run python -c 'import secrets; print(secrets.token_urlsafe(32))'",
        "cd app && .venv/bin/python -c 'import secrets; print(secrets.token_hex(32))'",
        "node -p \"require('crypto').randomBytes(32).toString('hex')\"",
        "< /dev/urandom tr -dc A-Za-z0-9 | head -c 32",
        "cat .env | grep PASSWORD | sed 's/.*=//'",
        "sed -n 's|^DB_PASSWORD=||p' .env",
        "sed -e 's/^DB_PASSWORD=//;t;d' .env",
        # the third review's: a grep of .env cut by sed or awk, camelCase, bracketed and quoted keys, calls with
        # other arguments, other generators, grep -E -o and rg -o
        "grep DB_PASSWORD .env | sed 's/DB_PASSWORD=//'",
        "grep DB_PASSWORD .env | awk '{split($0,a,\"=\"); print a[2]}'",
        "jq -r .accessToken ~/.aws/sso/cache/x.json",
        "jq -r '.data[\"db-password\"] | @base64d' s.json",
        "jq -r '.data.\"db-password\"' s.json",
        "node -e \"console.log(require('crypto').randomBytes(n).toString('hex'))\"",
        "ruby -e 'puts SecureRandom.base58(24)'",
        "python -c 'from secrets import token_urlsafe; print(token_urlsafe(32))'",
        "python3 -c 'import os; print(os.urandom(32).hex())'",
        "python3 -m base64 -d <<< c2VjcmV0",
        "grep -E -o 'DB_PASSWORD=.*' .env",
        "rg -o 'DB_PASSWORD=(.*)' -r '$1' .env",
        # the fourth review's: other runners, code piped into an interpreter, a long heredoc, more secret keys
        "./manage.py shell -c 'from django.core.management.utils import get_random_secret_key; print(get_random_secret_key())'",
        "bin/rails runner 'puts SecureRandom.hex(64)'",
        "npx tsx -e \"console.log(require('crypto').randomBytes(32).toString('hex'))\"",
        "echo 'import secrets; print(secrets.token_hex(32))' | python3",
        "python3 - <<'EOF'\n" + "# a comment line\n" * 30 + "import secrets\nprint(secrets.token_urlsafe(48))\nEOF",
        "jq -r .data.GEMINI_API_KEY s.json",
        "jq -r .webhook_secret x.json",
        "yq e '.services.db.environment.POSTGRES_PASSWORD' docker-compose.yml",
        "grep DB_PASSWORD .env | sed -E 's/^[^=]+=//'",
        "head -c 32 /dev/urandom | base64",
        "node -e \"console.log(require('crypto').randomBytes(32).toString('hex'))\"",
        "bin/rails secret",
        "mix phx.gen.secret",
        "php artisan key:generate --show",
        "pwgen -s 24 1",
        "cat config/master.key",
        "cat ~/.docker/config.json",
        "echo WGs5dlEybVpwN0xy | base64 -d",
        "jq .password creds.json",
        "grep PASSWORD .env | sed 's/.*=//'",
        "sed -n 's/^DB_PASSWORD=//p' .env",
        "grep -oP '(?<=PASSWORD=).*' .env",
        # an outside attack's: pass's short form, a secrets file read inside a container, more secret stores
        "pass github",
        "pass email/work",
        "echo ok; pass github",
        "docker exec app cat /run/secrets/db_password",
        "kubectl exec -it web-0 -- cat /run/secrets/token",
        "podman exec db cat .pgpass",
        "keepassxc-cli show -s -a Password vault.kdbx github",
        "keepassxc-cli show --attributes password vault.kdbx github",
        "infisical secrets get DB_PASSWORD --plain",
        "chamber read app db_password -q",
        "systemd-creds cat db-password",
        # a review's: pass with its errors sent away, quoted, or commented; gopass; more ways into a container
        "pass prod/db 2>/dev/null",
        "pass 'prod/db'",
        "pass github # the work one",
        "gopass prod/db",
        "kubectl -n prod exec web-0 -- cat /run/secrets/db_password",
        "docker-compose exec app cat /run/secrets/db_password",
        "oc exec web-0 -- /bin/cat /run/secrets/token",
        "docker compose run --rm app head -c 64 /run/secrets/key",
        "cat /vault/secrets/db-creds",
    ],
)
def test_a_command_printing_a_secret_behind_a_prefix_or_a_variant_name_is_read_so(command):
    """A default's expansion prints the value, a variant's suffix names the same secret, a variable set before the
    command or `timeout` runs it, and options may stand before a kubectl secret's name (the last review found each
    missed)."""
    from bead.capture.secrets import prints_secret

    assert prints_secret(command)


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "tool_use", "id": "t1", "name": "run", "input": "printenv DB_PASSWORD"},
        {"type": "tool_use", "id": "t1", "name": "write_stdin", "input": {"session_id": 3, "chars": "gh auth token\n"}},
    ],
    ids=["string-input", "write-stdin"],
)
def test_a_call_whose_command_is_a_string_or_typed_into_a_shell_is_read(mem, tool):
    data = {
        "messages": [
            {"role": "user", "content": "what is it?"},
            {"role": "assistant", "content": [tool]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": PRINTED_PASSWORD}]},
        ]
    }
    raw = _captured(mem, "anthropic", json.dumps(data).encode(), "string-call")
    assert PRINTED_PASSWORD.encode() not in raw


@pytest.mark.parametrize("value", ["sunshinesky", "48213977", "hunter2", "'pa55'", "Xk9\\$vQ"])
def test_an_output_that_is_one_word_alone_is_the_value_whatever_its_shape(mem, value):
    """`printenv DB_PASSWORD` printing a password of lower-case letters, of digits only or of fewer than 8 characters:
    a word of a printed secret's output had to read as a secret (8 characters or more, two kinds), so these went to
    the raw file in clear. An output that is one word alone is the value itself, and is redacted whatever its shape."""
    name, body = _printed_requests("printenv DB_PASSWORD", value + "\n")["anthropic"]
    raw = _captured(mem, name, body, "one-word")
    assert value.strip("'").encode() not in raw and b"[REDACTED:printed-secret]" in raw


@pytest.mark.parametrize("value", ["correct horse battery staple", "maple-quartz-lantern-orbit", "Sunshine Sky"])
def test_a_passphrase_printed_alone_is_the_value(mem, value):
    """`pass show wifi` printing a passphrase of words: no word of it reads as a secret alone, so it went to the raw
    log in clear (a review). One line of two to twelve words and nothing else is the value, whole."""
    name, body = _printed_requests("pass show personal/wifi", value + "\n")["anthropic"]
    raw = _captured(mem, name, body, "passphrase")
    words = value.replace("-", " ").split()
    assert b"[REDACTED:printed-secret]" in raw and not [w for w in words if w.encode() in raw]


@pytest.mark.parametrize(
    "output", ["secret not found", "Permission denied", "bash: DB_PASSWORD: unbound variable", "No such file or directory"]
)
def test_an_error_a_printing_command_gives_instead_stays(mem, output):
    name, body = _printed_requests("pass show personal/wifi", output + "\n")["anthropic"]
    raw = _captured(mem, name, body, "printed-error")
    assert output.encode() in raw and b"[REDACTED:printed-secret]" not in raw


@pytest.mark.parametrize("output", ["/run/secrets/db_password", "https://vault.example.com/v1/db", "ok", "(No content)"])
def test_a_path_a_url_or_a_short_word_printed_alone_stays(mem, output):
    """What a printing command prints that is no value (a path, a URL, a word of three letters or fewer, more than
    one word) is captured as it was."""
    name, body = _printed_requests("printenv DB_PASSWORD", output + "\n")["anthropic"]
    raw = _captured(mem, name, body, "one-word-kept")
    assert output.encode() in raw and b"[REDACTED:printed-secret]" not in raw


def test_the_trace_redacts_a_printed_secret_wherever_a_cue_quotes_it():
    """The trace's cues quoted the bare value where capture redacted it: bash mode's output (a cue of the person's),
    Chat `tool` messages followed by a message of the person's, and a Responses request continuing an answer it does
    not repeat (the last review)."""
    from bead.core.capture import printed_redactor
    from bead.recall.cues import extract
    from bead.wire import openai
    from bead.wire.anthropic import conversation_of

    bash = conversation_of(
        {
            "messages": [
                {"role": "user", "content": "<bash-input>printenv DB_PASSWORD</bash-input>"},
                {"role": "user", "content": f"<bash-stdout>{PRINTED_PASSWORD}</bash-stdout><bash-stderr></bash-stderr>"},
            ]
        },
        {},
    )
    chat = json.loads(_printed_requests("printenv DB_PASSWORD", PRINTED_PASSWORD)["chat"][1])
    chat["messages"].append({"role": "user", "content": "and now?"})
    chat_conv = openai.CHAT.parse(json.dumps(chat).encode(), {})[1]
    chained = {
        "model": "gpt-test",
        "previous_response_id": "resp_1",
        "input": [{"type": "function_call_output", "call_id": "c1", "output": PRINTED_PASSWORD}],
    }
    chained_conv = openai.RESPONSES.parse(json.dumps(chained).encode(), {})[1]
    for name, conv in (("bash", bash), ("chat", chat_conv), ("chained", chained_conv)):
        cues = extract(conv)
        assert any(PRINTED_PASSWORD in c.text for c in cues), name
        redact = printed_redactor(conv)
        assert redact is not None, name
        assert not any(PRINTED_PASSWORD in redact(c.source, c.text) for c in cues), name


def test_a_message_of_several_bash_mode_commands_is_redacted_where_any_prints_a_secret(mem):
    """`! gh auth token` then `! ls` in one message: the last command decided for the message, so the token's
    output was kept (the last review)."""
    blocks = [
        "<bash-input>printenv DB_PASSWORD</bash-input>",
        f"<bash-stdout>{PRINTED_PASSWORD}</bash-stdout>",
        "<bash-input>ls</bash-input>",
        "<bash-stdout>README.md</bash-stdout>",
        "what now?",
    ]
    messages = [{"role": "user", "content": [{"type": "text", "text": t} for t in blocks]}]
    raw = _captured(mem, "anthropic", json.dumps({"messages": messages}).encode(), "bash-several")
    assert PRINTED_PASSWORD.encode() not in raw and b"what now?" in raw


@pytest.mark.parametrize(
    "command",
    [
        'echo "max tokens: $MAX_TOKENS"',
        "echo $TOKENIZERS_PARALLELISM",
        'echo "token set: ${API_TOKEN:+yes}"',
        'echo "Using $OAUTH_TOKEN_URL" && pytest -q',
        "kubectl get secrets -o jsonpath='{.items[*].metadata.name}'",
        'echo "set API_KEY in your .env"',
        "grep -r TOKEN src/",
        "printenv | sort",
        # the last review's: a file named like a secret's kind, a split on "=" of a diff
        "cat src/tokenizer.py",
        "cat notes/password-reset.md",
        "git diff --stat | awk -F= '{print $1}'",
        "sed -i 's/foo/bar/' app.py",
        "jq .name package.json",
        "base64 logo.png > logo.b64",
        "grep -o 'TODO' -r src",
        # a review's: reading files and searching for the words, as Codex does all day
        "rg -n 'token' src | sed -n '1,80p'",
        "sed -n '1,120p' app/auth/tokens.py app/config/credentials.py",
        "grep -rn /dev/urandom src/",
        "rg get_random_secret_key",
        "jq '.usage.output_tokens' run.json",
        "grep -rn PASSWORD docs/ | sed 's/^/  /'",
        "jq -r '.max_tokens' c.json",
        "jq .name my-repo/tokens.json",
        "rg -n token src | awk -F: '{print $1}'",
        "rg 'secrets.token_hex' src",
        'grep -rn "randomBytes(32)" src/',
        "git grep -n 'SecureRandom.hex'",
        "git log -S 'get_random_secret_key()'",
        "jq '.data.next_token' x.json",
        "cat tokenizer_config.json | jq .bos_token",
        # the fourth review's: searches and tests that name a generator, greps of secrets files, jq paths past a key
        "grep -rn token src/secrets.py | awk -F: '{print $1}'",
        "grep -rn TOKEN .env.example | awk '{print $1}'",
        "grep -c PASSWORD .env | awk '{print $1}'",
        "python3 --version && grep -rn 'token_urlsafe(' app/",
        "python -m pytest tests/ -k get_random_secret_key -q",
        "ruby -e 'require \"securerandom\"; puts SecureRandom.uuid'",
        "jq '.token.expires_at' resp.json",
        "jq '.password.minLength' schema.json",
        "jq . config/app.secret.json",
        # pass's other commands, a file read in a container that is no secret's, keepassxc-cli without -s
        "pass ls",
        "pass insert github",
        "pass generate github 24",
        "pass -c github",
        "pass git push",
        "if x:\n    pass\nelse:\n    pass",
        'git commit -m "pass tests"',
        "docker exec app cat /etc/hosts",
        "keepassxc-cli show vault.kdbx github",
        # a review's: a shell function named pass, a comment's numbers, pf's rules, a docstring, pass's extensions
        'pass() { printf "PASS %s\\n" "$1"; }; curl -fsS localhost:8000/healthz >/dev/null && pass health || fail health',
        "(pass 2)",
        "cat > /etc/pf.conf <<EOF\npass out quick\npass all\nEOF",
        'python3 - <<EOF\n"""\n        pass through\n"""\nEOF',
        "pass audit",
        "docker exec app tail -f /var/log/app.log",
    ],
)
def test_a_command_that_only_names_a_secret_prints_none(command):
    """A variable whose name goes on past the secret's word, a parameter expansion that prints "yes", a listing of
    names, a search: none prints a secret, so its output is captured as it was (a review found these redacted)."""
    from bead.capture.secrets import prints_secret

    assert not prints_secret(command)


def test_a_result_captured_after_its_call_was_captured_is_still_redacted():
    """The proxy captures from where it stopped: the answer with the call was logged with the request before, and
    this request's capture starts at the tool result. The walk starts at the last assistant message before it."""
    from bead.conversation import identify
    from bead.core import capture
    from bead.wire.anthropic import conversation_of

    conv = conversation_of(json.loads(_printed_requests("printenv DB_PASSWORD", PRINTED_PASSWORD)["anthropic"][1]), {})
    ident = identify({"x-bead-session": "later"}, conv, None)
    (turn,) = capture.request_turns(conv, ident, 2)
    assert PRINTED_PASSWORD not in turn.text and "[REDACTED:printed-secret]" in turn.text


def test_a_call_read_in_a_long_run_of_tool_results_is_read_once(mem):
    """One assistant call and thousands of messages of tool results after it (OpenAI's `tool` messages, one a
    result): each message looked back over all those before it, 17 s for 9,000 (a review). One pass, linear."""
    from linear import assert_linear

    from bead.conversation import identify
    from bead.core import capture
    from bead.wire.anthropic import conversation_of

    def make(n: int):
        call = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "printenv DB_PASSWORD"}}]
        results = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}] * n
        return conversation_of(
            {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": call}, *results]}, {}
        )

    ident = identify({"x-bead-session": "long"}, make(1), None)
    assert_linear(lambda conv: capture.request_turns(conv, ident, 0), make, 8000, what="tool results after one call")


@pytest.mark.parametrize("wire", ["anthropic", "chat", "responses"])
def test_the_output_of_an_ordinary_command_is_captured_as_it_was(mem, wire):
    """Only a command that prints a secret makes its output read so: `echo $PWD` and `ls` print paths and names."""
    output = "/home/dev/src/shop\nreport_2024Q3.pdf  invoices_v2.csv"
    for command in ("echo $PWD", "ls -la reports/", "printenv PATH"):
        name, body = _printed_requests(command, output)[wire]
        raw = _captured(mem, name, body, f"plain-{wire}")
        assert b"report_2024Q3.pdf" in raw and b"printed-secret" not in raw, command


def test_a_printed_secret_reaches_no_file_of_the_home_through_the_proxy_with_tracing_on(proxy_client, bead_home, upstream):
    """Through the proxy, with the trace on: the raw log was clean, but the trace's cues quoted the tool's output
    as the secret scan left it, the bare value (a review)."""
    from conftest import all_bytes_under

    name, body = _printed_requests("printenv DB_PASSWORD", PRINTED_PASSWORD)["anthropic"]
    data = {"model": "claude-test", "max_tokens": 64, **json.loads(body)}
    proxy = proxy_client(trace=bead_home / "trace.jsonl")
    assert proxy.post(json.dumps(data).encode(), headers={"X-Bead-Session": "printed"})[0] == 200
    proxy.settle()
    files = all_bytes_under(bead_home)
    assert any("trace" in str(p) and b"printed-secret" in d for p, d in files.items()), "the trace quotes the output"
    assert not [p for p, d in files.items() if PRINTED_PASSWORD.encode() in d]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "json"])
def test_a_printed_secret_the_answer_says_again_never_reaches_the_raw_file(proxy_client, bead_home, upstream, stream):
    """The agent ran `printenv DB_PASSWORD`; its result was redacted, but the model's answer to it ("It's
    `Qz8v...`, want me to rotate it?") was captured in clear, as no rule finds a value with no name beside it. The
    values a request's printed secrets held are redacted in its answer too, wherever they stand."""
    from conftest import all_bytes_under
    from fakes import Reply

    upstream.replies.append(
        Reply(kind="sse" if stream else "json", text=f"It's `{PRINTED_PASSWORD}` on staging; want me to rotate it?")
    )
    name, body = _printed_requests("printenv DB_PASSWORD", PRINTED_PASSWORD + "\n")["anthropic"]
    data = {"model": "claude-test", "max_tokens": 64, "stream": stream, **json.loads(body)}
    proxy = proxy_client()
    assert proxy.post(json.dumps(data).encode(), headers={"X-Bead-Session": "said-again"})[0] == 200
    proxy.settle()
    raw = "".join(d.decode("utf-8") for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p))
    assert "on staging; want me to rotate it?" in raw, "the answer is captured"
    assert PRINTED_PASSWORD not in raw and raw.count("[REDACTED:printed-secret]") == 2


def test_a_printed_secret_a_later_message_of_the_request_says_again_is_redacted_there(mem):
    """A request that holds the printed result and, after it, the assistant's words and a call that repeat the value
    (a resumed session, an import): each is redacted, not only the result."""
    data = json.loads(_printed_requests("printenv DB_PASSWORD", PRINTED_PASSWORD + "\n")["anthropic"][1])
    data["messages"] += [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"It's {PRINTED_PASSWORD}; I'll check it works."},
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "Bash",
                    "input": {"command": f"PGPASSFILE=/dev/null psql -c 'select 1' '{PRINTED_PASSWORD}'"},
                },
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "1 row"}]},
    ]
    raw = _captured(mem, "anthropic", json.dumps(data).encode(), "said-later")
    assert PRINTED_PASSWORD.encode() not in raw and b"I'll check it works." in raw and b"1 row" in raw


@pytest.mark.parametrize("password", ["Qz8vLr2TnW4k", "Summer2024!"])
def test_a_password_found_in_one_conversation_is_redacted_when_another_says_it_bare(proxy_client, bead_home, upstream, password):
    """The person pastes a `.env` in one session and, in the next, says its password bare ("I typed X at the
    prompt"): a value the scan found was looked for only in its own conversation, so the second session's raw log
    held it (an outside attack). The proxy now looks for the newest values found in any conversation, a password
    made of words too (`Summer2024!`, which a review found no longer shared)."""
    import json

    from conftest import all_bytes_under
    from fakes import Reply

    trace = bead_home / "trace.jsonl"  # the trace quotes each turn's cues: it must not hold the value either
    proxy = proxy_client(trace=trace)
    for session, said in (
        ("envpaste", f"here is my .env\nDB_PASSWORD={password}\nDB_HOST=db"),
        ("later", f"I typed {password} at the psql prompt and it worked"),
    ):
        upstream.replies.append(Reply(text=f"Noted: {password}." if session == "later" else "ok"))
        body = json.dumps({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": said}]}).encode()
        assert proxy.post(body, headers={"X-Bead-Session": session})[0] == 200
        proxy.settle()
    raw = {str(p): d for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p)}
    later = b"".join(d for p, d in raw.items() if "later" in p)
    assert b"at the psql prompt" in later and b"[REDACTED:" in later
    assert trace.exists() and b"psql prompt" in trace.read_bytes()
    assert [p for p, d in all_bytes_under(bead_home).items() if password.encode() in d] == []


def test_what_one_conversation_shares_with_the_others_is_a_secret_not_a_word_and_stays_looked_for(proxy_client, bead_home):
    """A README the agent read says `DB_PASSWORD=x86_64`: that conversation redacts the word as it found it, but
    shared with every other one it took "x86_64" from the person's words there (a review). Only a value no common
    word is (random letters and digits) is shared; and one shared is still looked for when the other conversation's
    capture finds a value of its own, however many values are shared (it pushed them out before the search)."""
    import json

    from conftest import all_bytes_under

    password = "Qz8vLr2TnW4k"
    planted = "\n".join(f"SERVICE_{i}_PASSWORD=Pw{i:02d}x{r(ALNUM, 10)}" for i in range(63))  # 64 with the password
    read = [
        {"role": "user", "content": "read the README"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "README.md"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "DB_PASSWORD=x86_64"}]},
    ]
    said = {
        "readme": read,
        "builder": [{"role": "user", "content": "build the x86_64 image please"}],
        # the password first, so that it is the oldest of the 64 values shared: the one a new value pushed out
        "envpaste": [{"role": "user", "content": f"my .env:\nDB_PASSWORD={password}\n{planted}"}],
        "victim": [{"role": "user", "content": f"NEW_PASSWORD=Zx9cVb8nMm77, and before I typed {password}"}],
    }
    proxy = proxy_client()
    for session, messages in said.items():
        body = json.dumps({"model": "m", "max_tokens": 16, "messages": messages}).encode()
        assert proxy.post(body, headers={"X-Bead-Session": session})[0] == 200
        proxy.settle()
    raw = {str(p): d for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p)}
    assert b"build the x86_64 image please" in b"".join(d for p, d in raw.items() if "builder" in p)
    victim = b"".join(d for p, d in raw.items() if "victim" in p)
    assert b"and before I typed" in victim and password.encode() not in victim and b"Zx9cVb8nMm77" not in victim


def test_a_key_split_by_an_invisible_character_or_in_full_width_letters_never_reaches_the_raw_file(
    proxy_client, bead_home, upstream
):
    """What the write path refuses as a credential (its normal form) the capture redacts too, in the person's
    turn and in the streamed answer: a key with a zero-width space in it, a key in full-width letters."""
    import json

    from conftest import all_bytes_under
    from fakes import Reply

    key = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    split = key[:14] + "\u200b" + key[14:]
    wide = "".join(chr(ord(c) + 0xFEE0) if c.isalnum() or c == "_" else c for c in key)
    upstream.replies.append(Reply(text=f"Your token is {split}, rotate it."))
    said = [f"in the wiki it is written {wide}", f"my github token is {split} (copied from a PDF)"]
    messages = [{"role": "user", "content": [{"type": "text", "text": t} for t in said]}]
    body = json.dumps({"model": "claude-test", "max_tokens": 64, "stream": True, "messages": messages}).encode()
    proxy = proxy_client()
    assert proxy.post(body, headers={"X-Bead-Session": "zw"})[0] == 200
    proxy.settle()
    raw = "".join(d.decode("utf-8") for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p))
    assert "Your token is" in raw and "in the wiki" in raw and raw.count("[REDACTED:github-pat]") == 3
    for form in (split, wide, key[14:], wide[14:]):
        assert form not in raw


@pytest.mark.parametrize(
    "said",
    [
        "remember that the staging db connection string is Server=db;Database=shop;User Id=sa;Password={pw};",
        "remember that the staging db is host=db dbname=shop user=app password={pw} sslmode=require",
    ],
)
def test_a_password_in_a_connection_string_is_neither_captured_nor_remembered(proxy_client, bead_home, upstream, said):
    """A password as a connection string gives it (unquoted, after `Password=`) never reaches a file, and "remember"
    writes no fact that holds it, so no later request carries it."""
    import json

    from conftest import all_bytes_under

    pw = "Summer2024!" + "rem"
    proxy = proxy_client(project="shop")
    body = json.dumps({"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": said.format(pw=pw)}]})
    assert proxy.post(body.encode(), headers={"X-Bead-Session": "conn", "X-Bead-Project": "shop"})[0] == 200
    proxy.settle()
    ask = {"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": "how do I reach the staging db?"}]}
    assert proxy.post(json.dumps(ask).encode(), headers={"X-Bead-Session": "conn2", "X-Bead-Project": "shop"})[0] == 200
    proxy.settle()
    assert any(b"staging db" in d for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p))
    assert not [p for p, d in all_bytes_under(bead_home).items() if pw.encode() in d]
    assert all(pw not in r.body.decode() for r in upstream.requests[1:])


@pytest.mark.parametrize("hide", ["\u200b", "\x7f", "\x00", "\x1b", "\u00ad", "\ufeff"])
def test_a_key_split_by_any_character_that_hides_it_is_redacted(hide):
    """A key split by a control character or an invisible one is found as the write path finds it, whole."""
    from bead.capture.secrets import credential_rules

    key = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    text = f"the token {key[:14]}{hide}{key[14:]} is old"
    assert credential_rules(text)
    clean, found = redact(text)
    assert clean == "the token [REDACTED:github-pat] is old" and found == ["github-pat"]


def test_the_normal_form_costs_little_and_grows_linearly():
    """A text none of whose characters a fold changes (any script) is read in its normal form at the cost of a set
    of its characters; one whose characters all change (full-width letters) in linear time."""
    from linear import assert_linear

    from bead.capture import secrets

    assert secrets._in_fold("plain text \u2014 with an em dash, \u00fcn\u00efc\u00f6d\u00e9 and \u6f22\u5b57 " * 1000) == []
    rng = random.Random(3)
    FULL_WIDTH = [chr(0xFF21 + i) for i in range(26)]  # noqa: N806

    def make(n: int) -> str:
        return "".join(rng.choices(FULL_WIDTH, k=n)) + "\u200b"

    assert_linear(redact, make, 500_000, limit=0.25, what="redact over full-width letters")


KEY = "ghp_aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"


@pytest.mark.parametrize(
    "mark",
    [
        "\u0301",
        "\u0430",
        "\u24d0",
        "\u00b2",
        "\U0001f130",
        "\ufb01",
        "\u1d00",
        "\ue000",
        "\u2800",
        "\U0001d173",
        "\u200b",
        "\x7f",
    ],
)
def test_whatever_the_write_path_reads_through_the_capture_redacts(mark):
    """Combining marks, look-alike, circled, superscript, squared and small-capital letters, ligatures, private-use
    and other invisible characters in a key: where the write path refuses the text, the capture redacts it whole."""
    from bead.capture.secrets import credential_rules

    text = f"token: {KEY[:10]}{mark}{KEY[10:]} ok"
    clean, found = redact(text)
    assert credential_rules(text) and found
    assert KEY[12:] not in clean and clean.startswith("token: [REDACTED:") and clean.endswith(" ok")


def test_a_long_key_with_an_invisible_character_near_its_start_is_redacted_whole():
    body = "".join(random.Random(5).choice(B64) for _ in range(1600))
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(body[i : i + 64] for i in range(0, 1600, 64))
        + "\n-----END RSA PRIVATE KEY-----"
    )
    clean, found = redact("here is the key:\n" + pem[:6] + "\u200b" + pem[6:] + "\nthanks")
    assert found and not any(body[i : i + 64] in clean for i in range(0, 1600, 64))


def test_a_lone_surrogate_is_no_reason_to_fail():
    """JSON may carry a lone surrogate (\\ud800); the scan reads it as a replacement character."""
    clean, found = redact(f"x \ud800 y {KEY}")
    assert found == ["github-pat"] and KEY not in clean


@pytest.mark.parametrize(
    "text",
    [
        # the AWS CLI's `get-secret-value`: the secret's JSON in a JSON string
        '{"SecretString": "{\\"username\\":\\"admin\\",\\"password\\":\\"SECRET\\"}"}',
        # a serialised request body in a log line, escaped twice
        '{"log": "{\\"body\\": \\"{\\\\\\"password\\\\\\": \\\\\\"SECRET\\\\\\"}\\"}"}',
        # quotes escaped in a shell or Python string
        'echo "password=\\"SECRET\\"" >> .env',
        "cfg = '{\\'password\\': \\'SECRET\\'}'",
        # and in a key split by an invisible character
        '{"b": "{\\"pass\u200bword\\": \\"SECRET\\"}"}',
    ],
)
def test_a_password_in_json_within_a_string_is_redacted_and_refused(text):
    """A password behind escaped quotes (JSON in a JSON string, an escaped shell quote) is found as the quotes read
    it: only the value goes, the escapes around it stay, and the write path refuses what the capture redacts."""
    from bead.capture.secrets import credential_rules

    secret = "Qz8vLr2TnW4xPk9s!"
    text = text.replace("SECRET", secret)
    clean, found = redact(text)
    assert secret not in clean and len(found) == 1 and found[0] in {"password-assignment", "generic-api-key"}
    assert clean == text.replace(secret, f"[REDACTED:{found[0]}]")
    assert credential_rules(text) == found


@pytest.mark.parametrize(
    "text",
    [
        # PHP's json_encode escapes every slash
        '{"DATABASE_URL": "postgres:\\/\\/app:SECRET@db\\/app"}',
        # a URL percent-encoded as a query parameter's value, as a redirect or a log line carries it
        "next=postgres%3A%2F%2Fapp%3ASECRET%40db%2Fapp",
        # JSON's and JavaScript's \\u and \\x escapes in the name or the sign
        '{"pass\\u0077ord": "SECRET"}',
        "DB_PASSWORD\\u003dSECRET",
        "DB_PASSWORD\\x3dSECRET",
        # HTML entities, decimal, hex and named
        "password&#61;SECRET",
        "password&#x3D;&quot;SECRET&quot;",
        # escaped twice: a URL encoded again inside a redirect's, an entity inside an escaped page
        "next=https%253A%252F%252Fapp%252Fcb%253Fclient_secret%253DSECRET",
        "password&amp;#61;SECRET",
    ],
)
def test_a_value_behind_an_escape_is_redacted_and_refused(text):
    """A credential whose name, sign or URL only an escape hides (JSON's \\/ and \\uXXXX, \\xHH, a URL's %HH, an
    HTML entity) is found as the escapes read: it goes, the text around it stays, and the write path refuses what
    the capture redacts."""
    from bead.capture.secrets import credential_rules

    secret = "Qz8vLr2TnW4xPk9s"
    text = text.replace("SECRET", secret)
    clean, found = redact(text)
    assert secret not in clean and found, clean
    assert clean.startswith(text[: text.index(secret) - 12]) and credential_rules(text) == found


@pytest.mark.parametrize(
    "written",
    [
        "{head}%{a:02X}%{b:02X} tail",
        "{head}\\u{a:04x}\\u{b:04x} tail",
        "{head}&#x{a:x};&#{b}; tail",
        "{head}\\x{a:02x}\\x{b:02x} tail",
    ],
    ids=["percent", "u", "entity", "x"],
)
def test_a_secret_that_ends_in_an_escape_is_redacted_to_its_end(written):
    """The escape a secret ends with goes whole: a redaction that ended inside a six-character escape left the rest
    of it (the key's last character, written otherwise) beside the redaction."""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"
    text = written.format(head=token, a=ord("5"), b=ord("A"))
    clean, found = redact(text)
    assert found == ["github-pat"] and clean == "[REDACTED:github-pat] tail", clean


@pytest.mark.parametrize(
    "text",
    [
        # a model restating a .env in Markdown: a table, a list, an arrow, inline code and bold around the name
        "| Variable | Value |\n|---|---|\n| `POSTGRES_PASSWORD` | `VALUE` |\n| `JWT_SECRET` | `VALUE` |",
        "| JWT_SECRET | VALUE |",
        "| `SESSION_SECRET` | `VALUE` (from .env) |",
        "- `POSTGRES_PASSWORD`: `VALUE`",
        "- **POSTGRES_PASSWORD** = `VALUE`",
        "- `JWT_SECRET` \u2192 `VALUE`",
        "DB_PASSWORD -> VALUE",
        # a `|` inside inline code or escaped in a cell is the value's
        "| `DB_PASSWORD` | `Tr0ub|4dorVALUE` |",
        "| `DB_PASSWORD` | `Tr0ub\\|4dorVALUE` |",
        # a tool's coloured output: grep --color=always, jq -C
        "2:DB_\x1b[01;31m\x1b[KPASSWORD\x1b[m\x1b[K=VALUE\n",
        '{\n  \x1b[34;1m"password"\x1b[0m\x1b[1;39m: \x1b[0m\x1b[0;32m"VALUE"\x1b[0m\n}',
    ],
)
def test_a_secret_behind_markup_is_redacted_and_refused(text):
    """Markup that parts a secret's name from its value (a Markdown table's cells, an arrow, inline code, a
    terminal's colours) is read through: the value goes, the markup around it stays, and the write path refuses
    what the capture redacts."""
    from bead.capture.secrets import credential_rules

    secret = "Tr0ub4dor&3xQ!9k"
    text = text.replace("VALUE", secret)
    clean, found = redact(text)
    assert secret not in clean and found and credential_rules(text) == found, clean
    assert clean.count("[REDACTED:") == text.count(secret) and "\x1b[" * ("\x1b" in text) in clean
    assert "Tr0ub" not in clean and "4dor" not in clean, "no part of a value is left beside its redaction"


@pytest.mark.parametrize(
    "text",
    [
        "| Variable | Description | Default |\n|---|---|---|\n| `DB_PASSWORD` | Password for the database | none |",
        "| `SECRET_KEY` | Django's secret key | required |\n| `API_TOKEN` | string | yes |",
        "| `GITHUB_TOKEN` | Token with repo scope, see docs |",
        "| `DB_PASSWORD` | `${DB_PASSWORD}` |",
        "| `DB_PASSWORD` | `changeme` |",
        "TOKEN -> refreshed every hour",
        "- `DB_PASSWORD`: the database password",
        "`password` \u2192 `hashed_password`",
        "cat app.log | grep password | wc -l",
        "\x1b[32mPASSED\x1b[0m tests/test_auth.py::test_password_reset",
        # a second column that is no value (where a variable is used, its service, its region)
        "| Variable | Used in |\n|---|---|\n| `DB_PASSWORD` | `docker-compose.yml` |\n| `OPENAI_API_KEY` | `gpt-4o-2024-08-06` |",
        "| `AWS_SECRET_ACCESS_KEY` | Where | \n|---|---|\n| `AWS_SECRET_ACCESS_KEY` | `us-east-1` |",
        # type-annotated signatures and arrow functions
        "def login(self, user: str, password: str) -> tuple[Literal['OK'], list[bytes]]: ...",
        "def check_password_hash(pwhash: str, password: str) -> bool:",
        "type Hasher = (password: string) => Promise<string>;",
        "pub fn hash_password(password: &str) -> String {",
        "const clean = (token) => token.trim();",
        "$row['password'] => $value,",
        # a command in inline code (command substitution)
        "JWT_SECRET=`openssl rand -base64 48`",
        "PASSWORD=`head -c 32 /dev/urandom | base64`",
        # placeholders with digits or a colon
        "DB_PASSWORD=<50+ random chars>",
        "password: <base64:32 bytes>",
    ],
)
def test_markup_around_a_secrets_name_with_no_value_is_kept(text):
    assert redact(text) == (text, [])


def test_markup_costs_linear_time():
    from linear import assert_linear

    assert_linear(redact, lambda n: "x\u2192" * (n // 2), 256 * 1024, limit=0.5, what="arrows on one line")
    assert_linear(redact, lambda n: "const f=(a)=>a+1;" * (n // 17), 256 * 1024, limit=0.5, what="minified JS")
    assert_linear(redact, lambda n: "| `A` | " * (n // 8), 256 * 1024, limit=0.5, what="cells on one line")
    # a delimiter row that fails at its end: every split of its spaces between two columns was tried once (2^n)
    row = lambda n: "| a | b |\n| " + " ".join(["-"] * (n // 2)) + " x\n| `DB_PASSWORD` | `v` |"  # noqa: E731
    assert_linear(redact, row, 64 * 1024, limit=0.5, what="a delimiter row that fails at its end")

    assert_linear(redact, lambda n: "| `A` | `b` |\n" * (n // 14), 256 * 1024, limit=0.5, what="table rows")
    assert_linear(redact, lambda n: "\x1b[1m`x` -> |" * (n // 16), 256 * 1024, limit=0.5, what="marks")


@pytest.mark.parametrize(
    "unit",
    [
        # an alternative's unbounded loop kept alive to the text's end while another alternative of the same rule
        # matched a few characters on: every match scanned the rest of the text (session-cookie, oracle-passwords,
        # db-client-passwords; 18-33 s on a megabyte)
        "cookies={document.cookie='a=AAAAAAAAAAAAAAAA';",
        " a=/sqlplus catalog=u/pwd1@",
        " -o a/redis-cli -o set=password('abcd')",
    ],
)
def test_a_rules_short_match_beside_another_alternatives_long_loop_costs_linear_time(unit):
    from linear import assert_linear

    assert_linear(redact, lambda n: unit * (n // len(unit)), 256 * 1024, limit=0.5, what=unit)


def test_many_distinct_characters_that_fold_cost_linear_time():
    """The fold's map back found each changed character with a class of them all, which Python's engine searches
    one by one above U+FFFF: distinct private-use characters (they fold to nothing) and a key cost their count
    times the text's length (3.8 s for 65,536 of them)."""
    from linear import assert_linear

    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    many = lambda n: "".join(chr(0xF0000 + i) for i in range(n)) + " token: " + token  # noqa: E731
    assert redact(many(3))[1] == ["github-pat"]
    assert_linear(redact, many, 64 * 1024, limit=0.3, what="distinct characters above U+FFFF that fold")


def test_a_character_beyond_the_bmp_written_as_a_surrogate_pair_is_read():
    """JSON writes a character beyond the BMP as two \\u escapes (json.dumps' default): an invisible one splitting a
    key is read, as written plainly it is."""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    clean, found = redact(json.dumps({"s": token[:20] + "\U000e0020" + token[20:]}))
    assert found == ["github-pat"] and clean == '{"s": "[REDACTED:github-pat]"}'


def test_escapes_alone_are_no_secret_and_cost_linear_time():
    """Percent-encoded paths, entities and \\u escapes around ordinary words find nothing; half a megabyte of them (and
    of escapes that write no character) is read in linear time."""
    from linear import assert_linear

    text = "GET /search?q=caf%C3%A9%20menu&amp;page=2 &#8212; say \\u0022hi\\u0022, 100% done &lt;b&gt;"
    assert redact(text) == (text, [])
    assert_linear(redact, lambda n: "%3D%41&#61;\\u0041\\x00&#x1F;password" * (n // 38), 500_000, limit=0.25, what="escapes")


def test_escaped_quotes_alone_are_no_secret_and_cost_linear_time():
    """Escaped quotes around ordinary words find nothing; half a megabyte of backslashes and quotes is read in linear
    time."""
    from linear import assert_linear

    text = '{"msg": "say \\"hello world\\" to me", "path": "C:\\\\", "token_type": \\"bearer\\"}'
    assert redact(text) == (text, [])
    assert_linear(redact, lambda n: ("\\" * 97 + '"password\\": \\"') * (n // 110), 500_000, limit=0.25, what="escaped quotes")


def test_a_key_split_by_a_lone_surrogate_is_refused_by_the_write_path_too():
    """The capture reads a lone surrogate as U+FFFD; the write path and the capture both read that as nothing, so
    the key it splits is found whole."""
    from bead.capture.secrets import credential_rules

    for text in (f"{KEY[:14]}\ud800{KEY[14:]}", f"{KEY[:14]}\ufffd{KEY[14:]} ok"):
        clean, found = redact(text)
        assert credential_rules(text) == found == ["github-pat"] and KEY[16:] not in clean


def test_a_finding_that_overlaps_an_earlier_one_extends_it():
    """A recovery-code list's rule takes a JWT's header (it holds a digit); the JWT's own finding extends the
    redaction to its end, so no part of it is left."""
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJyb290In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    clean, found = redact("GitHub recovery codes:\n4f2k9-qx7lm\n8f2k1-9qxl2\n" + jwt + "\nthanks")
    assert found and not any(part[4:] in clean for part in jwt.split("."))
    assert clean.startswith("GitHub recovery codes:\n") and clean.endswith("\nthanks")


@pytest.mark.parametrize("name", ["JWT_SECRET", "SMTP_PASS", "SESSION_SECRET", "ADMIN_PWD"])
def test_a_env_inside_a_tools_json_input_is_read_with_its_line_breaks(name):
    """A tool's input written as JSON (Claude Code's MultiEdit, Codex's `bash -lc "cat > .env <<EOF..."`) holds a
    .env's lines joined by escaped line breaks: `\\nJWT_SECRET=x` has no word start before the name until the escape
    is read as the line break it is."""
    text = '{"edits": [{"new_string": "DEBUG=1\\n' + name + '=mysecret123\\nLOG=info\\n"}]}'
    clean, found = redact(text)
    assert "mysecret123" not in clean and found
    assert clean.replace("[REDACTED:" + found[0] + "]", "mysecret123") == text, "only the value goes; the escapes stay"


def test_a_kubernetes_secrets_base64_data_is_read_decoded():
    """`kubectl get secret -o yaml` (or -o json) shows each value base64-encoded: a value that decodes to a secret
    (a database URL with its password, a Slack webhook, a password under its name) goes, the others stay."""
    import base64

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    url = b64("postgres://app:" + r(ALNUM, 14) + "@db:5432/app")
    hook = b64("https://hooks.slack.com/services/T0" + r(ALNUM, 8) + "/B0" + r(ALNUM, 8) + "/" + r(ALNUM, 24))
    password = b64("Xk9#mQ2vLp7" + r(ALNUM, 5))
    user = b64("admin")
    yaml_text = f"kind: Secret\ndata:\n  DATABASE_URL: {url}\n  SLACK_WEBHOOK_URL: {hook}\n  username: {user}\n"
    json_text = f'{{"kind": "Secret", "data": {{"DB_PASSWORD": "{password}", "user": "{user}"}}}}'
    for text, secrets in ((yaml_text, (url, hook)), (json_text, (password,))):
        clean, found = redact(text)
        assert not any(s in clean for s in secrets) and found, clean
        assert user in clean


def test_every_base64_value_of_a_large_secrets_dump_is_read():
    """A namespace's Secrets (`kubectl get secrets -o json`, `vault kv get -format=json`) hold thousands of base64
    values: the one with the database URL is found however many come before it (bead read the first 1,000 runs
    of a text and let the rest through), and a password under its name in the middle too."""
    import base64
    import json

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    data = {f"nginx_{i}.conf": b64(f"listen 80{i % 100:02d}\n") for i in range(1500)}
    data["DB_PASSWORD"] = password = b64("Xk9#mQ2vLp7" + r(ALNUM, 5))
    data |= {f"site_{i}.conf": b64(f"server_name s{i}.example\n") for i in range(1500)}
    data["app.env"] = url = b64("DATABASE_URL=postgres://app:" + r(ALNUM, 14) + "@db:5432/app\n")
    clean, found = redact(json.dumps({"kind": "Secret", "data": data}))
    assert password not in clean and url not in clean, found
    assert data["nginx_7.conf"] in clean and data["site_1499.conf"] in clean


def test_base64_that_decodes_to_no_secret_or_to_bytes_stays_and_costs_linear_time():
    import base64

    from linear import assert_linear

    harmless = base64.b64encode(b"just some harmless text here").decode()
    blob = base64.b64encode(bytes(range(256)) * 3).decode()
    for text in (f"note: {harmless}", f"integrity sha512-{blob}", "the implementation internationalize"):
        assert redact(text) == (text, [])
    assert_linear(redact, lambda n: (harmless + " ") * (n // 41), 250_000, limit=0.25, what="base64 runs")


def test_base64_unpadded_wrapped_or_nested_is_read_too():
    """`base64` wraps at 76 columns (a password split across lines), some tools drop the padding, and a Secret's
    value may hold an encoded value again."""
    import base64

    secret = "Zq8vK2pLm9Xw4Rt7"
    url = f"postgres://app:{secret}@db.internal.example.com:5432/app?sslmode=require"
    env = (f"DATABASE_URL={url}\nREDIS_URL=redis://cache:6379/0\n") * 2
    encoded = base64.b64encode(env.encode()).decode()
    wrapped = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    once = base64.b64encode(url.encode()).decode()
    for text in (
        f"DATABASE_URL: {once.rstrip('=')}",
        f"data: |\n{wrapped}\n",
        f"API: {base64.b64encode(once.encode()).decode()}",
    ):
        clean, found = redact(text)
        assert found and not any(part in clean for part in (once.rstrip("="), encoded[:76])), clean


@pytest.mark.parametrize(
    "form",
    [
        "DATABASE_URL_B64={}",
        "export DEPLOY_KEY_B64={}",
        "kubectl create secret generic db --from-literal=url={}",
        "GCP_SA_JSON_B64={}\n",
    ],
)
def test_base64_right_after_an_equals_sign_is_read(form):
    """`NAME_B64=<base64>` in a `.env` file: a run right after "=" was never decoded (the run's start may not follow
    a base64 character or "="), so a base64 URL with its password, a PEM key or a service account's JSON went to
    the raw log in clear, where the same run after `creds: ` was redacted (an outside review)."""
    import base64

    pem = (
        "-----BEGIN PRIVATE KEY-----\n" + "\n".join(("Ab3+Zq8vK2pLm9Xw" * 4) for _ in range(8)) + "\n-----END PRIVATE KEY-----\n"
    )
    values = [
        base64.b64encode(b"postgres://admin:Zq8pLm2Rt7vXk9@db:5432/app").decode(),
        base64.b64encode(pem.encode()).decode(),
        base64.b64encode(json.dumps({"type": "service_account", "private_key": pem}).encode()).decode(),
    ]
    for value in values:
        clean, found = redact(form.format(value))
        assert found and value[10:50] not in clean, (form, clean)


def test_base64_runs_read_together_find_what_each_alone_finds():
    """The decoded runs of a text are scanned as one text: a match may not run from one into the next (a value
    that ends in `password:` before a run that holds `key=...` kept that key in clear), and a private key cut off
    before its END line marks its own run, not every run after it (an adversarial review's cases)."""
    import base64

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    key = b64("key=Pz8Qw3Lm7Rx2Vk9T")
    clean, _ = redact(f"data:\n  db.yaml: {b64('user: admin' + chr(10) + 'password:')}\n  worker.conf: {key}\n")
    assert key not in clean
    notes = [b64(f"hello world value number {i}") for i in range(3)]
    cut = b64("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + r(B64, 40))
    clean, found = redact(f"ca.key: {cut}\n" + "".join(f"note{i}: {n}\n" for i, n in enumerate(notes)))
    assert cut not in clean and all(n in clean for n in notes), found


def test_a_key_in_powershells_encoded_command_or_in_hex_is_redacted():
    """Two encodings a tool's output shows a key in went through whole: PowerShell's -EncodedCommand (base64 of
    UTF-16LE, read as UTF-8 it was NULs between letters) and hex (`xxd -p .env`, wrapped at 60 digits a line). Both
    are read as the text they spell; a hash, which spells no text, stays."""
    tok = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    encoded = base64.b64encode(f"$env:GITHUB_TOKEN='{tok}'".encode("utf-16-le")).decode()
    out, found = redact(f"$ powershell -EncodedCommand {encoded}")
    assert encoded not in out and found == ["base64-github-pat"], (out, found)
    hexed = f"PATH=/usr/bin\nGITHUB_TOKEN={tok}\nDEBUG=1\n".encode().hex()
    wrapped = "\n".join(hexed[i : i + 60] for i in range(0, len(hexed), 60))
    out, found = redact(f"$ xxd -p .env\n{wrapped}\n$ echo done")
    assert out == "$ xxd -p .env\n[REDACTED:hex-github-pat]\n$ echo done" and found == ["hex-github-pat"], (out, found)
    # A file whose last line is short (`xxd -p` of 30k+1 to 30k+7 bytes): that line is read with the block.
    short_end = ("A" * 9 + "\nGITHUB_TOKEN=" + tok).encode().hex()
    out, found = redact("\n".join(short_end[i : i + 60] for i in range(0, len(short_end), 60)))
    assert out == "[REDACTED:hex-github-pat]", (out, found)
    out, found = redact(f"inline {hexed} there")
    assert hexed not in out and found == ["hex-github-pat"]
    plain = "commit 3f2a9c1e5b7d8f0a1c3e5b7d9f1a3c5e7b9d1f3a, sha256 " + "ab" * 32
    assert redact(plain) == (plain, [])


def test_hex_lines_cost_linear_time():
    from linear import assert_linear

    assert_linear(redact, lambda n: ("ab" * 30 + "\n") * (n // 61), 256 * 1024, limit=0.5, what="xxd -p lines")
    assert_linear(redact, lambda n: ("4142" * 20 + " ") * (n // 81), 256 * 1024, limit=0.5, what="hex runs that spell text")


def test_a_scan_a_chunk_at_a_time_finds_what_one_scan_of_the_whole_finds(monkeypatch):
    """The base64 and hex scans go over a large text a chunk at a time (Python's engine held the GIL for a whole
    30 MB scan: the proxy's other requests waited 1.3 s). Chunks end only at a line break no run crosses, so with
    chunks of 60 characters a wrapped base64 block of a key, a run, odd and even hex runs and `xxd -p` lines are
    found as with one chunk."""
    from bead.capture import secrets

    key = "sk-ant-api03-" + r(ALNUM, 60)
    wrapped = base64.encodebytes(f"ANTHROPIC_API_KEY={key}\n".encode() * 3).decode()  # 76-character lines
    hexed = f"export TOKEN={key}".encode().hex()
    text = "\n".join(
        [
            "a log line",
            wrapped,
            "between " + base64.b64encode(f"password={r(ALNUM, 12)}x9!".encode()).decode() + " after",
            "odd " + "a1" * 30 + "f" + " even " + "0f" * 25,
            *[hexed[i : i + 60] for i in range(0, len(hexed), 60)],
            "the end",
        ]
    )
    whole = secrets._findings(text)
    monkeypatch.setattr(secrets, "SCAN_CHUNK", 60)
    spans = list(secrets._chunks(text, secrets._wrapped))
    assert spans[0][0] == 0 and spans[-1][1] == len(text) and len(spans) > 3
    assert all(a[1] == b[0] and text[a[1] - 1] == "\n" for a, b in zip(spans, spans[1:], strict=False))
    assert secrets._findings(text) == whole
    assert {f.rule.split("-")[0] for f in whole} >= {"base64", "hex"}, whole
    for pattern in (secrets._BASE64_BLOCK, secrets._HEX_RUN, secrets._HEX_LINE):
        assert [m.span() for m in secrets._chunked(pattern, text, secrets._wrapped)] == [m.span() for m in pattern.finditer(text)]


def test_a_table_or_base64_inside_a_tools_json_input_is_read():
    """An edit tool's input holds its edits as JSON (MultiEdit's `edits`): the escapes were read, but a Markdown
    table or wrapped base64 inside them was not read as the text's own are, and the password reached the raw log."""
    from bead.core.capture import tool_input_text

    table = "| Variable | Value |\n|---|---|\n| DB_PASSWORD | Kx9#mQ2vL7pZ4w |\n"
    text = "[tool_use MultiEdit]" + tool_input_text({"file_path": "d.md", "edits": [{"old_string": "x", "new_string": table}]})
    assert "Kx9#mQ2vL7pZ4w" not in redact(text)[0]
    env = base64.b64encode(b"NODE_ENV=production\nDB_PASSWORD=Tr0ub4dor&3xQY78Su\n").decode()
    text = "[tool_use Write]" + tool_input_text({"file_path": "e.b64", "content": env})
    assert env not in redact(text)[0]


def test_openssls_base64_lines_of_64_are_read_as_one_block():
    """`openssl base64` wraps at 64 columns (GNU's base64 at 76): each line was decoded alone, and a line holding
    the middle of a key with no name before it was left."""
    env = b"NODE_ENV=production\nANTHROPIC_API_KEY=sk-ant-api03-" + b"Zq8" * 31 + b"AA\n"
    out = redact("\n".join(textwrap.wrap(base64.b64encode(env).decode(), 64)))[0]
    dec = b"".join(base64.b64decode(line) for line in out.splitlines() if "REDACTED" not in line)
    assert b"Zq8Zq8" not in dec


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_a_carriage_return_ends_a_line_for_every_rule(end):
    """RE2's `$` does not match before a carriage return: a .pgpass or ini file with Windows line endings kept its
    passwords."""
    text = f"db.internal:5432:shop:app:Kx9mQ2vL7pZ4w{end}[client]{end}pass = Tr0ub4dorX3q{end}"
    clean = redact(text)[0]
    assert "Kx9mQ2vL7pZ4w" not in clean and "Tr0ub4dorX3q" not in clean and clean.count(end) == 3


def _xxd(data: bytes) -> str:
    """`xxd`'s output: an offset, eight groups of two bytes, the characters."""
    lines = []
    for at in range(0, len(data), 16):
        row = data[at : at + 16]
        groups = " ".join(row[i : i + 2].hex() for i in range(0, len(row), 2))
        chars = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        lines.append(f"{at:08x}: {groups:<39}  {chars}")
    return "\n".join(lines) + "\n"


def _hexdump_c(data: bytes) -> str:
    """`hexdump -C`'s output: an offset, sixteen bytes one by one (two spaces after the eighth), |the characters|."""
    lines = []
    for at in range(0, len(data), 16):
        row = data[at : at + 16]
        left = " ".join(f"{b:02x}" for b in row[:8])
        right = " ".join(f"{b:02x}" for b in row[8:])
        chars = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        lines.append(f"{at:08x}  {left:<23}  {right:<23}  |{chars}|")
    return "\n".join([*lines, f"{len(data):08x}"]) + "\n"


@pytest.mark.parametrize("dump", [_xxd, _hexdump_c], ids=["xxd", "hexdump-C"])
def test_a_password_in_a_hex_dump_is_redacted_though_its_characters_are_split_across_lines(dump):
    """`xxd .env` to look for a stray CR: the password's characters ran across two lines' character columns, and
    only the first line's part was redacted. A dump is read as the bytes its hex spells."""
    data = b"NODE_ENV=production\nDB_PASSWORD=Tr0ub4dor&3xQY78Su\r\nPORT=8080\n"
    clean = redact(dump(data))[0]
    assert "3xQY" not in clean and "Tr0u" not in clean and "b4do" not in clean, clean
    plain = dump(b"NODE_ENV=production\nPORT=8080\nLOG_LEVEL=debug, nothing secret here\n")
    assert redact(plain) == (plain, [])


def test_hex_dump_lines_cost_linear_time():
    from linear import assert_linear

    def dump(n: int) -> str:
        return _xxd(((b"DB_PASS" + bytes(range(256))) * (n // 1000 + 1))[: n // 4])

    assert_linear(redact, dump, 256 * 1024, limit=0.5, what="xxd lines")
    assert_linear(redact, lambda n: ("00000000: 4142 " * 4 + "|\n") * (n // 61), 256 * 1024, limit=0.5, what="near dumps")


def _raw_of(bead_home) -> str:
    from conftest import all_bytes_under

    return "".join(d.decode("utf-8", "replace") for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p))


@pytest.mark.parametrize("unread", [True, False], ids=["unread-answer", "a-later-answer"])
def test_a_printed_secret_is_redacted_in_an_answer_the_proxy_could_not_read_and_in_a_later_one(
    proxy_client, bead_home, upstream, unread
):
    """Two paths a review found the model's repeat of a printed value captured in clear: an answer the proxy cannot
    read (compressed), which the next request's history brings, and an answer one turn later ("what was it
    again?"). The capture of an unread answer reads the prints before it, and the values a conversation's prints
    held are looked for in its later turns (in the proxy's memory, never on disk)."""
    from fakes import Reply

    said = f"It's {PRINTED_PASSWORD} on staging."
    if unread:
        answer = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": said}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        upstream.replies.append(Reply(kind="raw", body=json.dumps(answer).encode(), headers=[("content-encoding", "br")]))
        upstream.replies.append(Reply(kind="json", text="ok"))
    else:
        upstream.replies.append(Reply(kind="json", text=said))
        upstream.replies.append(Reply(kind="json", text=f"Again: {PRINTED_PASSWORD}."))
    data = {
        "model": "claude-test",
        "max_tokens": 64,
        **json.loads(_printed_requests("printenv DB_PASSWORD", PRINTED_PASSWORD + "\n")["anthropic"][1]),
    }
    proxy = proxy_client()
    assert proxy.post(json.dumps(data).encode(), headers={"X-Bead-Session": "repeat"})[0] == 200
    proxy.settle()
    data["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": said}]},
        {"role": "user", "content": "what was it again?"},
    ]
    assert proxy.post(json.dumps(data).encode(), headers={"X-Bead-Session": "repeat"})[0] == 200
    proxy.settle()
    raw = _raw_of(bead_home)
    assert "on staging" in raw and ("Again:" in raw or unread)
    assert PRINTED_PASSWORD not in raw


@pytest.mark.parametrize("value", ["sunshinesky", "48213977", "Qz8vLr2TnW4xPk9s"])
def test_a_value_printed_alone_under_codexs_output_header_is_redacted_and_the_header_kept(mem, value):
    """Codex's exec_command gives the output under a header of its own (`Chunk ID: ...`, `Wall time: ...`, `Process
    exited with code 0`, `Original token count: 3`, `Output:`), as the recorded rollouts have it: the one-word rule
    read the whole text, so the value went through, and the header's `Original` was taken for a printed value and
    redacted in the assistant's words too (a review). The header is left as it is, the output read alone."""
    output = (
        f"Chunk ID: cd5a91\nWall time: 0.4512 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\n{value}\n"
    )
    body = {
        "model": "gpt-test",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "what is the db password?"}]},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": "printenv DB_PASSWORD"}),
            },
            {"type": "function_call_output", "call_id": "c1", "output": output},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "The Original value is set."}]},
        ],
    }
    raw = _captured(mem, "responses", json.dumps(body).encode(), "codex-one")
    assert value.encode() not in raw and b"[REDACTED:printed-secret]" in raw
    assert b"Original token count: 3\nOutput:" in raw and b"The Original value is set." in raw


@pytest.mark.parametrize(
    "form",
    [
        "const key = 'sk-proj-' +\n  '{a}' +\n  '{b}';",
        'key = ("sk-proj-{a}"\n       "{b}")',
        'OPENAI_API_KEY = "sk-proj-{a}" + "{b}"',
    ],
    ids=["js-plus", "python-implicit", "one-line-plus"],
)
def test_a_key_split_across_joined_string_literals_goes_whole(form):
    """A key split in two string literals for a line's length: its first half was redacted and the second left in
    clear (an outside review). The literals are read joined, and the redaction covers both halves and the join."""
    a, b = "Zq8vK2pLm9Xw4Rt7" * 3, "Hn3bV6cX9zQ1wE5r" * 4
    text = form.format(a=a, b=b)
    clean, found = redact(text)
    assert found and a[-12:] not in clean and b[:12] not in clean and b[-12:] not in clean, clean


def test_joined_literals_cost_linear_time_and_leave_ordinary_code():
    from linear import assert_linear

    for code in ('x = "" + y', 'print("a" "b")', 'greeting = "Hello " + name + " world"', "s = 'ab' + 'cd'"):
        assert redact(code) == (code, [])
    assert_linear(redact, lambda n: "'" + " " * n + "x", 250_000, limit=0.25, what="a quote before blanks")
    assert_linear(redact, lambda n: "'ab' + " * (n // 7), 250_000, limit=0.25, what="joins")


def test_a_word_printed_where_there_is_no_value_is_not_looked_for_in_the_rest_of_the_conversation(mem):
    """`node -e 'console.log(process.env.API_TOKEN)'` printing `undefined`: the one word is redacted where it was
    printed, but it is no value to look for again: the assistant's "the variable is undefined in this shell" and a
    stack trace's `undefined` stay."""
    data = json.loads(_printed_requests("echo $API_TOKEN", "undefined\n")["anthropic"][1])
    data["messages"].append({"role": "assistant", "content": "The variable is undefined in this shell; set it first."})
    raw = _captured(mem, "anthropic", json.dumps(data).encode(), "no-value")
    assert b"The variable is undefined in this shell" in raw


def test_a_printing_commands_output_costs_linear_time_whatever_its_lines():
    """The pattern for a harness's header before the output could split a line at any space, so eight lines of prose
    under a printing command held capture for 7 to 16 s, and a crafted output for hours; and each `Output:` header
    recursed, so thousands of them ended every capture of the conversation in a RecursionError (a review). The
    header is found with one look at the text's start, once."""
    from linear import assert_linear

    from bead.capture.secrets import redact_printed

    assert_linear(redact_printed, lambda n: ("A" + " a" * 19 + "\n") * (n // 40) + "X", 250_000, limit=0.25, what="prose lines")
    stacked = "Ab c\nOutput:\n" * 8000 + PRINTED_PASSWORD + "\n"
    clean, hit = redact_printed(stacked)
    assert hit and PRINTED_PASSWORD not in clean


@pytest.mark.parametrize("output", ["admin\nSummertime\n", "localhost\n5432\nappuser\nMonkeybusiness\n"])
def test_a_capitalised_password_among_other_printed_words_is_redacted(output):
    """`printenv DB_USER DB_PASSWORD` printing `admin` and `Summertime`: a capitalised word had been taken for a
    harness's and kept (a review); Codex's header is now skipped as such instead, and an error's words stay."""
    from bead.capture.secrets import redact_printed

    password = output.split()[-1]
    assert password not in redact_printed(output)[0]
    assert redact_printed("Permission denied\nNo such file or directory\n")[1] is False


@pytest.mark.parametrize("printed", ["string", "production", "configured", "undefined"])
def test_a_common_word_printed_alone_is_not_looked_for_in_the_persons_later_words(mem, printed):
    """`node -e "console.log(typeof process.env.STRIPE_SECRET_KEY)"` printing `string`, `jq -r .environment` printing
    `production`: redacted where printed, but looked for again they took everyone's words from the person's next
    message (a review). Such words are not looked for again."""
    data = json.loads(_printed_requests("echo $POSTGRES_PASSWORD", printed + "\n")["anthropic"][1])
    said = f"the {printed} setting looks right, and TypeError: Cannot read properties of undefined"
    data["messages"] += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": said}]
    raw = _captured(mem, "anthropic", json.dumps(data).encode(), "common-word")
    assert said.encode() in raw


def test_a_long_printed_output_is_not_held_to_look_for_again():
    """A printing command's whole output of megabytes (a minified secrets file) was held in the proxy's memory as one
    value to look for (a review): a value is held only up to KNOWN_VALUE_CHARS."""
    from bead.core.capture import KNOWN_VALUE_CHARS, _spreadable

    assert not _spreadable("Zq8" * KNOWN_VALUE_CHARS) and _spreadable(PRINTED_PASSWORD)


def test_a_key_a_terminal_wrapped_onto_the_next_line_goes_whole():
    """A key pasted from a terminal or a mail that wrapped it (`sk-ant-api03-...` and its rest on the next line): the
    rule found the first line's part and the rest stayed in clear (an outside review). A secret that ends its line is
    taken on through the next lines of a key's characters alone; a `NAME=value` line, a word of one kind of letter,
    or a line with a space is text of its own."""
    first, rest = "sk-ant-api03-" + "Zq8vK2pLm9Xw4Rt7" * 3, "Hn3bV6cX9zQ1wE5rHn3bV6cX9zQ1wE5rHn3bV6cX9zQ1wE5AA"
    clean, found = redact(f"here it is:\n{first}\n{rest}\n\nthanks")
    assert found and rest[:20] not in clean and clean.endswith("\n\nthanks")
    kept = f"ANTHROPIC_API_KEY={first}\nALLOWED_HOSTS\nREADME.md is here\n"
    assert redact(kept)[0] == "ANTHROPIC_API_KEY=[REDACTED:anthropic-key]\nALLOWED_HOSTS\nREADME.md is here\n"
    assert redact(f"{first}\nDEBUG=1\n")[0] == "[REDACTED:anthropic-key]\nDEBUG=1\n"


GH_KEY = "ghp_" + "Zq8vK2pLm9Xw4Rt7Hn3bV6cX9zQ1wE5rAbCd"


@pytest.mark.parametrize(
    "text, rest",
    [
        # wrapped where the first line's part is too short for its rule, the rest found by no rule alone
        (f"gh: {GH_KEY[:6]}\n{GH_KEY[6:]}\ndone\n", GH_KEY[6:]),
        (f"token {GH_KEY[:8]}\n   {GH_KEY[8:30]}\n   {GH_KEY[30:]} done", GH_KEY[8:30]),
        (f"export GITHUB_TOKEN={GH_KEY[:10]}\n{GH_KEY[10:]}\nnext line", GH_KEY[10:]),
        ("sk-ant-api03-Zq8v\n" + "K2pLm9Xw4Rt7" * 6 + "Hn3bV6cX9zQ1wE5AA\nthanks", "K2pLm9Xw4Rt7" * 6),
        # a key whose line holds a password rule's short finding before it
        ("export GITHUB_TOKEN=" + GH_KEY[:10] + "\n  " + GH_KEY[10:] + "\nok", GH_KEY[10:]),
        # a no-break space (a web page's, a word processor's) inside the key
        (f"key: {GH_KEY[:15]}\u00a0{GH_KEY[15:]} ok", GH_KEY[15:]),
        (f"key: {GH_KEY[:20]}\u202f{GH_KEY[20:]} ok", GH_KEY[20:]),
        ("sk-ant-api03-" + "Zq8vK2pLm9Xw4Rt7" * 3 + "\u00a0" + "Hn3bV6cX9zQ1wE5r" * 3 + "AA thanks", "Hn3bV6cX9zQ1wE5r"),
        # a second review's: the first part a rule finds alone, the rest before a closing quote
        (
            'export TOKEN="sk-ant-api03-' + "Zq8vK2pLm9Xw4Rt7Hn3bV6cX9zQ1wE5r" + "\n" + "Zq8vK2pLm9Xw4Rt7" * 4 + 'AA" ok',
            "Zq8vK2pLm9Xw4Rt7" * 2,
        ),
    ],
    ids=[
        "prefix-alone",
        "three-lines",
        "env-line",
        "anthropic",
        "env-indented",
        "nbsp",
        "narrow-nbsp",
        "nbsp-after-match",
        "quoted",
    ],
)
def test_a_key_broken_where_no_rule_sees_it_whole_goes_whole(text, rest):
    """A key broken by a line break where the first line's part matches no rule alone (`ghp_Zq` at a line's end, a
    short value), or by a no-break space a web page put in it: the rest, or the whole key, stayed in clear (an
    outside review). The parts are read as one, and what follows the key stays."""
    clean, found = redact(text)
    assert found and rest not in clean and GH_KEY[4:14] not in clean, clean
    after = text.rstrip().rsplit(None, 1)[-1]  # the word after the key
    assert clean.rstrip().endswith((f" {after}", f"\n{after}")), clean


@pytest.mark.parametrize(
    "text",
    [
        f"Token: {GH_KEY}\nInstallation\nmore",
        "see the README\nFirst install it\nconfig2\nvalue",
        "here is my .env\nDB_USER=app2\nDB_HOST=db\n",
        "abc\u00a0def 12\u00a0kg, version\u00a0v1.2.3 and pip\u00a0install foo2bar3baz\n",
        "build_step_42\nrelease_2024_final\nx86_64-linux-gnu\n",
        "123e4567-e89b-12d3\na456-426614174000\n",
        # a review's: a rule that knows a secret by the words around it made one of two lines' words, and a key's
        # run past its match took the next line's word
        "# Initialize the token bucket\nmax_requests_per_15_minutes = 300\n",
        "Rotate your token regularly\nGITHUB_TOKEN_V2 should replace it\n",
        "x/METADATA,sha256=XXLcouOHyNK0GAto7ofBW2R1HgWRAKbbWIkeyZlURcM,4147\r\nrpds_py-2026.9.1.dist-info/RECORD,,\r\n",
        "export DB_PASSWORD=hunter22\nDone\n",
        f"{GH_KEY[:30]}\n{GH_KEY[30:]}\nThanks\n",
        f"{GH_KEY[:12]}\n{GH_KEY[12:]}\nv2 replaces the old one\n",
        f"api_key: {GH_KEY[:12]}\n  {GH_KEY[12:]}\ndb2: postgres\n",
        f"token {GH_KEY}\u00a0v2 is the new one\n",
        f"new PAT below\n{GH_KEY[:30]}\n{GH_KEY[30:]}\n",
        # a second review's: rules that know a secret by a name or header before it (not by its own prefix)
        "gnutls_x509_spki_get_salt_size: Added\ngnutls_x509_spki_set_salt_size: Added\n",
        "we switched to Bearer authentication\nOAuth2 client credentials are next",
        "x-api-key: required\nx-ms-version2: 2021-08-06",
        "sk-proj-" + "Zq8vK2pLm9Xw4Rt7Hn3bV6cX9zQ1wE5r" * 4 + "\u00a0GPT4o pour le mod\u00e8le",
        # a third review's: a prefix inside a word (`BOOT.DSK`'s `SK`), an identifier that begins like a key
        # (`fw_boot`, `hf_hub`) before a hash line, a word of the text after a key found whole
        "0e1380dc2a2a8ca73ff5ecffeae152d4ff14842037209ce3f46fd25ae36c651a  BOOT.DSK\n"
        "4a91b7f7db71026eccf657f8078bac83f71e837ae4fba66e15368508d3aef3c1  GAMES.DSK\n",
        "98cc732134d59ff5e7374d1049e568314b39aec9  fw_boot\n5c3066d2be360597ab87a3d881c80852ce6b80f0  fw_image\n",
        "7b0f3434b216331dd4b793539d715b8b5c00fbce Switch downloads to hf_hub\nc6ae84e2b573d66b0fc30cf76d5ec1792b0e927e Vendor\n",
        "my token is eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        "\nOAuth2Client is what reads it\n",
    ],
)
def test_words_after_a_break_are_no_key_unless_a_rule_finds_the_parts_together(text):
    """Lines of ordinary words, names and numbers are joined only to be read, never redacted for being joined: only
    a rule that finds a key across the break redacts, and only the key's parts."""
    clean = redact(text)[0]
    for word in (
        "Installation",
        "First install",
        "DB_HOST=db",
        "DB_USER=app2",
        "12\u00a0kg",
        "pip\u00a0install",
        "release_2024",
        "token bucket\nmax_requests_per_15_minutes",
        "GITHUB_TOKEN_V2",
        "4147\r\nrpds_py-2026",
        "\nDone\n",
        "\nThanks\n",
        "v2 replaces",
        "db2: postgres",
        "\u00a0v2 is",
        "new PAT below\n",
        "gnutls_x509_spki_set_salt_size: Added",
        "OAuth2 client",
        "x-ms-version2: 2021",
        "\u00a0GPT4o pour",
        "BOOT.DSK\n4a91b7f7db71026eccf657f8078bac83f71e837ae4fba66e15368508d3aef3c1",
        "fw_boot\n5c3066d2be360597ab87a3d881c80852ce6b80f0",
        "hf_hub\nc6ae84e2b573d66b0fc30cf76d5ec1792b0e927e",
        "\nOAuth2Client is",
    ):
        if word in text:
            assert word in clean, clean


def test_broken_keys_cost_linear_time():
    from linear import assert_linear

    for unit in ("abcd\u00a0efgh2 ", "Zq8vK2pLm9Xw4Rt7Hn3b\n", "ghp_Zq\n8vK2pLm9Xw4Rt7Hn3bV6cX9zQ1wE5rAbCd\n", "a1" * 150 + "\n"):
        assert_linear(redact, lambda n, u=unit: u * (n // len(u)), 250_000, limit=0.25, what=f"broken keys {unit[:8]!r}")


def test_wrapped_keys_cost_linear_time():
    from linear import assert_linear

    line = "sk-ant-api03-" + "Zq8vK2pLm9Xw4Rt7" * 3 + "\n" + "Hn3bV6cX9zQ1wE5r" * 4 + "\n"
    assert_linear(redact, lambda n: line * (n // len(line)), 250_000, limit=0.25, what="wrapped keys")


@pytest.mark.parametrize("value", ["sunshinesky", "Summertime", "postgres", "482913"])
def test_a_plain_printed_password_is_redacted_where_the_answer_and_the_person_say_it_again(mem, value):
    """A lower-case, capitalised or digits-only password printed alone, said again by the answer and the person: a
    review found a stricter rule for what is looked for again let these through (no rule finds them by their shape),
    the very values the printed-secret reading is for. Every value printed alone is looked for again, but for what
    prints where there is no value and everyone's code words (`undefined`, `string`, `production`)."""
    data = json.loads(_printed_requests("printenv STAGING_DB_PASSWORD", value + "\n")["anthropic"][1])
    data["messages"] += [
        {"role": "assistant", "content": f"STAGING_DB_PASSWORD is set to `{value}`."},
        {"role": "user", "content": f"ok, use {value} in docker-compose.yml"},
    ]
    raw = _captured(mem, "anthropic", json.dumps(data).encode(), "plain-again")
    assert value.encode() not in raw and b"in docker-compose.yml" in raw


def test_an_errors_words_among_printed_words_are_not_looked_for_again(mem):
    """`kubectl get secret ... | base64 -d` printing `Error from server (NotFound): secrets "db" not found`: the
    error's `NotFound` was looked for in the person's later words. Among other printed words only a value no word is
    shaped as (letters and digits mixed, or a sign) is."""
    data = json.loads(
        _printed_requests(
            "kubectl get secret db -o jsonpath={.data.password} | base64 -d",
            'Error from server (NotFound): secrets "db" not found\n',
        )["anthropic"][1]
    )
    data["messages"] += [
        {"role": "assistant", "content": "It is not there."},
        {"role": "user", "content": "why NotFound? Segmentation fault earlier too"},
    ]
    raw = _captured(mem, "anthropic", json.dumps(data).encode(), "error-words")
    assert b"why NotFound? Segmentation fault earlier too" in raw


def test_a_wrapped_keys_next_lines_of_ordinary_words_stay():
    """The rest of a wrapped key has lower-case and capital letters and digits; a heading, a UUID, a hash, a host's
    name or `S3_BUCKET=` after a key at a line's end is text of its own (a review)."""
    key = "ghp_" + "Zq8vK2pLm9Xw4Rt7Hn3bV6cX9zQ1wE5rAbCd"
    for after in (
        "Installation",
        "S3_BUCKET=",
        "MainActivity",
        "DESKTOP-AB12CD3",
        "123e4567-e89b-12d3-a456-426614174000",
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    ):
        assert redact(f"Token: {key}\n{after}\nmore")[0] == f"Token: [REDACTED:github-pat]\n{after}\nmore", after


def test_a_header_of_lines_that_are_no_harnesss_does_not_hide_printed_values():
    """Any capitalised lines above `Output:` were taken for a harness's header and left as they were (a review): a
    header line is `Name: value` or `Process ...`."""
    from bead.capture.secrets import redact_printed

    clean, hit = redact_printed("Xk9Fj2LmQp7Rt\nHunter2Secret99\nOutput:\nfoo\n")
    assert hit and "Xk9Fj2LmQp7Rt" not in clean and "Hunter2Secret99" not in clean


FOUND_PASSWORD = "Zq8vLr2TmX4pWn7Ks9Dj"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "json"])
def test_a_secret_a_rule_found_is_redacted_wherever_the_conversation_says_it_again(proxy_client, bead_home, upstream, stream):
    """The person pastes a `.env` (the password found by its name) and the model's answer says it bare ("paste
    `...` when asked"): the answer was captured in clear, indexed, and served to a later conversation as an excerpt
    (an adversarial pass). A value a rule found is now redacted wherever the conversation says it again: in the same
    message, in the answer, and in a later request's turns."""
    from conftest import all_bytes_under
    from fakes import Reply

    def post(session: str, messages: list[dict]) -> None:
        body = {"model": "claude-test", "max_tokens": 64, "stream": stream, "messages": messages}
        assert proxy.post(json.dumps(body).encode(), headers={"X-Bead-Session": session})[0] == 200
        proxy.settle()

    upstream.replies.append(Reply(kind="sse" if stream else "json", text=f"Run `\\password app` and paste `{FOUND_PASSWORD}`."))
    proxy = proxy_client(trace=bead_home / "trace.jsonl")  # the trace quotes the turn's words
    pasted = f"my .env:\n\nDB_HOST=db\nDB_PASSWORD={FOUND_PASSWORD}\n\nand at the prompt I typed\n    {FOUND_PASSWORD}\n"
    first = [{"role": "user", "content": pasted + "why can't the app log in?"}]
    post("env", first)
    upstream.replies.append(Reply(kind="sse" if stream else "json", text="Done."))
    answer = {"role": "assistant", "content": f"Run `\\password app` and paste `{FOUND_PASSWORD}`."}
    post("env", [*first, answer, {"role": "user", "content": f"I pasted {FOUND_PASSWORD}, still refused"}])
    files = all_bytes_under(bead_home)
    raw = "".join(d.decode("utf-8") for p, d in files.items() if "store/raw" in str(p))
    assert "and paste `" in raw and "still refused" in raw, "the turns are captured"
    assert not [p for p, d in files.items() if FOUND_PASSWORD.encode() in d or FOUND_PASSWORD.lower().encode() in d]


@pytest.mark.parametrize(
    "setting,later",
    [
        ("DATABASE_URL=postgres://postgres:postgres@db/app", "we run postgres 16 and redis"),
        ("pwd = os.path.dirname(os.path.abspath(__file__))", "root = os.path.dirname(os.path.abspath(__file__))"),
        ("PASSWORD_HASHER=argon2id", "switch the hasher to argon2id"),
        ("SECRET_MANAGER_PROJECT=my-gcp-project-123", "deploy to my-gcp-project-123"),
        ("AWS_SECRET_NAME=prod/myapp/Database1", "read prod/myapp/Database1"),
        ("SECRET=127.0.0.1:8080", "it listens on 127.0.0.1:8080"),
        # Paths of words and ids a rule may take for a key (a review: they were erased from every later turn)
        ("secret name: prod/db/2f9c81b7e4a5d6c3", "aws secretsmanager get-secret-value --secret-id prod/db/2f9c81b7e4a5d6c3"),
        ("api: v2/2f9c81b7e4a5d6c3/items", "GET /api/v2/2f9c81b7e4a5d6c3/items returns 404"),
        ("token path: kv/prod/7f3a9c2e1b4d5f6a", "vault kv get kv/prod/7f3a9c2e1b4d5f6a"),
    ],
)
def test_a_found_value_made_of_words_is_not_looked_for_again(setting, later):
    """A rule that reads a setting as a secret finds words, a path or an address; looked for again, every later
    turn would lose them (a review found sixty such values in a package folder)."""
    from bead.capture.secrets import redact_messages

    known: dict[str, str] = {}
    [(_, _), (second, _)] = redact_messages([[setting], [later]], known)
    assert second == later and known == {}


@pytest.mark.parametrize("password", ["Summer2024!", "Password123!", "hunter22", "Xk9.mP2#vL7q", "Zq8.vLr2TmX9pWn7"])
def test_a_person_made_password_its_name_stands_before_is_looked_for_again(password):
    """A password people make is made of words (`Summer2024!`): looked for again only when it looks random, it was
    kept where the answer said it again (a review). A secret's name right before it (`DB_PASSWORD=`) is enough."""
    from bead.capture.secrets import redact_messages

    out = redact_messages([[f"DB_PASSWORD={password}"], [f"Done: I set the staging login to {password} for you"]])
    assert password not in out[1][0] and out[1][0].endswith(" for you")


@pytest.mark.parametrize(
    "first",
    [
        "AWS_SECRET_ACCESS_KEY={key}",
        "aws_secret_access_key = {key}",
        'export AWS_SECRET_ACCESS_KEY="{key}"',
    ],
)
def test_a_base64_key_holding_a_slash_is_looked_for_again(first):
    """A `/` read as a path's, so a value holding one was never looked for again: an AWS secret key redacted where its
    name stood was kept where the next message said it bare. One that reads as base64 is looked for again."""
    from bead.capture.secrets import redact_messages

    key = "Zq8vLr2/TmX9pWn7Ks9Dj+Hq3LmN0bVc1XyZ4aBc"
    out = redact_messages([[first.format(key=key)], [f"the key {key} still fails"], ["read prod/myapp/Database1"]])
    assert key not in out[1][0] and out[1][0].endswith(" still fails") and out[2][0] == "read prod/myapp/Database1"


def test_a_found_value_beside_another_script_goes_too():
    """No ASCII letter or digit beside it is a whole token: Japanese or Chinese write no blank between words."""
    from bead.capture.secrets import redact_messages

    out = redact_messages(
        [[f"DB_PASSWORD={FOUND_PASSWORD}"], [f"パスワードは{FOUND_PASSWORD}です"], [f"密码是{FOUND_PASSWORD}。"]]
    )
    assert all(FOUND_PASSWORD not in text for text, _ in out)


def test_a_found_value_is_taken_from_an_earlier_message_of_the_batch_and_only_as_a_whole_token():
    """A resumed session's history or a whole imported file: the value is found in its third message and said in
    its first. A value inside a longer token is another one."""
    from bead.capture.secrets import redact_messages

    out = redact_messages(
        [[f"log in with {FOUND_PASSWORD} please"], ["which file?"], [f"DB_PASSWORD={FOUND_PASSWORD}"], [f"x{FOUND_PASSWORD}9"]]
    )
    assert FOUND_PASSWORD not in out[0][0] and out[1][0] == "which file?" and out[3][0] == f"x{FOUND_PASSWORD}9"


def test_looking_for_found_values_again_stays_linear():
    from linear import assert_linear

    from bead.capture.secrets import redact_messages

    values = "".join(f"TOKEN_{i}=Zq8vLr2TmX{i:04d}pWn7Ks9Dj\n" for i in range(80))

    def make(n: int) -> list[list[str]]:  # each value said again many times, near misses, a text made of one
        return [[values], ["x Zq8vLr2TmX0001pWn7Ks9Dj Zq8vLr2TmX0002pWn7Ks9 " * (n // 50)], ["a1B2" * (n // 4)]] * 4

    values += "".join(f"KEY_{i}={'a1B2' * (2 + i)}\n" for i in range(60))

    assert_linear(lambda groups: redact_messages(groups, {}), make, 400_000, what="redact_messages")


@pytest.mark.parametrize(
    "tool_input",
    [
        {"element": "Password textbox", "ref": "e12", "text": FOUND_PASSWORD},  # Playwright MCP's browser_type
        {"fields": [{"name": "Password", "type": "textbox", "ref": "e3", "value": FOUND_PASSWORD}]},  # a form fill
        {"key": "STRIPE_SECRET_KEY", "value": FOUND_PASSWORD, "target": ["production"]},  # a settings API's variable
        {"selector": "#apiKey", "value": FOUND_PASSWORD},
        {"command": ["redis-cli", "-a", FOUND_PASSWORD, "ping"]},  # an argument vector (Codex's shell)
        {"command": ["sshpass", "-p", FOUND_PASSWORD, "ssh", "deploy@web1"]},
        {"cmd": ["mysql", "-uroot", f"-p{FOUND_PASSWORD}", "app"]},
        {"Name": "/prod/db/password", "Value": FOUND_PASSWORD, "Type": "SecureString"},  # AWS's parameter store
        {"label": "API token", "content": FOUND_PASSWORD},
        {"element": "input#pw", "text": FOUND_PASSWORD},
        {"command": ["redis-cli", "-a", FOUND_PASSWORD, 6379]},  # an argument that is a number
    ],
    ids=[
        "browser-type",
        "form-fill",
        "env-var-api",
        "selector",
        "redis-cli",
        "sshpass",
        "mysql",
        "parameter-store",
        "label-content",
        "pw",
        "argv-with-a-number",
    ],
)
def test_a_secret_in_a_tool_calls_input_is_redacted_however_the_input_is_shaped(proxy_client, bead_home, tool_input):
    """A tool's input kept the password a browser tool typed into a password field, a settings API set under a
    secret's name, or an argument vector passed to a command (the same command as one string was redacted): no rule
    reads two fields apart, and a list was written as JSON (an adversarial pass)."""
    from conftest import all_bytes_under

    messages = [
        {"role": "user", "content": "log in to the admin page"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "do_it", "input": tool_input}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]},
    ]
    proxy = proxy_client()
    body = {"model": "claude-test", "max_tokens": 64, "messages": messages}
    assert proxy.post(json.dumps(body).encode(), headers={"X-Bead-Session": "tool-input"})[0] == 200
    proxy.settle()
    files = all_bytes_under(bead_home)
    raw = "".join(d.decode("utf-8") for p, d in files.items() if "store/raw" in str(p))
    assert "[tool_use do_it]" in raw and "[REDACTED:" in raw
    assert not [p for p, d in files.items() if FOUND_PASSWORD.encode() in d]


def test_a_field_that_only_mentions_tokens_keeps_its_value():
    from bead.core.capture import tool_input_text

    assert tool_input_text({"key": "max_tokens", "value": "2048"}).endswith("value: 2048")
    assert tool_input_text({"key": "PASSWORD_MIN_LENGTH", "value": "12"}).endswith("value: 12")
    assert tool_input_text({"element": "Forgot password? link", "text": "x"}).endswith("text: x")
    assert tool_input_text({"element": "Search box", "text": "tokenizer settings"}).endswith("text: tokenizer settings")


def test_a_secret_a_shell_line_continuation_splits_goes_whole():
    """`export DB_PASSWORD=Zq8v...\\` with the rest on the next line: the rest was kept (an adversarial pass)."""
    text = f"export DB_PASSWORD={FOUND_PASSWORD[:10]}\\\n    {FOUND_PASSWORD[10:]}\necho done"
    out, _ = redact(text)
    assert FOUND_PASSWORD[10:] not in out and FOUND_PASSWORD[:10] not in out and out.endswith("\necho done")


def test_a_table_whose_header_names_a_secret_column_has_its_cells_redacted():
    """`| user | password |` and `| admin | ... |` below it: the first cell is a user's name, not a secret's, so the
    row read as `admin=...` and the password was kept (an adversarial pass)."""
    table = f"| user | password |\n|---|---|\n| admin | {FOUND_PASSWORD} |\n| ops | Hx9!kLm2Qp |"
    out, _ = redact(table)
    assert FOUND_PASSWORD not in out and "Hx9!kLm2Qp" not in out and "| admin |" in out and "| ops |" in out
    described = "| setting | description |\n|---|---|\n| token | the token used for auth |"
    assert redact(described)[0] == described


def test_a_key_split_across_literals_of_either_quote_goes_whole():
    """`'sk-ant-...' + "..."`: literals joined only where both used the same quote, so the second half of a key in
    JavaScript with mixed quotes was kept (an adversarial pass)."""
    out, _ = redact(f"const key = '{KEY_MIXED[:60]}' + \"{KEY_MIXED[60:]}\";")
    assert KEY_MIXED[60:] not in out and KEY_MIXED[20:60] not in out


KEY_MIXED = "sk-ant-api03-" + "Qw7Lm2Rt5Yp8Vb4Nc6Hd1Jk0Fs7Ga2TuZ3x9" * 2 + "AA"


def test_remember_of_a_value_holding_a_secret_the_conversation_found_writes_nothing(proxy_client, bead_home, upstream):
    """The raw log was clean, but "remember that staging logs in with ..." after a `.env` that named the password
    wrote it in clear to a fact, served to every later session (a review)."""
    from conftest import all_bytes_under

    proxy = proxy_client()

    def post(messages: list[dict]) -> None:
        body = {"model": "claude-test", "max_tokens": 64, "messages": messages}
        assert proxy.post(json.dumps(body).encode(), headers={"X-Bead-Session": "rem-secret"})[0] == 200
        proxy.settle()

    first = [{"role": "user", "content": f"my .env:\nDB_PASSWORD={FOUND_PASSWORD}\nwhy is login refused?"}]
    post(first)
    later = {"role": "user", "content": f"remember that staging logs in with {FOUND_PASSWORD}"}
    post([*first, {"role": "assistant", "content": "Check the role."}, later])
    assert not [p for p, d in all_bytes_under(bead_home).items() if FOUND_PASSWORD.encode() in d]
    assert not list((bead_home / "store" / "facts").rglob("v1.md"))


def test_a_value_another_worker_found_is_redacted_here_too(proxy_client, bead_home, upstream):
    """Two workers take turns with one conversation: the `.env` reaches the first after the second has captured
    there already; the second's next capture reads the messages it has not read (a review: each process read the
    history once, at its first capture, and missed what came after)."""
    from conftest import all_bytes_under

    a, b = proxy_client(), proxy_client()

    def post(proxy, messages: list[dict]) -> None:
        body = {"model": "claude-test", "max_tokens": 64, "messages": messages}
        assert proxy.post(json.dumps(body).encode(), headers={"X-Bead-Session": "workers"})[0] == 200
        proxy.settle()

    talk = [{"role": "user", "content": "hello"}]
    post(a, talk)
    talk += [{"role": "assistant", "content": "Hi."}, {"role": "user", "content": "let's fix the login"}]
    post(b, talk)
    talk += [{"role": "assistant", "content": "Show me."}, {"role": "user", "content": f"DB_PASSWORD={FOUND_PASSWORD}"}]
    post(a, talk)
    talk += [{"role": "assistant", "content": "Got it."}, {"role": "user", "content": f"I typed {FOUND_PASSWORD}"}]
    post(b, talk)
    raw = "".join(d.decode("utf-8") for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p))
    assert "I typed [REDACTED:" in raw and FOUND_PASSWORD not in raw


def test_a_restarted_proxy_still_redacts_a_value_found_before_it_started(proxy_client, bead_home, upstream):
    """The values a conversation's scan found were held by the proxy that captured them: after a restart (or in
    another worker) the bare repeat went to the log in clear (a review). The first capture of a conversation in a
    process reads its earlier messages for them once."""
    from conftest import all_bytes_under

    def post(proxy, messages: list[dict]) -> None:
        body = {"model": "claude-test", "max_tokens": 64, "messages": messages}
        assert proxy.post(json.dumps(body).encode(), headers={"X-Bead-Session": "restart"})[0] == 200
        proxy.settle()

    first = [{"role": "user", "content": f"my .env:\nDB_PASSWORD={FOUND_PASSWORD}\nwhy is login refused?"}]
    post(proxy_client(), first)
    post(
        proxy_client(),
        [*first, {"role": "assistant", "content": "Check the role."}, {"role": "user", "content": f"I typed {FOUND_PASSWORD}"}],
    )
    raw = "".join(d.decode("utf-8") for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p))
    assert "I typed [REDACTED:" in raw and FOUND_PASSWORD not in raw


def test_a_password_a_tool_typed_is_redacted_where_the_answer_says_it_again(proxy_client, bead_home, upstream):
    """The call's input was redacted, but the model's answer "I typed ... into the password field" was captured in
    clear (a review): the typed value joins the conversation's found values."""
    from conftest import all_bytes_under
    from fakes import Reply

    upstream.replies.append(Reply(text=f"I typed {FOUND_PASSWORD} into the password field and logged in."))
    proxy = proxy_client()
    messages = [
        {"role": "user", "content": "log in to the admin page"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "browser_type", "input": {"element": "Password", "text": FOUND_PASSWORD}}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "typed"}]},
    ]
    body = {"model": "claude-test", "max_tokens": 64, "messages": messages}
    assert proxy.post(json.dumps(body).encode(), headers={"X-Bead-Session": "typed"})[0] == 200
    proxy.settle()
    raw = "".join(d.decode("utf-8") for p, d in all_bytes_under(bead_home).items() if "store/raw" in str(p))
    assert "into the password field" in raw and FOUND_PASSWORD not in raw


@pytest.mark.parametrize(
    "value, shared",
    [
        ("Qz8vLr2TnW4k", True),
        ("Summer2024!", True),
        ("Welcome1-Staging", True),
        ("7c4e9a1b2c3d4e5f60718293a4b5c6d7", True),
        ("x86_64", False),
        ("gpt-4o-mini", False),
        ("GPT-4o", False),
        ("Llama-3.1-8B", False),
        ("localhost:5432", False),
        ("Django-Insecure-Key", False),
        ("hunter22", False),
        ("CorrectHorse#Battery", True),
        ("S3cret!", True),
    ],
)
def test_only_a_value_no_common_word_is_is_looked_for_in_other_conversations(value, shared):
    """What a conversation's capture found after a secret's name (a README's `DB_PASSWORD=x86_64`, an `.env`'s model
    name under `*_KEY`) is looked for in every other conversation only where no common word or name reads so: a
    password of capitals, small letters and digits, or random letters and digits (reviews found common words taken
    from every conversation's log)."""
    from bead.capture.secrets import shared_across

    assert shared_across(value) is shared


@pytest.mark.parametrize(
    "key",
    [
        "/Zq8vLr2TmX9pWn7Ks9Dj+Hq3LmN0bVc1XyZ4aBc",
        "Zq8v//Lr2TmX9pWn7Ks9Dj+Hq3LmN0bVc1XyZ4aB",
        "Zq8vLr2TmX9pWn7Ks9Dj+Hq3LmN0bVc1Xy/a9",
    ],
)
def test_a_named_base64_key_of_any_slash_shape_is_looked_for_again(key):
    """After a secret's name a key is one whatever its `/` parts look like: about one AWS key in thirteen starts or ends
    with `/`, holds `//` or a part of small letters alone, and was kept where the conversation said it again (a review)."""
    from bead.capture.secrets import redact_messages

    out = redact_messages([[f"aws_secret_access_key = {key}"], [f"the key {key} still fails"]])
    assert key not in out[1][0] and out[1][0].endswith(" still fails"), out


@pytest.mark.parametrize(
    "first", ["password: /mnt/Vol2/Backup/Keys", "api_key=//NAS01/Share/Keys/Prod", "client_secret: /mnt/Disk2/Team/Shared"]
)
def test_a_path_after_a_secrets_name_is_not_looked_for_again(first):
    """A path a rule took for a secret after its name was erased from later turns and other conversations when the
    named form dropped the path checks (a review)."""
    from bead.capture.secrets import redact_messages

    path = first.split(None, 1)[-1].split("=", 1)[-1]
    later = f"cd {path} && ls"
    assert redact_messages([[first], [later]])[1][0] == later


NAMED_TOKEN = "310nvwel1p8TEzg9kjVaKY07fG1KeIRQLXnowcFz"


@pytest.mark.parametrize(
    "text",
    [
        "kubectl create secret generic api-creds --from-literal=token=" + NAMED_TOKEN,
        "kubectl create secret generic github-token --from-literal=session=" + NAMED_TOKEN,
        "API: token=" + NAMED_TOKEN,
        "export GIT_AUTH=token=" + NAMED_TOKEN,
        "key: token=" + NAMED_TOKEN,
        'curl -H "X-Auth: token=' + NAMED_TOKEN + '" https://api.example.com',
    ],
)
def test_a_value_after_a_name_and_its_equals_sign_is_read_as_the_value(text):
    """A secret's word, then a name and `=` before the value (`--from-literal=token=...`): the generic rule's value
    took the name with it, the name's word (`token`, `session`) is a stopword, and the allowlist let the whole
    value be (an outside attack: the token reached the raw log and the trace). The value is what follows the `=`."""
    out, rules = redact(text)
    assert NAMED_TOKEN not in out and "generic-api-key" in rules, out
    assert out.endswith(("=[REDACTED:generic-api-key]", '=[REDACTED:generic-api-key]" https://api.example.com')), out


@pytest.mark.parametrize(
    "text",
    [
        "api: version=2023-06-01-preview",
        "auth: method=password123",
        "csrf_token=abcdef0123456789",
        "key: name=accessibility_mode",
    ],
)
def test_a_named_value_that_reads_as_no_secret_stays(text):
    """Read after its name, a value still has to pass the rule's checks: a date, a stopword, an allowlisted name, a
    name of words."""
    assert redact(text) == (text, [])


def test_a_password_with_an_equals_sign_is_still_redacted_whole():
    """The value after a name is read only where the whole was let be: a password that holds an `=` is redacted
    from its start, as before."""
    out, _ = redact("password=Tr0ub4dor=3xQLongPass")
    assert "Tr0ub4dor" not in out and "3xQLongPass" not in out


@pytest.mark.parametrize(
    "text, values",
    [
        ("kubectl create secret generic db --from-literal=value=Vq7rLx2mKp9sWd4n", ["Vq7rLx2mKp9sWd4n"]),
        (
            "kubectl create secret generic api --from-literal=user=deployer --from-literal=session=Vq7rLx2mKp9sWd4n",
            ["deployer", "Vq7rLx2mKp9sWd4n"],
        ),
        ("kubectl create secret generic api --from-literal session=Vq7rLx2mKp9sWd4n", ["Vq7rLx2mKp9sWd4n"]),
        ("kubectl create secret generic x --from-literal='session=Tr0ub4dor&3x QLong'", ["Tr0ub4dor&3x QLong"]),
        ('kubectl -n prod create secret generic x --from-literal=pw="a b&c d" --dry-run=client', ["a b&c d"]),
    ],
)
def test_every_literal_of_kubectl_create_secret_is_a_secret(text, values):
    """Every `--from-literal` value of a `kubectl create secret` command is a secret's, whatever its name and however
    many the line holds: the generic rule knew one by a secret's word before it, and only the first (a review)."""
    out, rules = redact(text)
    assert all(v not in out for v in values) and "kubectl-secret-literal" in rules, out


@pytest.mark.parametrize(
    "text",
    [
        "kubectl create configmap cfg --from-literal=LOG_LEVEL=debug",
        "kubectl create secret generic x --from-literal=pw=$PW",
        "kubectl create secret generic x --from-file=./creds.json",
    ],
)
def test_a_configmaps_literal_or_a_variable_stays(text):
    assert redact(text) == (text, [])


def test_a_quoted_value_after_a_name_runs_to_its_closing_quote():
    """Read after its name and `=`, a quoted value runs to its closing quote, as any quoted value does (a review: the
    part after `&` stayed)."""
    out, _ = redact('export GIT_AUTH="token=Xy7Qa9LmP2rT&bcQ9!zz"')
    assert "Xy7Qa9LmP2rT" not in out and "bcQ9" not in out, out
