"""Near-miss distractor facts for the scaled injection eval.

A store written over months of work on one project holds many facts that use
the project's words but are about another subject: the staging cache host
next to the staging database one, the beat schedule of the nightly export next
to the reminder schedule, the Swiss VAT rounding next to the money rule. Those
near misses are what recall has to tell apart from the facts a turn needs, and
``bead.evals.generated`` (one set of templates per module) made them too easy.

Here several hundred hand-written templates (``TEMPLATES``), over the kind of
project the injection suite describes (FastAPI, Celery, Postgres, Redis,
Stripe, WeasyPrint, a React admin), are filled from word lists. Each says
something a person would write into memory (a host, a schedule, a convention,
a "don't" with its reason, a dashboard or runbook, their own preferences), and
none states, contradicts or implies what a fact of evals/injection.yaml says;
``facts(..., avoid=bodies)`` also drops any fact whose word set is close to one
of ``bodies`` (Jaccard >= 0.5).

Use: ``facts(n, project, trusts, avoid=[...])``, then ``interleave(real, made)``.
Deterministic: the same arguments give the same facts.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .generated import interleave

__all__ = ["TEMPLATES", "Template", "drop_near", "facts", "instantiate", "interleave", "jaccard", "too_close", "words"]

# Word lists a template names as {name} (or {name2}: another value of the same list).
SLOTS: dict[str, tuple[str, ...]] = {
    "module": (
        "credit notes",
        "payments",
        "refunds",
        "quotes",
        "subscriptions",
        "statements",
        "exports",
        "reports",
        "dunning",
        "tax rates",
        "currencies",
        "products",
        "discounts",
        "payouts",
        "ledger",
        "usage billing",
        "tenants",
        "attachments",
        "bank imports",
        "payment links",
        "price lists",
        "audit log",
        "recurring invoices",
        "late fees",
    ),
    "queue": ("pdf", "exports", "webhooks", "imports", "reports", "ledger", "slow"),
    "relay": ("Postmark", "Mailgun", "Amazon SES", "Brevo"),
    "month": (
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    # No 07:00: the suite's reminders run then.
    "time": ("01:30", "02:00", "02:30", "03:15", "04:00", "04:45", "05:30", "22:30", "23:15"),
    "host": ("db-prod-1", "db-prod-2", "app-prod-1", "app-prod-2", "ops-prod-1", "worker-prod-1"),
    "flag": (
        "credit_notes_v2",
        "new_pdf_layout",
        "sepa_direct_debit",
        "bulk_export",
        "customer_portal",
        "multi_currency_reports",
        "usage_billing",
        "quote_acceptance",
        "einvoice_xrechnung",
        "partial_refunds",
    ),
    "country": ("German", "Austrian", "Swiss", "French", "Dutch", "Belgian", "Irish", "Italian"),
    "lang": ("German", "French", "Italian", "Dutch", "Spanish"),
    "cur": ("EUR", "CHF", "GBP", "USD", "SEK", "DKK", "PLN"),
    "bank": ("Sparkasse", "UBS", "ING", "Commerzbank", "PostFinance", "Raiffeisen"),
    "lib": (
        "tenacity",
        "structlog",
        "orjson",
        "babel",
        "python-stdnum",
        "schwifty",
        "pycountry",
        "respx",
        "time-machine",
        "polyfactory",
        "openpyxl",
        "xlsxwriter",
        "pypdf",
        "qrbill",
        "lxml",
        "boto3",
    ),
    "table": (
        "invoice_lines",
        "payments",
        "audit_events",
        "ledger_entries",
        "stripe_events",
        "email_log",
        "usage_records",
        "exchange_rates",
    ),
}

# One template a block: "<type> <slug>" at the start of a line, then the body on indented lines.
# Types: u user (user/ key), g feedback kept under user/, f feedback, p project, r reference.
# Slots: {name} a value of SLOTS[name] ({name2} another one); {name=a|b|c} one of those, bound to name;
# {name=#lo-hi} a number; {name@other=a|b|c} the choice at the index other got; {name.filter} a bound
# value as snake, slug, cap or upper; {!name...} binds without writing (a short name for the slug).
# {{ and }} are literal braces. The slug names bound slots as {name}.
_SPEC = r"""
# --- environments and infrastructure -------------------------------------------------------------
p staging-{store}-host
    The staging {store=cache Redis|read replica|MinIO|Mailpit|pgbouncer} runs on
    {hostname@store=cache-staging-1|pg-replica-staging-1|minio-staging-1|mail-staging-1|pgb-staging-1}.int.acme-{proj}.dev;
    it is only reachable over the WireGuard tunnel.
p prod-{store}-host
    In production the {store=cache Redis|read replica|MinIO gateway|SMTP relay forwarder} sits on {host}; the app
    reaches it over the private network, never the public IP.
p staging-db-refresh
    The staging database is refreshed from an anonymized production dump every {weekday} at {time} UTC; anything set
    up by hand on staging is gone after that.
p staging-anonymizer
    The anonymizer for the staging dump is scripts/anonymize.sql; it rewrites customer emails to
    {pat=customer-<id>@example.test|c<id>@mailpit.local} and blanks {field=IBANs|phone numbers|tax ids|postal addresses}.
p preview-apps-{label}
    Every PR with the {label=preview|deploy-preview} label gets a preview app at pr-<number>.preview.acme-{proj}.dev;
    it is torn down {n=#2-7} days after the PR closes.
p preview-app-databases
    Preview apps share one Postgres server; each gets its own database named preview_pr_<number>, seeded with
    {seed=make seed-demo|scripts/seed_demo.py} ({n=#40-400} demo customers).
p compose-{svc}
    docker compose also runs {svc=Mailpit|MinIO console|Flower|pgAdmin|Jaeger} on localhost:{port@svc=8025|9001|5555|5050|16686};
    it is in the {profile=tools|extras|observability} profile, so it only starts with --profile {profile}.
p minio-buckets
    MinIO stands in for S3 locally; the buckets {b1=invoice-pdfs|documents} and {b2=imports|statements|backups} are
    created by the minio-init service in compose on first start.
p s3-lifecycle-{bucket}
    The {bucket=exports|imports|statements} bucket in production has a lifecycle rule that deletes objects after
    {n=#7-90} days; download links in old emails stop working then.
p presigned-links-{what}
    Download links for {what=CSV exports|statement PDFs|attachments} are presigned S3 URLs valid for
    {mins=15|30|60|120} minutes; the admin asks for a fresh one on every click.
p nginx-upload-limit
    nginx in front of the API caps request bodies at {mb=#5-50} MB (client_max_body_size); bigger
    {what=CSV imports|attachments|bank statement files} fail with 413 before they reach FastAPI.
p nginx-read-timeout
    proxy_read_timeout on the production nginx is {s=30|60|90|120} s; the {what=year-end report|full ledger export|bulk PDF
    download} endpoint used to hit it, which is why it became a Celery task.
p backup-schedule
    Postgres backups: pgBackRest takes a full backup every {weekday} and incrementals nightly at {time} UTC, kept for
    {n=#14-60} days in the off-site bucket.
p backup-restore-test
    A restore test runs on the first {weekday} of each month into a throwaway server; the last one took {mins=#18-95}
    minutes for the whole database.
p redis-maxmemory
    The production Redis runs with maxmemory {mb=512|768|1024|2048} MB and {pol=volatile-lru|volatile-ttl}; every cache
    key has a TTL, so only cache entries get evicted.
p worker-{queue}-concurrency
    The production worker for the {queue} queue runs with --concurrency {n=#2-8} and --max-tasks-per-child
    {m=50|100|200|500}; without the limit its memory grows until the container is killed.
p task-routing-{queue}
    Tasks in app/tasks/{queue}.py are routed to the {queue} queue by task_routes in app/celery_app.py; a new task module
    needs an entry there or it lands on the default queue.
p {exp}-export-beat-schedule
    Celery beat runs the nightly {exp=CSV|DATEV|ledger} export at {time} UTC for tenants that switched it on; the files
    go to the exports bucket under <tenant>/<date>/.
p {task}-schedule
    Beat also schedules {task=refresh_exchange_rates|expire_payment_links|purge_old_exports|sync_stripe_payouts} every
    {every=15 minutes|hour|6 hours}; it is idempotent, so a missed run is picked up by the next one.
p celery-retries-{ext}
    Tasks that call {ext=Stripe|the SMTP relay|VIES|the ECB rates feed} use autoretry_for with retry_backoff=True and
    max_retries={n=#3-8}; after that they land in the failed_tasks table for a manual look.
p {queue}-time-limit
    The {queue} queue has soft_time_limit={s=#60-600} s; its tasks catch SoftTimeLimitExceeded and mark the job failed
    instead of leaving it pending forever.
p flower-staging
    Flower watches the staging workers at https://flower.int.acme-{proj}.dev behind the SSO proxy; it is handy for
    {what=task arguments|retry counts|worker pool sizes}, not much else.
p celery-result-expiry
    Task results expire after {h=#2-48} hours (result_expires); the export page polls a result only while the job row
    says running, so nothing reads an expired one.
p prefetch-{queue}
    worker_prefetch_multiplier is 1 on the {queue} worker because its tasks are long; with the default of 4 one slow
    {what=render|export|import} held {n=#2-3} other jobs back.
p pgbouncer-mode
    Production connects through pgbouncer in transaction mode on port {port=6432|6433}; server-side prepared statements
    are off in the engine options because of that.
p postgres-major-{v}
    Production Postgres is version {v=15|16} on {host}; staging runs the same major so dumps restore cleanly between
    them.
p pg-extension-{ext}
    The database uses the {ext=pg_trgm|unaccent|btree_gin|citext} extension for {use=customer name search|email
    lookups|product search}; it is created in the very first migration.
p statement-timeout
    statement_timeout is {s=#5-30} s for the app role and unlimited for the {role=reporting|backup} role; the long
    report queries run as that role.
p replica-reads-{what}
    {what=Reports|The year-end export|Dashboard widgets} read from the replica via get_replica_session(); replica lag is
    usually under {s=#1-5} s but spikes during backups.
p smtp-relay-{relay}
    Production mail goes through {relay} on port 587; the sending domain is mail.acme-{proj}.dev with SPF and DKIM set
    up in {dns=Cloudflare|deSEC|Route 53}.
p bounce-webhooks-{relay}
    Bounces from {relay} come back as webhooks; a hard bounce sets customers.email_bounced_at and the admin shows a
    {color=red|yellow} badge next to the address.
p dns-ttl
    DNS for acme-{proj}.dev is in {dns=Cloudflare|deSEC|Route 53}; records have TTL {ttl=300|600|3600}, so lower it a
    day before moving a host.
p tls-renewal
    TLS certificates come from Let's Encrypt via {tool=Caddy|certbot|Traefik} on every box; renewal runs
    {freq=daily|twice a day} and posts to the #ops channel when it fails.
p config-vault
    Production configuration lives in {mgr=1Password|Doppler|Bitwarden} under the {vault=Invoicing Prod|invoicing-production}
    vault; the deploy workflow reads it at deploy time and nothing sensitive sits in the repo.
p rotation-checklist
    Provider credentials (Stripe, SMTP, S3) are rotated every {n=3|6|12} months; the checklist is docs/ops/rotation.md
    and it takes about {m=#20-60} minutes.
p log-retention
    Logs from the production containers go to Loki and are kept {d=14|30|60|90} days; anything older is only in the
    {what=Sentry events|nightly log archive in S3}.
p disk-alert-{host}
    The {host} disk alert fires at {p=75|80|85|90}% used; the usual culprit is {what=old Docker images|WAL piling up
    after a failed archive|export files nobody cleaned up}.
p api-image-size
    The API image is built in {n=2|3} stages and is about {mb=#180-420} MB now, mostly {what=WeasyPrint's system
    libraries|the Python wheels|the LibreOffice bits for the spreadsheet import}.
p health-endpoint
    The API's health endpoint is GET /{path=healthz|health/ready|_health}; it checks the database and Redis and returns
    503 if either is down. nginx and the uptime monitor both poll it.
p uptime-monitor
    Uptime monitoring is {tool=Better Stack|UptimeRobot|Uptime Kuma} checking the {what=API health endpoint|admin login
    page|customer portal} every {s=30|60|120} seconds from two regions.
p ci-durations
    CI runs on GitHub Actions with a Postgres {v=15|16} service container; the backend job takes about {m=#4-12}
    minutes, the admin job about {m2=#2-6}.
p ci-cache-{c}
    CI caches {what=the Playwright browsers|the pre-commit environments|the mypy cache}{!c@what=playwright|
    pre-commit|mypy}; a cold run takes about
    {m=#2-9} minutes longer.
p ci-test-shards
    The CI backend job runs the tests in {n=2|3|4} shards with pytest-split; the durations file .test_durations is
    refreshed {freq=monthly|whenever one shard gets much slower}.
p required-checks
    Required checks on PRs: {c1=backend-tests|lint|typecheck} and {c2=admin-build|e2e-smoke|openapi-diff}; the
    {c3=docs|coverage-report|bundle-size} job is informational only.
p deploy-migration-step
    The deploy workflow runs alembic upgrade in a one-off container before it restarts {what=api and worker|the api,
    then the workers}; the whole run takes about {m=#4-11} minutes.
p deploy-freeze
    No production deploys after {t=14:00|15:00|16:00} on Fridays or in the last {n=2|3} days of a month, when most
    customers run their invoicing.
p maintenance-page
    nginx serves /srv/maintenance/index.html while the file /srv/maintenance/{flag=enabled|on} exists; we used it for
    the {what=Postgres upgrade|ledger migration|server move} in {month}.
p host-crontab-{host}
    The host crontab on {host} only runs {what=certbot renewal|docker image prune|the backup check}; every application
    schedule is in Celery beat.
p wireguard-peers
    The private network is WireGuard on 10.{a=#10-60}.0.0/24; add a peer with scripts/wg-add-peer.sh <name> and the
    client config lands in ~/wg/.
p ssh-bastion
    SSH to production goes through the bastion ops-prod-1 on port {port=2222|2200}; direct SSH to the app hosts is
    firewalled, use ProxyJump.
p prod-api-containers
    Production runs {n=2|3} API containers behind nginx with {w=2|4} uvicorn workers each; the worker containers are
    scaled per queue, the {queue} one has {k=#2-4}.
p cache-key-namespace
    Cache keys are namespaced {ns=cache:v2|inv:cache|c1}:<tenant_id>:<name>; bump the version part when the shape of a
    cached payload changes instead of flushing Redis.
p rate-limit-windows
    Rate limits are counted in Redis per fixed minute: {n=#60-600} requests per minute per API client, {m=#5-30} for
    {ep=POST /auth/login|the PDF download|the public payment page}.
p admin-static-caching
    nginx serves the built admin assets with Cache-Control max-age={d=#7-365} days since the file names carry a hash;
    index.html is sent with no-cache.
p clamav-service
    Uploaded attachments are scanned by the clamav service before they are linked; its signature database updates
    every {h=2|4|6} hours and a stale one shows up as a {color=yellow|red} check in the ops dashboard.
f no-hand-updates-prod
    Don't run UPDATEs by hand in a production psql session; write a one-off script under scripts/oneoff/ and get it
    reviewed. A hand-typed UPDATE once hit {n=#40-900} {what=invoices|payments|customers} instead of one.
f staging-test-addresses
    Don't create test customers with real email addresses on staging; use {dom=example.test|mailpit.local} addresses.
    Staging once sent {n=#3-30} real emails before its mail was caught.
f no-flushall-{e}
    Don't run FLUSHALL on {env=staging|the local Redis}{!e@env=staging|local} to clear a cache; it also drops the
    broker queues. Delete the
    cache keys with scripts/cache_clear.py instead.
f compose-down-volumes
    Don't use docker compose down -v unless you mean it; it deletes the {vol=pgdata|minio-data} volume and
    {what=the seeded demo data|every uploaded attachment} with it.
f concurrent-index-{table}
    Don't add an index on {table} without CONCURRENTLY; the table has {n=#2-40} million rows and a plain CREATE INDEX
    locked it for minutes.
f no-purge-{queue}
    Don't purge the {queue} queue to get rid of one bad task; it drops every good job with it. Revoke that task by id
    with celery control revoke.
f snapshot-before-manual-change
    Before any manual change on the production database take a snapshot with scripts/snapshot.sh; the {month}
    {what=VAT rate fix|ledger cleanup|currency backfill} had none and cost a day.
f payload-logging
    Never log {what=full webhook payloads|request headers|raw SMTP responses} at INFO; they once carried customer
    {pii=emails|IBANs|addresses} into Loki.
f no-prune-{host}
    Don't run docker system prune on {host}; it removed the image of the running release once and the next restart
    had to pull it for {m=#5-20} minutes.
f wireguard-off
    Don't leave the WireGuard tunnel up while running {what=the e2e tests|make seed|the local stack}; a script once
    picked up the staging host from DNS and wrote {n=#10-80} demo rows there.
f read-replica-writes
    Don't use get_replica_session() for anything that writes, even {what=a last_viewed_at update|an audit row}; the
    replica is read-only and the error only shows up in production.

# --- backend code areas --------------------------------------------------------------------------
p routes-{module}
    The {module} router lives in app/api/routes/{module.snake}.py and is mounted in app/main.py under /{module.slug};
    its tags decide the section in the OpenAPI docs.
p services-{module}
    Business logic for {module} is in app/services/{module.snake}.py; routes only parse input, call one service function
    and map the result to a response model.
p repo-{mod}
    Queries for {mod=credit notes|payments|quotes|refunds|products} go through
    {repo@mod=CreditNoteRepo|PaymentRepo|QuoteRepo|RefundRepo|ProductRepo}; its list() takes a filter dataclass and
    always scopes by tenant_id.
p tenant-mixin
    Every model except {tbl=tenants|exchange_rates|countries} has tenant_id with a foreign key and an index; TenantMixin
    in app/models/base.py adds both.
p alembic-file-names
    Alembic revision files are named <date>_<slug>.py through file_template in alembic.ini; keep the slug short, e.g.
    {ex=add_credit_note_reason|index_payments_paid_at|drop_legacy_tax_code}.
p alembic-two-heads
    When two PRs both add a revision, CI's {job=check-heads|alembic-heads|single-head} job fails; rebase the later,
    unmerged revision onto the other instead of adding an alembic merge revision.
p backfill-scripts
    Data backfills don't go in alembic revisions; they are scripts under scripts/backfills/ run with
    {cmd=make backfill NAME=<name>|python -m scripts.backfills.<name>}, so a slow backfill never blocks a deploy.
p migration-roundtrip
    Downgrade functions are written but never run in production; CI's migrations-roundtrip job upgrades, downgrades
    {n=the newest revision|the last two revisions|the last three revisions} and upgrades again.
p admin-session-cookie
    Admin sessions are cookies set by the API, {h=8|12|24} hours long, HttpOnly and SameSite=Lax; the admin never reads
    them, it only gets a 401 when one has run out.
p roles-{r2}
    Roles are {r1=owner|admin}, {r2=accountant|billing} and {r3=viewer|support}; permission checks are the
    require_role() dependency on each route, never inside services.
p totp-window
    Admin users can turn on TOTP two-factor; codes use a {s=30|60} second step with one step of drift allowed, and the
    {n=8|10} recovery codes are stored hashed.
p tenant-header
    The current tenant comes from the {hdr=X-Tenant|X-Tenant-Id} header in the admin and from the API client in the
    public API; get_tenant() in app/api/deps.py resolves both.
p tenant-settings-{what}
    Per-tenant settings (logo, invoice footer, default {what=currency|language|tax rate}) are a JSONB column on tenants,
    validated by TenantSettings in app/schemas/tenant.py.
p vies-check
    Customer VAT IDs are checked against VIES on save; when VIES is down ({pct=#2-9}% of calls in a bad week) the
    customer is saved with vat_id_checked_at NULL and rechecked nightly.
p customer-merge
    Merging two customers moves invoices, payments and notes to the survivor in one transaction (merge_customers in
    app/services/customers.py); a record of the merge stays in {what=the audit log|the survivor's notes}.
p customer-csv-import
    Customer CSV imports accept {enc=UTF-8 and Windows-1252|UTF-8 only} with ; or , as separator; rows with an unknown
    country code are listed in the import report, not dropped silently.
p customer-search-threshold
    Customer search matches name, email and customer number with pg_trgm similarity above {th=0.2|0.3|0.35}; results
    are capped at {n=20|25|50} and ordered by similarity.
p invoice-state-machine
    Invoice status changes go through InvoiceStateMachine.transition(); setting invoice.status directly skips the
    {what=audit entry|ledger posting|portal notification}.
p invoice-finalize-steps
    Finalizing an invoice freezes its lines, {what=queues the PDF render|books the ledger entries} and sets finalized_at;
    after that only a credit note changes what is owed.
p invoice-line-order
    Invoice lines have a position column; drag and drop in the editor sends the whole new order to
    PUT /invoices/{{invoice_id}}/lines/order, never one line at a time, since {what=two saves|a save and a reorder} once
    raced and scrambled the order.
p pdf-object-path
    Rendered PDFs are stored as {pat=<tenant>/<year>/<number>.pdf|documents/<tenant_id>/<invoice_id>.pdf} in the
    {bucket=invoice-pdfs|documents} bucket; a re-render overwrites the object and versioning keeps the old one.
p printed-number-prefix
    The tenant's invoice prefix (e.g. {pre=RE-|INV-|F-}) is added only when printing, in the PDF and the emails; the
    number column itself never stores a prefix.
p stale-drafts-purge
    Drafts untouched for {d=#30-180} days are deleted by the purge_stale_drafts task every {weekday}; they never got a
    number, so nothing is lost.
p credit-note-prefix
    Credit notes are printed as {pre=CN-|GS-|AV-}<number> next to the number of the invoice they correct; a credit note
    can never exceed the invoice's open amount.
p credit-note-layout
    The credit note PDF reuses the invoice layout with a {what=red 'Credit note' heading|'corrects invoice' line under
    the title}; the switch is the document_kind variable in the template.
p bank-transfer-matching
    Bank transfers are matched to invoices by the reference line; a match needs the invoice number and an amount within
    {c=#1-5} cents, everything else goes to the unmatched list in the admin.
p partial-payments
    Partial payments are allowed; invoice.amount_paid is recomputed from its payments in PaymentService.record() and
    never taken from a request. The {what=aging report|portal} shows the open rest.
p card-refunds-{q}
    Card refunds are created by a Celery task on the {q=payments|webhooks} queue; the refund row stays pending until
    Stripe's charge.refunded event arrives.
p refund-approval-{cur}
    Refunds above {amt=500|1000|2500} {cur} need a second admin to approve; approvals live in refund_approvals and the
    admin shows a banner until one is given.
p stripe-request-idempotency
    Every call that creates something at Stripe passes an idempotency value built as <operation>:<object id>; a retried
    {what=refund|payment intent|customer creation} can't happen twice.
p stripe-events-table
    Processed Stripe events are stored in stripe_events with the event id as primary key, so a redelivered event is a
    no-op; rows older than {d=#30-120} days are purged on {weekday}s.
p stripe-api-version
    The Stripe API version is pinned to {v=2023-10-16|2024-04-10|2024-06-20} in app/integrations/stripe.py; upgrading it
    is its own PR, after reading Stripe's changelog for it.
p stripe-customer-creation
    A customer gets a Stripe customer only {when=when they first pay by card|when a payment link is created for them};
    stripe_customer_id is nullable and filled by ensure_stripe_customer().
p payment-page-checkout
    Payment links in invoice emails point to /pay/<public id>; that page creates a Checkout Session for the open amount
    in the invoice's currency, valid {h=1|24} hours.
p stripe-test-clocks
    Subscription renewals are tested with Stripe test clocks; scripts/stripe_clock.py advances one by {d=#1-31} days
    and the renewal invoices show up a few seconds later.
p stripe-fee-booking
    Stripe fees are recorded per payment from the balance transaction's {field=fee|fee_details}; reports show gross and
    net, and the ledger books the fee to account {acct=#6800-6899}.
p {country}-reduced-rate
    Tax rates live in tax_rates with valid_from and valid_to; the {country} reduced rate changed in {year=#2019-2024}
    and both rows are still needed for the old invoices.
p reverse-charge-note
    B2B customers in another EU country with a checked VAT ID get reverse charge: 0% VAT and the note
    '{note=Reverse charge|Steuerschuldnerschaft des Leistungsempfängers}' on the PDF.
p vat-rounding-ch
    Only in the Swiss module, VAT is computed per rate on the invoice's net subtotal, because {who=Marta|the Swiss
    accountant} asked for it; the per-rate figures go into vat_breakdown.
p chf-cash-rounding
    Swiss PDFs also print the total rounded to 0.05 for payers at the {where=post office|counter}; that figure is
    display-only and is never stored or used for matching.
p ecb-rates-task
    Exchange rates come from the ECB daily feed into exchange_rates at {t=16:30|17:00|17:15} CET; conversions in
    reports use the rate of the invoice date, not today's.
p invoice-currency-lock
    An invoice's currency is fixed once its first line exists; changing it means voiding the draft. Supported:
    {c1=EUR|CHF}, {c2=GBP|USD}, {c3=SEK|DKK|PLN}.
p money-component
    The admin shows amounts with the <Money> component (admin/src/components/Money.tsx), which takes the currency code
    and the tenant's locale; {what=negative amounts show in red|credit notes show a minus sign}.
p late-fee-setting
    Late fees are opt-in per tenant (late_fee_rate in tenant settings, {r=0|1|2}% a month by default) and are added as
    a separate line named '{name=Late fee|Verzugszinsen|Mahngebühr}'.
p dunning-levels
    Dunning has {n=3|4} levels; level two adds the fee from tenant settings and level {n} hands the invoice to
    {who=the collection agency export|manual follow-up}.
p reminder-text-{lang}
    Reminder and dunning email texts are per tenant and per language in email_templates; {lang} falls back to English
    when a tenant has no text of its own.
p mailer-service
    All outgoing email goes through app/services/mailer.py: render with Jinja from app/templates/email/, store an
    email_log row, then queue the send on the {q=emails|mail} queue.
p email-attachment-limit
    Invoice emails attach the PDF only up to {mb=#3-10} MB; above that they carry a download link instead, because
    {relay} rejects bigger messages.
p invoice-bcc
    Tenants can set a BCC address for outgoing invoices (bcc_invoices_to in tenant settings); it gets {what=every invoice
    email|invoice and dunning emails} but no account emails.
p outgoing-webhook-signing
    Outgoing webhooks to tenants' systems carry an HMAC-SHA256 signature in the {hdr=X-Invoicing-Signature|X-Acme-Signature}
    header; delivery is retried {n=#5-10} times over {h=#12-48} hours.
p webhook-event-types
    Tenants can subscribe to {e1=invoice.finalized|invoice.paid} and {e2=payment.failed|credit_note.created} among
    others; the event types are the WebhookEvent class in app/schemas/webhooks.py.
p pdf-page-css
    The PDF stylesheet is app/static/pdf/{css=invoice.css|print.css} with @page size A4 and {mm=#12-25} mm margins; the
    footer with bank details is a running element on every page.
p pdf-render-times
    A {n=#10-40}-line invoice takes about {s=1.2|1.8|2.5} s to render; anything over {m=#150-400} lines is rendered on the
    {q=slow|bulk} queue so it doesn't hold up the others.
p qr-bill
    Swiss tenants get a QR-bill on the last page, drawn by the qrbill library as SVG; the account must be a QR-IBAN or
    {what=the validation fails|qrbill raises ValueError} on finalize.
p tenant-logo-size
    Tenant logos are resized to {px=#300-800} px wide on upload and stored as PNG; SVG logos are rasterized first
    because {why=a few rendered blank|print shops complained}.
p zugferd-profile
    German tenants can switch on ZUGFeRD/Factur-X: app/services/einvoice.py embeds the XML as PDF/A-3, profile
    {p=EN 16931|BASIC|EXTENDED}.
p xrechnung-buyer-reference
    XRechnung (for German public-sector customers) is UBL XML checked by the KoSIT validator in CI; those customers need
    a Leitweg-ID in customers.{col=leitweg_id|buyer_reference}.
p csv-export-format
    CSV exports use ; as separator and {enc=UTF-8 with BOM|Windows-1252} because Excel on the accountants' machines opens
    them that way; {who=German|Austrian} tenants get a decimal comma.
p datev-export-version
    The DATEV export writes EXTF format version {v=700|510}; account lengths come from tenant settings
    (datev_account_length, usually {n=4|5}).
p revenue-report-basis
    The revenue report sums paid invoices by {by=payment date|month of payment}, not by invoice date; {who=Marta|the
    accountant} wanted cash-basis numbers.
p report-cache
    Report results are cached in Redis for {m=#5-60} minutes per tenant and filter set; finalizing an invoice drops the
    tenant's {what=revenue|aging|VAT} report cache.
p aging-buckets
    The aging report buckets open invoices by days past due: 0-30, 31-60, 61-{n=90|120} and older; it reads from the
    replica and is cached for {m=#5-30} minutes.
p recurring-rrule
    Recurring invoice schedules store an rrule string (e.g. {rr=FREQ=MONTHLY;BYMONTHDAY=1|FREQ=WEEKLY;BYDAY=MO}); dateutil
    expands it and the admin shows the next {n=3|5} dates.
p invoice-search-config
    Invoice search uses a generated tsvector over number, customer name and line descriptions with the
    '{cfg=simple|german}' config; the GIN index is ix_invoices_search.
p backend-locales
    Backend strings are translated with babel; catalogs are in app/locale/<lang>/LC_MESSAGES and compiled during the
    image build. Languages: en, de and {l=fr|it|nl|es}.
p feature-flag-lookup
    Feature flags are rows in feature_flags (name, nullable tenant_id, enabled); is_enabled('{flag}', tenant) checks the
    tenant's row first, then the global one.
p flag-pilot-{flag}
    Flag {flag} is on for {n=#2-12} pilot tenants; turn it on for everyone only after {who=Marta|Jonas from support} has
    gone through the checklist in the PR.
p flag-cleanup-{flag}
    Feature flag {flag} has been on everywhere since {month}; the code paths behind it can go, tracked in issue
    #{n=#200-900}.
p task-log-context
    Logs are structlog JSON; bind tenant_id and {id=invoice_id|payment_id|export_id} with structlog.contextvars at the
    start of a task so every line of that task carries them.
p quiet-logger-{logger}
    The {logger=sqlalchemy.engine|fontTools|httpx|botocore} logger is set to WARNING in app/logging.py; at INFO it
    floods the {where=worker|API} log.
p tracing-sampling
    Tracing is OpenTelemetry to {backend=Tempo|Jaeger}; FastAPI, SQLAlchemy, Celery and httpx are instrumented, with
    {p=5|10|20}% sampling in production and 100% on staging.
p request-id-propagation
    Every request gets an X-Request-ID that is passed into Celery task headers; search Loki for it to follow one request
    into the {where=worker|PDF render|webhook delivery}.
p list-pagination
    List endpoints use cursor pagination (?cursor=&limit=, limit at most {n=100|200|250}); only the {old=products|price
    lists} list still has page and size, for an old integration.
p problem-json-codes
    API errors are problem+json with a machine-readable code such as {code=invoice_already_finalized|credit_exceeds_open_amount|
    customer_has_open_invoices}; the admin maps codes to messages.
p extra-forbid
    Request models forbid extra fields (extra='forbid'), so a misspelled field is a 422 instead of being ignored;
    {exc=webhook payloads are|the public import API is} the exception.
p idempotent-posts
    POST {ep=/payments|/credit-notes|/refunds} accepts an Idempotency-Key header; the first response is kept for
    {h=24|48} hours per tenant and header value.
p attachment-rules
    Attachments are limited to {mb=#10-25} MB; {ext=.exe|.js|.html} files are refused outright and everything else is
    virus-scanned before it is linked to an invoice.
p audit-events
    Changes to {what=invoices, payments and tenant settings|customers and credit notes} write an audit_events row through
    record_audit(); the admin's History tab reads from it.
p session-expire-on-commit
    The session factory has expire_on_commit=False so response models can read attributes after a commit;
    {what=tasks|scripts} open their own session with session_scope().
p invoice-list-loading
    The invoice list endpoint loads lines and customer with selectinload; without it the admin's list page made
    {n=#50-200} queries per request.
p constraint-naming
    MetaData has a naming_convention (ix_, uq_, ck_, fk_, pk_) so constraints get predictable names; the ones created
    before {month} {year=#2021-2023} still have Postgres' default names.
p public-ids
    Public ids are UUIDv7 in a public_id column; integer ids never leave the API except in the admin, which
    {what=shows them in tables|uses them in URLs}.
p ledger-balance-check
    Every payment, refund and credit note books a pair of ledger_entries that must sum to zero; check_ledger_balance
    runs nightly at {time} UTC and alerts when a tenant is off.
p payout-sync
    Stripe payouts are synced every {h=2|4|6} hours into payouts, with the balance transactions they contain, so
    {who=Marta|the accountant} can reconcile bank statements.
p quote-conversion
    Quotes become invoices through convert_quote_to_invoice(); the quote keeps a link to the new draft and its status
    becomes {s=accepted|converted}.
p subscription-proration
    Subscriptions bill in advance on the anchor day; proration on plan changes is left to Stripe, and our invoice mirrors
    Stripe's {what=line items|invoice lines} one to one.
p usage-aggregation
    Usage records come in through POST /usage in batches of up to {n=500|1000|5000}; they are summed per {per=day|hour}
    into usage_daily before the monthly billing run.
p discount-lines
    Discounts are a percentage or a fixed amount per invoice, stored as a separate negative line; {what=coupons|promo
    codes} don't stack with a customer's standing discount.
p product-price-copy
    Products have a default price per currency in product_prices; a line created from a product copies the price, so
    editing the product later doesn't change {what=existing drafts|sent invoices}.
p portal-magic-links
    The customer portal at portal.acme-{proj}.dev signs customers in with emailed links valid {m=15|30|60} minutes;
    they can download PDFs and pay, nothing else.
p gdpr-export
    A GDPR data export for one customer is scripts/gdpr_export.py <customer id>; it zips their invoices, payments,
    emails and audit entries in about {m=#2-10} minutes.
p gdpr-erasure
    GDPR erasure requests anonymize the customer's name, email and address in place but keep their invoices for the
    {y=10|7} years {country} tax law asks for.
p camt-import-{bank}
    Bank statements are imported as CAMT.053 XML ({bank} exports it that way); MT940 support was dropped in {month}.
p rates-conversion-reports
    Reports in a second currency use exchange_rates.rate at the invoice date with {n=6|8} decimal places; the
    {cur} column in exports shows the converted figure next to the original.
p invoice-pdf-regeneration
    Changing the tenant's logo or footer doesn't re-render finalized PDFs; {cmd=scripts/rerender_pdfs.py|make
    rerender-pdfs} does that on request, about {n=#200-900} PDFs a minute.
p customer-numbers
    Customer numbers are {fmt=K-<5 digits>|C<6 digits>} and chosen by the tenant's own scheme in settings; the import
    keeps the numbers from the old system when there are any.
p payment-methods-column
    payments.method is a text column with a CHECK constraint ({m1=card|sepa_debit}, {m2=bank_transfer|cash}, ...), kept
    deliberately small; {who=Marta} asked for cash to stay in.
p sepa-mandates
    SEPA direct debit mandates are created through Stripe and mirrored in sepa_mandates; the first debit goes out
    {d=#2-5} business days after the invoice is finalized.
p statement-pdfs
    Monthly customer statements are rendered on day {day=#1-5} of the month by build_statements on the {queue}
    queue; each lists open invoices and payments of the last {n=#30-90} days.
p webhook-delivery-log
    Every outgoing webhook attempt is stored in webhook_deliveries with status code and duration; the admin shows the
    last {n=#20-100} per endpoint and a button to resend.
p tax-id-formats
    Tax ids are validated with python-stdnum per country; {country} numbers once failed because of {what=a leading
    country prefix|spaces in the pasted value}, so the input is normalized first.
f raw-sql-reports
    Don't build report SQL with f-strings; {what=a tenant filter went missing|a sort parameter became injectable} once.
    Use SQLAlchemy Core with bound parameters.
f services-no-api-imports
    Don't import from app.api inside app.services or app.tasks; {what=the worker loads|the CLI scripts load} services
    without the web layer, and that broke once over such an import.
f orm-rows-in-{module}
    Don't return ORM rows from the {module} routes; map them to the Out schema inside the route, or lazy loads run
    after the session is closed.
f stripe-calls-{what}
    Don't call Stripe inside a request handler for {what=refunds|payment links|customer sync}; do it in a task with
    retries. A Stripe hiccup made the admin hang for {s=#20-60} s.
f tenant-filter-always
    Always filter by tenant_id in new repository methods, even for {what=lookups by primary key|admin-only endpoints}; a
    missing filter showed another tenant's {obj=invoice|credit note} in {month}.
f no-bare-except-{module}
    Don't catch bare Exception in the {module} code; it hid a {err=KeyError|TypeError|ValueError} for {n=#2-6} weeks.
    Catch what you expect and let the rest reach Sentry.
f no-print-{where}
    Don't leave print() in {where=tasks|services|scripts}; use the module's structlog logger, prints go nowhere useful in
    the containers.
f public-api-fields
    Don't rename or remove fields in the public API without a deprecation note; {who=two tenants|one tenant's ERP
    integration} read {field=invoice.number_formatted|payment.reference|customer.external_id}.
f batch-commits-{what}
    Don't wrap a whole {what=import|export|backfill} in one transaction; commit every {n=500|1000} rows. The last one held
    locks for {m=#10-40} minutes.
f ledger-post-entries
    Don't insert ledger_entries directly; go through post_entries(), which checks that the pair sums to zero. A direct
    insert in the {what=refund fix|payout sync} unbalanced {n=#3-30} tenants.
f quick-webhook-handlers
    Handlers for {src=Stripe|bounce|bank} webhooks must answer 2xx quickly and do the work in a task; a slow one made
    the sender retry and the same event was handled {n=twice|three times}.
f no-inline-pdf-{what}
    Don't render PDFs inside a request for {what=bulk downloads|statements|credit notes}; queue the render task, return
    202 and let the admin poll the job.
f not-null-columns-{tbl}
    Don't add a NOT NULL column to {tbl=invoices|payments|customers|invoice_lines} without a server_default; the rewrite
    locked the table on staging for {m=#2-9} minutes.
f role-checks-api
    Don't check roles only in the admin; every route needs require_role() too. A {role=viewer|support} user could
    {what=void invoices|issue refunds} through the API for a week.
f http-timeouts-{ext}
    Always pass a timeout to httpx calls to {ext=VIES|the ECB feed|Stripe's files API}; without one a worker hung for
    {m=#10-50} minutes.
f domain-error-codes
    Don't return bare 400s from the {module} routes; raise a DomainError with a code so the admin can show a real
    message instead of 'Something went wrong'.
f state-machine-only
    Don't set {what=invoice.status|credit_note.status|payment.status} directly in a service; go through the state
    machine, a direct write skipped the ledger posting in {month}.
f customer-facing-wording
    Don't change customer-facing email or PDF wording in a {what=refactor|dependency bump} PR; {who=Marta|Jonas from
    support} wants to read those changes on their own.
f vat-texts-legal
    Don't edit the VAT notes on the PDF ({note=reverse charge|small business|intra-EU supply}) without asking
    {who=Marta|the tax adviser}; the wording is a legal requirement.
f no-n-plus-one-{what}
    Check the query count when adding a field to the {what=invoice list|customer list|payments table} response; use
    selectinload, a single added relation made the page {n=#3-9} times slower.

# --- admin frontend ------------------------------------------------------------------------------
p admin-router-v{v}
    Admin routes are defined in admin/src/routes.tsx with react-router {v=6|7}; each section ({sec=settings|reports|credit
    notes}, invoices, customers) is lazy-loaded.
p query-keys-{res}
    Query keys in the admin start with the resource name, ['{res=invoices|customers|payments|credit-notes}', filters],
    so a mutation invalidates everything under that prefix.
p stale-time-{res}
    The {res=invoices|customers|payments} list has a staleTime of {s=30|60|300} s; the detail page refetches on window
    focus because {who=Marta|support} edits in two tabs.
p admin-form-schemas
    Admin form schemas are zod objects in admin/src/schemas/{res=invoice|customer|payment|tenant}.ts; z.infer gives the
    form's TypeScript type from the same schema.
p admin-tables-sorting
    Admin tables use TanStack Table with server-side sorting; {what=only the settings tables sort on the client|the
    invoices table sorts by number, newest first, by default}.
p admin-api-base
    The admin reads its API base from import.meta.env.VITE_API_BASE; in production it is
    {v=/api on the same origin|the api subdomain}, locally the dev server proxies /api.
p admin-icons
    Icons come from {lib=lucide-react|@tabler/icons-react}; import each icon by name, the one barrel import added
    {kb=#200-600} KB to the bundle.
p admin-chunks
    The admin's main chunk is about {kb=#380-700} KB; the {lib=chart library|PDF viewer|date picker} lives in its own
    chunk behind a dynamic import.
p admin-date-format
    Dates in the admin are shown as {fmt=dd.MM.yyyy|d MMM yyyy} for German tenants and {fmt2=MM/dd/yyyy|yyyy-MM-dd}
    otherwise; the helper is formatDate() in admin/src/lib/dates.ts.
p admin-401-redirect
    The admin keeps no session state in localStorage; a 401 from any request redirects to /login?next=<path> from the
    {where=query client's error handler|fetch wrapper}.
p admin-error-boundaries
    Each admin page has an ErrorBoundary with a Reload button; {what=the invoice editor|the reports page} has its own,
    so a crash there keeps the sidebar usable.
p storybook-port
    Storybook runs on localhost:6006 from the storybook script in admin/package.json; new components in
    admin/src/components/{dir=ui|forms|tables} need a story before review.
p msw-handlers-{res}
    Component tests answer API calls with msw handlers in admin/src/test/handlers/{res=invoices|customers|payments}.ts,
    which return fixtures from admin/src/test/fixtures/.
p vitest-setup
    Vitest runs with {env=jsdom|happy-dom}; tests sit next to the component as *.test.tsx, and admin/src/test/setup.ts
    registers the {what=msw server|jest-dom matchers}.
p playwright-suite
    Playwright e2e tests in admin/e2e/ run against the compose stack with the demo seed; {n=#12-40} specs, about
    {m=#3-9} minutes, and traces of failures are uploaded as CI artifacts.
p e2e-storage-state
    E2E tests log in once in global-setup.ts and reuse the storage state in admin/e2e/.auth/{who=admin|accountant}.json;
    a spec that logs in itself is slower by {s=#2-5} s.
p admin-tsconfig
    The admin's tsconfig has strict, noUncheckedIndexedAccess and {opt=noImplicitOverride|noFallthroughCasesInSwitch};
    the middle one is why array[0] is possibly undefined everywhere.
p admin-eslint
    ESLint config is admin/eslint.config.js (flat config) with the {plug=react-hooks|jsx-a11y|import} plugin; the admin
    CI job fails on any warning (--max-warnings 0).
p admin-path-alias
    The admin imports through the @/ alias for admin/src; it is set in tsconfig.json paths and in vite.config.ts
    resolve.alias, and {what=Vitest reads the Vite one|both must stay in sync}.
p invoice-editor-autosave
    The invoice editor keeps lines in local state and saves the whole draft with one PUT every {s=2|3|5} s while typing;
    a conflict comes back as 409 with the server's version.
p pdf-preview-iframe
    The PDF preview in the admin is an iframe on /invoices/<id>/preview.pdf?draft=1, rendered fresh each time, so it
    takes {s=1|2|3} s for a big draft.
p design-tokens
    Colors and spacing come from admin/src/theme/tokens.ts; {who=Priya|the designer} asked that no raw hex values show up
    in components.
p field-wrapper
    Form inputs in the admin go through the <Field> wrapper so label, error and aria-describedby are wired up;
    {what=the login page|the tenant settings form} was the last place without it.
p admin-upload-widget
    File uploads in the admin go straight to S3 with a presigned POST from /uploads/sign; the widget shows progress and
    refuses files over {mb=#10-25} MB before uploading.
p admin-locales
    Admin translations are JSON files in admin/src/locales/; a missing entry shows its id, and CI's
    {job=i18n-check|locales-lint} job fails when de.json and en.json don't have the same entries.
p admin-version-footer
    The admin footer shows the build's git SHA from import.meta.env.VITE_GIT_SHA; {who=Jonas|support} asks customers for
    it in {what=bug reports|screenshots}.
f admin-no-any
    Don't use any in the admin to silence tsc; use unknown and narrow it, or fix the type. {n=#2-5} bugs in {month} hid
    behind an 'as any' in {file=PaymentsTable.tsx|CustomerForm.tsx|TaxRatesPage.tsx}.
f admin-fetch-in-effect
    Don't fetch data in useEffect in the admin; use a hook from admin/src/api/hooks/. The {page=customers|payments|reports}
    page fetched everything twice because of it.
f admin-inline-styles
    Don't add inline style props in admin components; {who=Priya|the designer} wants everything through the tokens and
    the {lib=CSS modules|Tailwind classes} we already have.
f admin-console-log
    Don't leave console.log in the admin; the {tool=no-console rule|lint job} fails on it, and {what=a customer email|a
    whole invoice payload} once showed up in a support screenshot.
f admin-snapshot-tests
    Don't add snapshot tests for admin pages; they broke on every copy change and nobody read the diffs. Assert on
    {what=roles and labels|the visible text} with Testing Library.
f admin-date-parsing
    Don't parse date strings with new Date() in the admin; '{d=2025-03-01|2024-12-31}' turns into the previous day in US
    time zones. Use parseISO.
f e2e-test-ids
    Use data-testid in Playwright specs only when no role or label works; {who=I|we} want the {spec=invoice|refund|export}
    specs to read like what a user sees.
f e2e-fixed-waits
    Don't use page.waitForTimeout in Playwright specs; wait for a role or a response. The {spec=invoice-create|refund|export}
    spec was flaky for weeks because of a fixed wait.
r figma-admin
    Figma file for the admin: '{name=Invoicing Admin|Admin UI 2024}', one page per section, {p=invoices|settings|reports} the
    most up to date;
    {who=Priya} keeps the component names in line with admin/src/components.
r admin-a11y-checklist
    Accessibility checklist for admin pages: docs/frontend/a11y.md ({n=#8-20} items); {who=Priya|the designer} goes
    through it for every new {what=form|table page}.

# --- tests ---------------------------------------------------------------------------------------
p {f}
    Test factories are in tests/factories.py (factory_boy); {f=invoice_factory|payment_factory|credit_note_factory}
    builds a finalized one unless you pass status='draft'.
p pytest-markers
    Pytest markers: {m1=slow|e2e}, {m2=stripe|vies} and {m3=pdf|golden}; tests that reach a real external service carry
    the {m2} marker and only run in the nightly job.
p stripe-mock-service
    In tests, Stripe calls go to stripe-mock (the stripemock compose service on port {port=12111|12112}); it checks
    requests against the API schema and returns canned objects.
p time-travel-fixture
    Tests that depend on the date use time-machine's travel fixture; freezegun was removed because it
    {why=broke Celery's ETA handling|was slow with pydantic}.
p coverage-floor
    Coverage is measured in CI with --cov=app and a floor of {p=#80-90}%; {module} is the module with the lowest
    coverage right now.
p golden-pdfs-{doc}
    PDF tests compare the first page as PNG against tests/golden/{doc=invoice|credit_note|statement}.png with a
    {p=0.5|1|2}% pixel tolerance; --update-goldens rewrites them.
p api-client-fixture
    API tests use the api_client fixture (a TestClient with a tenant and a logged-in {role=owner|admin} user); public
    endpoints use anon_client.
p e2e-database
    The Playwright run uses its own database {proj}_e2e, seeded by {cmd=make seed-e2e|scripts/seed_e2e.py} before the
    first spec; the specs never clean up after themselves.
p hypothesis-examples
    Hypothesis runs {n=50|100|200} examples per property locally and {m=500|1000} in the nightly job; the
    {what=tax calculation|payment matching|number formatting} properties are in tests/properties/.
p slowest-tests-{dir}
    The slowest tests are in tests/{dir=pdf|exports|reports}/; --durations=10 lists them, and the top one takes about
    {s=#3-12} s.
p conftest-{dir}
    Fixtures shared by API and service tests are in tests/conftest.py; the ones only the {dir=tasks|webhooks|exports}
    tests need are in tests/{dir}/conftest.py.
p outbox-fixture
    Tests check outgoing mail through the outbox fixture, which collects messages instead of sending; assert on
    {what=subject and recipients|recipients and attachments}, the HTML body changes too often.
p flaky-{t}
    test_{t=export_large_tenant|payout_sync_pagination|statement_render} is flaky on slow CI runners; the cause is a timeout
    of {s=#2-10} s inside the test itself, tracked in #{n=#300-900}.
p vcr-cassettes
    Calls to {ext=VIES|the ECB feed|the bank API sandbox} in tests replay cassettes from tests/cassettes/ (pytest-recording);
    rerecord one with --record-mode=rewrite.
p factory-sequences
    Factory sequences for {what=customer numbers|emails|product names} restart per test session, so don't assert on a
    specific value; assert on the one the factory returned.
p test-tenant-fixture
    The tenant fixture builds a tenant with {lang=German|French} settings and {cur} as currency; pass tenant_settings=
    to override single fields.
f test-names
    Name tests after the behaviour ({ex=test_credit_note_cannot_exceed_open_amount|test_refund_needs_second_approval|
    test_payment_matches_by_reference}), not after the function under test.
f one-behaviour-per-test
    Keep one behaviour per test in {dir=tests/services|tests/api|tests/tasks}; the old {old=test_invoice_flow|test_everything}
    monster took a day to untangle when it broke.
f factories-over-json
    Use the factories instead of adding JSON fixture files under tests/data/; the {n=#12-40} old JSON files keep
    drifting from the models.
f no-sleep-in-tests
    Don't put time.sleep in tests to wait for {what=a task|a PDF render|a webhook}; wait on the result with a timeout.
    The sleeps had added {s=#20-90} s to the suite.
f external-api-tests
    Don't call the real {ext=Stripe test API|VIES service|bank sandbox} from the normal test run; only tests marked
    {m=stripe|external} may, and CI runs those nightly.
f test-order-independence
    Tests run in random order ({plugin=pytest-randomly|pytest-random-order}); a test that only passes after another one
    is broken, fix the test, not the order.
f golden-updates-review
    When you regenerate the golden PDFs, say which ones changed and why; {n=#2-6} goldens were updated by accident in
    {month} and hid a {what=footer|logo} bug.

f review-autogenerate
    Read every autogenerated revision before committing it; autogenerate once dropped the
    {tbl=legacy_tax_codes|old_exports|import_batches} table because its model had been deleted first.
f settings-safe-defaults
    Don't give a new setting a production-looking default (a real {what=bucket name|mail host|hostname}); default to the
    local value, so a missing value shows up on staging instead of silently in production.
f no-prod-rows-in-fixtures
    Don't copy production rows into test fixtures, not even anonymized-looking ones; {n=#2-5} real customer names ended
    up in tests/data/ in {month}.
f look-at-rendered-pdf
    After touching the PDF templates, render {doc=an invoice|a credit note|a statement} with make pdf-sample and look
    at it; the golden tests don't cover {what=the second page|long customer names|the QR-bill page}.
f queue-needs-consumer
    Don't add a Celery queue without a worker that consumes it in compose and in production; jobs sat on the {queue}
    queue for {h=#2-9} hours once because nothing read it.
f stream-large-exports
    Stream large {what=CSV|XLSX} exports to S3 in chunks; building one in memory got the worker OOM-killed at
    {n=#40-200}k rows.
f v1-responses-frozen
    Don't change a /api/v1 response in place for {what=the partner integration|the mobile app}; add the new field and
    put the removal of the old one in docs/api/deprecations.md.
f flags-start-off
    New feature flags start off everywhere, staging included; switch one like {flag} on per tenant from the admin,
    never from a migration.
f expected-cases-log-level
    Don't log expected cases like {what=a VIES timeout|an unmatched bank transfer|a bounced email} at WARNING; the
    warning-volume alert paged on a {weekday} night for nothing.
f reports-use-replica
    New reports read from the replica with get_replica_session(); the {what=VAT|aging|revenue} report on the primary
    slowed down every other query at month end.
f no-optimistic-money
    Don't add optimistic updates for {what=payments|refunds|finalizing}; the server decides amounts and status there,
    and a wrong optimistic value confused {who=Marta|a customer} once.
f seed-data-realistic
    Keep the demo seed realistic: {what=German and Swiss tenants|several currencies|long customer names} must stay in it,
    the {bug=QR-bill|layout|export} bugs only showed with those.

# --- tooling ---------------------------------------------------------------------------------------
p ruff-config
    ruff's config is in pyproject.toml with line length {n=100|110|120}; the {rule=DTZ|PT|SIM} rules were added in
    {month} and the old violations are listed in per-file ignores.
p mypy-scope
    mypy is strict for app/ but not for {dir=scripts/|alembic/versions/|tests/}; the old SQLAlchemy mypy plugin is off,
    SQLAlchemy 2 ships its own types.
p type-ignores-{mod}
    There are {n=#5-40} type: ignore comments left, most in app/integrations/{mod=stripe|vies|ecb}.py where the client
    library has no stubs.
p pre-commit-hooks
    pre-commit runs ruff, ruff-format, {h=check-yaml|end-of-file-fixer|check-merge-conflict} and a local hook that fails
    when {what=alembic has more than one head|a migration file is renamed|print( shows up in app/}.
p make-seed
    make seed loads the demo data: {n=#3-8} tenants, about {m=#200-900} customers and a year of invoices; make seed-small
    is the quick variant for trying things by hand.
p make-shell
    make shell opens IPython in the api container with {what=the session and the models|db, Invoice and Customer}
    already imported.
p make-psql
    make psql opens psql on the dev database inside the db container with {x=expanded display on|timing on}; make
    psql-staging goes through the bastion.
p make-fmt
    make fmt runs ruff format and ruff check --fix on the backend and {fe=prettier|biome} on admin/src; it is not part of
    CI, the lint job only checks.
p make-e2e
    make e2e starts the compose stack with the e2e profile, seeds {proj}_e2e and runs Playwright headless; add
    HEADED=1 to {what=watch it|step through it}.
p make-openapi
    make openapi writes openapi.json from the app; CI's openapi-diff job compares it with main and comments
    {what=breaking changes|a summary} on the PR.
p make-reset-db
    make reset-db drops and recreates the dev database and runs the seed again; it takes about {s=#20-90} s and leaves
    the {vol=minio|mailpit} data alone.
p compose-override-{x}
    docker-compose.override.yml is gitignored; mine {what=mounts a local checkout of qrbill|turns off --reload for the
    api|adds the clamav service}{!x@what=qrbill|no-reload|clamav}, so compose behaves a little differently on my machine.
p compose-profile-{prof}
    The {prof=tools|observability} compose profile adds {what@prof=Flower and pgAdmin|Grafana, Loki and Tempo}; nothing in
    the default stack depends on it.
p renovate-grouping
    Renovate groups {g=eslint|vitest|@types} packages into one PR and automerges patch updates of devDependencies once CI
    passes; {weekday} is its day.
p exact-pins-{lib}
    Backend dependencies are pinned with == only for {lib=WeasyPrint|stripe|celery|kombu}; everything else uses
    compatible-release specifiers in pyproject.toml.
p breakpoint-debugger
    PYTHONBREAKPOINT is {dbg=ipdb.set_trace|pudb.set_trace} in the api container, so breakpoint() works after
    docker compose attach {svc=api|worker}.
p editorconfig
    .editorconfig sets {n=4|2} spaces for {what@n=Python|TypeScript, JSON and YAML} and LF line endings; Windows
    contributors got CRLF in migrations before it existed.
p make-help
    make help lists every target with its comment; a new target needs a ## comment or it doesn't show up.
    make {t=seed|e2e|openapi} is the one I use most.
p scripts-dir
    scripts/ holds one-off and ops scripts, each runnable as python -m scripts.<name>; {what=oneoff/|backfills/} scripts
    are deleted {n=#1-6} months after they ran.
f no-unsafe-fixes
    Don't run ruff check --unsafe-fixes over the whole repo; it rewrote {n=#10-60} {what=Optional annotations|dict()
    calls} and hid a behaviour change in the diff.
f type-ignore-codes
    Don't add # type: ignore without an error code; write # type: ignore[{code=arg-type|attr-defined|union-attr}] so the
    next reader knows what is silenced.
f no-no-verify
    Don't commit with --no-verify to get past pre-commit; if the {hook=ruff|mypy|check-yaml} hook is wrong, fix its
    config in a change of its own.
f lockfile-conflicts
    When a lockfile conflicts in a rebase, don't merge it by hand; take main's version and lock again. A hand merge in
    {month} left {lib} at two versions.
f compose-image-rebuild
    After changing {what=the Dockerfile|system packages|the base image} run docker compose build --no-cache {svc=api|worker};
    a stale layer cost me an afternoon in {month}.

# --- process -------------------------------------------------------------------------------------
p branch-names
    Branch names are <issue number>-<short topic>, e.g. {ex=412-credit-note-pdf|388-vies-retry|455-datev-export}; the
    issue closes when the PR merges.
p pr-size
    PRs over {n=#300-600} changed lines (generated files excluded) get split; {who=Marta|Jonas} also looks at the ones
    touching {what=tax|ledger|payment} code.
p pr-template
    The PR template asks for what changed, how it was tested and {x=migration yes/no|screenshots for admin
    changes|rollout notes}; leave the headings in even when a section is empty.
p merge-method
    PRs are {how=squash-merged|rebased and merged} from the GitHub UI; the branch is deleted automatically and the
    issue moves to Done on the board.
p changelog-unreleased
    CHANGELOG.md has an Unreleased section at the top; every user-visible change adds a line there in its PR, under
    {g=Added|Changed|Fixed}.
p release-notes
    Customer-facing release notes go to the {where=help center|admin's What's new panel} once a {freq=week|fortnight};
    {who=Jonas from support|I} write them from CHANGELOG.md.
p issue-labels
    Issue labels: {l1=bug|regression}, {l2=tax|ledger|pdf} and {l3=customer-reported|support}; customer-reported bugs
    get a reply in the support ticket once the fix is live.
p on-call-hours
    On-call is {who=me alone|me and Marta in alternate weeks} during {hours=08:00-20:00|working hours} CET; outside
    that only the {what=API down|payments failing} alert pages.
p incident-notes
    Incident notes go in docs/incidents/YYYY-MM-DD-<slug>.md with timeline, impact and follow-ups; the {month}
    {what=PDF backlog|SMTP outage|disk-full} note is the one to copy.
p support-escalation
    Support tickets tagged {tag=bug|billing-error} in {tool=Help Scout|Zendesk|Freshdesk} show up in #dev; {who=Jonas}
    adds the tenant id and the invoice number before escalating.
p roadmap-board
    The roadmap is the GitHub project '{name=Invoicing 2025|Roadmap}'; items in the {col=Now|Next} column are the ones
    customers were promised.
p review-turnaround
    Reviews from {who=Marta|Jonas} usually come within {h=#4-24} hours; for anything urgent ping in #dev, the GitHub
    notifications get lost.
p dependency-review-day
    Renovate PRs are reviewed on {weekday}s, all at once; major updates of {lib} get an issue first with notes from
    the changelog.
p customer-comms
    Planned downtime is announced to tenants {d=3|5|7} days ahead by email and on the status page;
    {who=Jonas writes the text|I write the text and Jonas sends it}.
f issue-number-in-pr
    Put the issue number in the PR description (Closes #{n=#100-900}); the board only moves the card when it is there.
f backfill-separate-pr
    Keep a migration and the code that needs it in one PR, but {what=data backfills|index creation on big tables} in a
    separate one, so the rollout can be split.
f draft-prs
    Open work-in-progress PRs as drafts; {who=Marta|reviewers} get pinged for every non-draft PR and {n=#2-4} of them
    once reviewed half-finished code.
f money-checks-before-review
    Before asking for review on {what=tax|ledger|payment} changes, run make check-{what} and paste its summary in the PR
    description.
f friday-migrations
    Don't merge PRs with migrations after {t=13:00|14:00|15:00} on a Friday; nobody watches the {what=error rates|slow
    query log} over the weekend.
f incident-note-always
    Write an incident note for anything customers noticed, even if it lasted {m=#5-20} minutes; {who=Jonas|support}
    links them in replies to customers.
f no-container-hotfix
    Don't hotfix production by editing files inside a container; even a {what=template typo|wrong VAT text} goes
    through a PR and the normal deploy.
f issue-before-big-change
    For anything bigger than {n=two|three|five} days of work, write an issue with the plan first; the {what=ledger|multi-currency}
    rewrite went in the wrong direction for a week without one.
f pr-screenshots
    PRs that change the admin need a before/after screenshot of {what=the page|each changed page}; {who=Priya|the
    designer} reviews from those.

# --- references ----------------------------------------------------------------------------------
r grafana-{dash}
    Grafana: https://grafana.acme-{proj}.dev/d/{dash=worker-memory|db-connections|redis-memory|disk-usage} shows
    {what@dash=worker memory and restarts|Postgres connections and slow queries|Redis memory and evictions|disk usage per host}.
r grafana-business-{dash}
    The business dashboard https://grafana.acme-{proj}.dev/d/{dash=business-daily|revenue-overview} has invoices
    issued, paid and overdue per day; {who=Marta} looks at it every {weekday}.
r grafana-pdf-render
    PDF render times and failures: https://grafana.acme-{proj}.dev/d/{dash=pdf-render|weasyprint}; a p95 above
    {s=#4-10} s usually means the renders are starved for workers.
r grafana-email-delivery
    Email delivery dashboard: https://grafana.acme-{proj}.dev/d/email-delivery, fed by the {relay} events; a bounce
    rate above {p=2|3|5}% is worth a look.
r grafana-stripe-intake
    Stripe event intake per type and handler errors: https://grafana.acme-{proj}.dev/d/{dash=stripe-events|payments-intake};
    {who=Marta|I} check it after each Stripe API version bump.
r sentry-alert-rules
    Sentry alert rule '{rule=New issue in tasks|PDF render failures|Stripe errors spike}' posts to #alerts; it was set
    up after the {month} incident.
r sentry-releases
    Sentry releases are created by the deploy workflow with sentry-cli and named after the git SHA, so
    {what=resolving an issue in the next release works|regressions reopen on their own}.
r sentry-sampling
    Sentry performance sampling is traces_sample_rate {r=0.05|0.1|0.2} in production; the {ep=/reports|/exports}
    endpoints get 1.0 through a traces_sampler.
r ops-notes-{k}
    Ops notes for {what=PDF renders failing|SMTP bounces piling up|the Postgres disk filling up|Redis out of memory|VIES
    being down}: docs/ops/{file@what=pdf-render-failing|smtp-bounces|db-disk-full|redis-oom|vies-down}.md{!k@file=pdf|
    smtp|disk|redis|vies}; {who=I|Marta} wrote it after the {month} incident.
r tenant-restore-notes
    Restoring a single tenant from backup is written up in docs/ops/{f=tenant-restore.md|restore-one-tenant.md}; it
    restores into a scratch database and copies rows across, about {h=an hour|two hours} of work.
r adr-{n}
    ADR {n=#3-28} '{title=Use Celery over RQ|Store PDFs in S3, not Postgres|One database for all tenants|Cursor pagination
    for list endpoints}' is in docs/adr/; it still describes how things are.
r design-doc-{f}
    Design doc for {what=multi-currency reports|the customer portal|usage billing}:
    docs/design/{f@what=multi-currency-reports|customer-portal|usage-billing}.md; its open questions section is still
    open.
r public-api-docs
    The public API reference is at https://docs.acme-{proj}.dev/api, built from openapi.json by the
    {wf=docs|publish-docs} workflow; it only shows routes tagged {tag=public|v1}.
r stripe-docs-{what}
    Stripe docs we keep going back to for {what=Checkout Sessions|Billing test clocks|Refunds|Payouts reconciliation}:
    https://docs.stripe.com/{path@what=payments/checkout|billing/testing/test-clocks|refunds|payouts/reconciliation}.
r vies-service
    VIES VAT number checks are documented at https://ec.europa.eu/taxation_customs/vies/; it is down
    {freq=most Sunday nights|for a few hours every few weeks}, hence the nightly recheck.
r xrechnung-spec
    XRechnung spec and the KoSIT validator: https://xeinkauf.de/xrechnung/ (we target version {v=3.0|2.3}); the
    validator config is checked in under tools/kosit/.
r zugferd-spec
    Factur-X/ZUGFeRD spec PDFs are in docs/specs/zugferd-{v=2.2|2.3}/; the profile table on page {p=#12-40} is the part
    to read.
r datev-spec
    DATEV format description (EXTF): docs/specs/datev-extf-{v=700|510}.pdf, from {who=Marta|the tax adviser}; the
    columns of our export follow its table.
r qr-bill-guidelines
    Swiss QR-bill implementation guidelines v{v=2.2|2.3}: docs/specs/qr-bill.pdf; the qrbill library follows them and our
    wrapper is app/services/qrbill.py.
r onboarding-wiki
    Onboarding notes are the wiki page '{page=Getting started|Dev setup}' (last updated in {month}); the section on
    {sec=Stripe test cards|seeding demo data} is the most useful part.
r status-page
    Public status page: https://status.acme-{proj}.dev ({tool=Better Stack|Instatus}); incidents there are written by
    {who=me|Jonas} in plain language, without internals.
r loki-saved-query
    Saved Loki query 'worker errors' in Grafana Explore: {{container="{c=worker|api|beat}"}} |= "ERROR"; add the
    tenant_id filter when a {what=customer|tenant} reports something.
r postgres-docs-{what}
    Postgres docs page we keep needing, on {what=ALTER TABLE lock levels|CREATE INDEX CONCURRENTLY|JSONB operators}:
    https://www.postgresql.org/docs/16/{path@what=sql-altertable.html|sql-createindex.html|functions-json.html}.
r celery-docs-{what}
    Celery docs for {what=task routing|time limits|retrying}: https://docs.celeryq.dev/en/stable/userguide/{path@what=routing.html|workers.html|tasks.html},
    the bookmarks are in the wiki.
r weasyprint-docs
    WeasyPrint's docs on {what=page-based CSS and running elements|its Python API}: https://doc.courtbouillon.org/weasyprint/stable/
    (we are on v{v=61|62|63}).
r public-spec-{v}
    The public API spec for partners is docs/api/public-v{v=1|2}.yaml, written by hand; CI checks it against the
    schema the app serves, and it is {what=published with the docs|sent to partners as a file}.
r api-collection
    The {tool=Bruno|Insomnia} collection for the public API is in tools/api-collection/; it has environments for local
    and staging, the values come from the vault.
r tedb-rates
    VAT rates reference: the EU's TEDB (https://ec.europa.eu/taxation_customs/tedb/); the {country} rates in tax_rates
    were last checked against it in {month}.
r ecb-feed
    ECB reference rates feed: https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml, published around 16:00
    CET on working days; {c=CHF|GBP|USD|SEK|DKK|PLN} is in it, a few of our currencies need {alt=the SNB|Norges Bank} instead.
r camt-mapping-{bank}
    CAMT.053 field mapping for {bank} is in docs/banks/{bank.slug}.md; the remittance text is in
    Ntry/NtryDtls/TxDtls/RmtInf/Ustrd, the end-to-end id next to it.
r cloud-console
    Server console and snapshots: the hosting provider's cloud console, project '{name=invoicing-prod|acme-invoicing}';
    {host} gets a snapshot before each Postgres upgrade.
r workflow-{wf}
    CI workflow .github/workflows/{wf=ci|nightly|e2e|docs}.yml runs {what@wf=the backend and admin jobs on
    every PR|the external-service tests and the backup check|Playwright on PRs labelled e2e|the public API docs build}.
r postgres-tuning
    Postgres tuning notes are in docs/ops/postgres.md: shared_buffers {g=2|4|8} GB, work_mem {w=16|32|64} MB, and why
    autovacuum is more aggressive on {table}.
r contract-tenants-{plan}
    Tenants on the {plan=Pro|Enterprise} plan with custom contracts are listed in docs/customers/{plan.slug}.md; check it
    before changing {what=invoice layouts|export formats}.
r subprocessors
    Data processing agreement and subprocessor list: docs/legal/subprocessors.md ({n=#5-12} entries); a new service
    that sees customer data goes in there {d=14|30} days before use.
r glossary-{code}
    The translation glossary for {lang=German|French|Italian} (invoice, credit note, dunning...) is
    docs/i18n/glossary-{code@lang=de|fr|it}.md; {who=Marta|a translator} keeps it.
r stripe-dashboard-views
    Stripe dashboard view for failed {what=payouts|payments|refunds}: it is saved as '{name=Failed this week|Needs
    attention}'; {who=Marta} goes through it on {weekday}s.
r email-preview
    Email templates are previewed with {cmd=make email-preview|scripts/preview_emails.py}, which writes one HTML file per
    template and language to tmp/emails/.
r openapi-style-guide
    API naming rules are in docs/api/style.md: plural resources, snake_case fields, {what=ISO 4217 currency codes|ISO
    8601 durations} everywhere; {n=#10-25} rules in all.
r tax-adviser-notes
    Notes from the calls with {who=the tax adviser|Marta} about {what=reverse charge|OSS reporting|small business
    rules} are in docs/tax/notes-{year=#2022-2025}.md.
r oss-reporting
    The EU OSS VAT report is built by scripts/oss_report.py per quarter; the format follows the {country} portal's CSV
    upload, documented in docs/tax/oss.md.
r incident-index
    docs/incidents/README.md lists every incident note with a one-line summary; the {month} one about
    {what=the PDF backlog|the SMTP outage|a full disk} has the longest follow-up list.
r architecture-diagram
    The architecture diagram is docs/architecture.{ext=drawio|excalidraw} (services, queues, buckets, external APIs);
    {who=I|Marta} update it when a {what=queue|service} is added.
r dependency-notes
    Why each odd dependency is there ({lib} among them) is in docs/dependencies.md; it also lists the {n=#2-5} we
    tried and removed.
r pagerduty-schedule
    Alert routing is in {tool=Grafana OnCall|PagerDuty|Opsgenie}, schedule '{name=Invoicing primary|billing-oncall}';
    escalation goes to {who=Marta|my phone} after {m=#10-30} minutes.
r load-test-results
    Load test results from {month} are in docs/perf/{what=invoice-list|pdf-render|export}.md: k6 script in
    tools/k6/, about {n=#40-400} requests per second before p95 went over a second.
r help-center-articles
    Help center articles that explain {what=reverse charge|late fees|payment links} to customers:
    https://help.acme-{proj}.dev/{path@what=reverse-charge|late-fees|payment-links}; support links them in replies.

r grafana-edge
    nginx request rates, 4xx by route group and upload sizes: https://grafana.acme-{proj}.dev/d/{dash=nginx-overview|edge};
    the '{panel=Top 4xx routes|Largest uploads}' panel is the useful one.
r grafana-export-jobs
    Export job durations and sizes: https://grafana.acme-{proj}.dev/d/{dash=export-jobs|exports}, one row per export
    kind; DATEV exports are the slowest at about {m=#2-9} minutes.
r grafana-ledger-balance
    Ledger balance check results per tenant: https://grafana.acme-{proj}.dev/d/ledger-balance; a red cell means the
    check found a difference {what=that night|on the last run}.
r sentry-ownership
    Sentry issue owners: docs/ops/sentry-ownership.md maps {path=app/tasks/*|app/integrations/*|app/services/ledger*} to
    {who=me|Marta}; unassigned issues show up in the weekly digest.
r oncall-handbook
    On-call handbook: docs/oncall.md (what pages, how to reach {relay}, Stripe and the hosting provider); the contact
    list at the end was updated in {month}.
r vendor-list
    Vendor list with account ids and support links: docs/ops/vendors.md; {relay} and {other=the S3 provider|the DNS
    provider} are the ones that needed support tickets so far.
r billing-glossary
    Domain glossary (draft, finalized, credit note, dunning level, open amount...) is the wiki page
    '{page=Glossary|Billing terms}'; {who=Marta} wrote most of it.
r invoice-rules-{country}
    Links to the {country} rules on what an invoice must contain are collected in docs/tax/{country.slug}.md, each with
    the date it was last checked.
r alembic-cookbook
    Alembic cookbook pages we use, {what=batch migrations|running migrations from code|conditional migration elements}:
    https://alembic.sqlalchemy.org/en/latest/cookbook.html.
r sqlalchemy-docs-{what}
    SQLAlchemy 2.0 docs on {what=relationship loading|the session lifecycle|DML with RETURNING}:
    https://docs.sqlalchemy.org/en/20/{path@what=orm/queryguide/relationships.html|orm/session_basics.html|core/dml.html}.
r fastapi-docs-{what}
    FastAPI docs on {what=dependencies with yield|custom exception handlers|response models}:
    https://fastapi.tiangolo.com/tutorial/{path@what=dependencies/dependencies-with-yield|handling-errors|response-model}/.
r plan-limits
    Plan limits (invoices per month, {what=admin users|API calls}, tenants per account) come from docs/plans.md;
    plan_limits in the code must match it, and {who=Marta} owns that page.
r datev-help-article
    The step-by-step guide for {who=accountants|tenants} importing our DATEV file is
    https://help.acme-{proj}.dev/{path=datev-import|export-to-datev}; its screenshots were redone in {month}.

# --- the person: preferences (user/) and rules for the agent (feedback) ---------------------------
u editor
    I use {ed=Neovim|VS Code|Helix|PyCharm|Zed} with {lsp=basedpyright|pyright|ruff's language server}; file:line
    references let me jump straight to the spot.
u machine
    My machine is a {m=MacBook Pro M3|MacBook Air M2|ThinkPad on Fedora|Framework laptop on Ubuntu} ({ram=16|32|36} GB
    of RAM), and Docker runs in {rt=OrbStack|Colima|Docker Desktop}.
u terminal
    Terminal: {t=WezTerm|Ghostty|kitty|iTerm2|Alacritty} with tmux; I keep {what=the compose logs|the admin dev server|a
    psql session|htop} in a split on the right.
u working-hours
    I work {h=08:00-16:00|09:00-17:30|07:30-15:30|08:30-17:00} CET on weekdays and keep focus time until
    {t=10:30|11:00|12:00}; meetings and calls come after that.
u language
    I'm {lang=German|Dutch|Austrian|Swiss}; English is fine for code and docs, but customer-facing texts in
    {l2=French|Italian|Dutch} get a native check from {who=Marta|a translator|a friend}.
u options-first
    When there is a {when=real design choice|choice between libraries|schema change with more than one shape}, give me
    {n=two|two or three} options with a line of trade-offs each, then say which one you'd pick.
u code-style
    I prefer early returns over nested ifs, and small named functions over comments; {ex=helpers named
    do_stuff|one-letter variables outside comprehensions|boolean flag parameters|functions over a screen long} bother
    me in review.
u type-hints
    I like full type hints on new functions, return types included, and {what=TypedDict over loose dicts|dataclasses
    over tuples|enums over string constants|Protocols over ABCs} wherever {n=it reads better|a reviewer would ask}.
u sql-style
    I write SQL keywords in {case=lower|upper} case with each {what=join|selected column|condition} on its own line;
    please do the same in raw SQL {where=and in migrations|and in scripts/|everywhere}.
u review-habits
    I review PRs in the {when=morning|early afternoon}, {n=one|two|three} at a time, and read the {first=tests|description
    and tests} first; a PR without test changes gets a question from me.
u diff-tool
    I read diffs with {tool=delta|difftastic|the GitHub split view} side by side; {what=reformatted blocks|reordered
    imports|renamed variables} mixed into a real change make that hard.
u notes-app
    I keep my own notes in {app=Obsidian|Logseq|a notes folder outside the repo|Apple Notes}; links to {what=ADRs and
    runbooks|Stripe docs|Postgres docs} are welcome, I copy them over.
u browsers
    I test the admin in {b=Firefox|Chrome} first; {b2@b=Safari|Firefox} is where {what=date inputs and the print CSS|sticky
    table headers|file uploads} usually break.
u keyboard-layout
    I use a {layout=German|Swiss German|US international} keyboard layout, so {what=backticks|curly braces|square
    brackets} are awkward to type; I paste rather than type anything with many of them.
u call-afternoons
    {day=Tuesday|Wednesday|Thursday} afternoons I have calls with {who=Marta|customers|the tax adviser}; that's a good
    time to start long things like {what=the e2e run|a big staging import|a full reindex}.
u spelled-out-names
    I like names spelled out: invoice not inv, {ex=amount not amt|quantity not qty|customer not cust|payment not pmt};
    abbreviations only for {ok=ids and urls|http and sql|well-known ones like vat}.
u docstrings
    Docstrings: one line for simple functions, {style=Google|NumPy|reST} style with Args only when {cond=a parameter needs
    explaining|there are more than three parameters}; no types repeated in them.
u branch-habits
    I keep one branch per issue and delete it locally once it's merged; {what=a git worktree for the long-running
    branch|a scratch branch for experiments|a stash or two} sits next to it, usually {n=#2-5} at a time.
u unfamiliar-areas
    I'm less at home in {area=the frontend build|TypeScript generics|Postgres internals|Celery internals|CSS for print};
    a short why next to a change there helps me{more=| more than a long explanation}.
u test-style
    I prefer {what=plain asserts|parametrized tests|small focused tests} over {alt=unittest-style classes|helper-heavy
    tests|giant setup functions}; test data built inline with factories reads best to me.
u time-off
    I'm off {when=the first two weeks of August|between Christmas and New Year|every other Friday|the week after
    Easter}; don't plan production changes for {then=then|those days}.
u local-time
    I'm in Europe/{city=Berlin|Vienna|Zurich|Amsterdam}, so when you quote times from {src=logs or Sentry|Grafana|the
    worker output}, put my local time next to them.
u repo-paths
    When you mention a file, give its path from the repo root (like {ex=app/services/credit_notes.py|admin/src/pages/Reports.tsx|
    scripts/oss_report.py}) so I can open it with {how=gf|a click|my fuzzy finder}.
u no-emoji
    No emoji in {where=code comments|PR descriptions|docs|log messages}, please; plain text reads better {why=in my
    editor|in the terminal|in Loki}, and {x=grep|search} finds it.
u comments-why
    Comments should say why, not what; I delete '# loop over {what=invoices|lines|payments|tenants}' comments in review.
    A link to {good=the issue|the Stripe doc|the tax rule} is a good comment.
u todo-list
    I track my own todo list in {tool=Things|Todoist|GitHub issues assigned to me|a TODO.md in my notes}; things worth
    doing later go there, so name them {how=at the end|in one line each} and I'll add them.
u color-vision
    I have {what=mild red-green colour blindness|trouble with low-contrast text}, so in {where=admin changes|Grafana
    panels|the PDF layout} I need status shown by {c=an icon or text too|more than colour}.
u copy-tone
    For customer-facing texts I like a {tone=friendly but plain|formal 'Sie'|short and neutral} tone, and {ex=no
    exclamation marks|no 'Oops!'|no blaming the customer} in error messages.
u regex-comments
    I find regexes hard to review; one longer than {n=#20-40} characters should come with {what=two examples it
    matches|a note on each group}.
u optimization
    I care more about {a=readable code|fewer queries} than {b=micro-optimizations|clever code}; show me numbers
    ({what=EXPLAIN ANALYZE|a timing|a profile}) before optimizing something.
u api-poking-tools
    I use {tool=httpie|xh|Bruno} for poking the API and {db=pgcli|TablePlus|DBeaver} for the database, so examples in
    that form are the easiest for me to reuse.
u python-style
    I prefer {a=pathlib over os.path|f-strings over format()|comprehensions over map and filter}; {ex=walrus
    operators|match statements|dataclass slots} are fine when they make code shorter, not to show off.
u frontend-style
    In the admin I prefer function components with small custom hooks, {what=one component per file|no default
    exports|props destructured in the signature}, and props types named <Component>Props.
u screenshots
    I share admin screenshots from {tool=CleanShot|the macOS screenshot tool|Flameshot}; they're at {x=2x|1.5x}, so pixel
    sizes in them are off by that factor.
u friday-review
    Every {day=Friday|Monday} {when=morning|afternoon} I go through {what=Sentry and the open PRs|the slow query log and
    Sentry|the Renovate PRs}; that's a good moment to bring up cleanup ideas.
u make-targets-wish
    I like make targets for anything I run more than {n=twice|three times}; if you catch yourself giving me the same
    {what=docker compose exec|psql|alembic} command again, suggest a target.
u currency-context
    I think in euros; when you talk about amounts in {c=CHF|GBP|USD|SEK|DKK|PLN}, give me the {what=EUR equivalent|rate
    you used} next to them.
u staging-hunks
    I stage hunks with {tool=lazygit|tig|the VS Code source control view|git add -p}, so separate changes for separate
    concerns make my life easier.
u docs-links
    When you use a {area=Postgres|Celery|SQLAlchemy|Postgres|Celery|Postgres} feature I may not know
    ({ex@area=SKIP LOCKED|chords|selectinload|advisory locks|canvas groups|window functions}), add a link to its docs.
u evening-reading
    I read long design notes on my {dev=iPad|phone|e-reader} in the evening; for bigger questions a markdown file under
    {dir=notes/|docs/drafts/} works better than a long chat reply.
g ask-before-remote
    Don't run anything against staging or production from my machine without asking first, even read-only
    {what=psql sessions|scripts}; I want to know who touched what.
g no-unrelated-reformatting
    Don't reformat code you aren't changing; {n=#50-300} lines of formatting around a {m=#3-10}-line fix are hard for me
    to review.
g no-drive-by-renames
    Don't rename things in passing; if a name in {where=a service|a test|the admin} bothers you, mention it and I'll
    decide.
g show-migration-sql
    For a migration on a big table ({table}), show me the SQL from alembic upgrade --sql before I merge it; I want to
    see the locks it takes.
g todo-with-issue
    Don't leave TODO comments without an issue number, like TODO(#{n=#100-900}); the bare TODOs from {year=#2021-2024}
    are still in the code.
g small-footprint
    Don't touch more than {n=#3-6} files for a fix without telling me first; the last 'small fix' touched {m=#15-40}.
g verify-before-claiming
    Don't tell me something works without running it; if you couldn't run {what=the e2e tests|the worker|the admin
    build}, say so plainly.
g nothing-outside-repo
    Never change things outside the repo (~/.config, ~/.ssh, the global git config) without asking; a changed
    {what=global gitconfig|ssh config|editor config} broke my setup once.
g no-deleting-to-pass
    Don't delete files to make something pass (a stale {what=golden PDF|cassette|JSON fixture}); ask me what it was for.
g signature-changes
    Ask before changing the signature of a public function in {where=app/services|app/repositories}; {who=the CLI
    scripts|the tasks} call them too and aren't all covered by tests.
g explain-new-patterns
    When you introduce a pattern the codebase doesn't use yet ({ex=a context manager for sessions|a generic
    repository|a new hook style}), say so and why, before the code.
g keep-docs-in-step
    When you change a {what=make target|compose service|runbook step}, update the docs that mention it in the same
    change; stale docs cost me an evening in {month}.
"""


@dataclass(frozen=True)
class Template:
    type: str  # user | feedback | project | reference
    scope: str  # "user" (key user/<slug>) or "project" (project/<project>/<slug>)
    slug: str  # with {slot} references
    body: str  # with slots


_TYPE_ORDER = ("user", "feedback", "project", "reference")
_TYPES = {
    "u": ("user", "user"),
    "g": ("feedback", "user"),
    "f": ("feedback", "project"),
    "p": ("project", "project"),
    "r": ("reference", "project"),
}
_SLOT = re.compile(r"\{(!?)([a-z]+[0-9]?)(?:@([a-z]+[0-9]?))?(?:\.([a-z]+))?(?:=([^{}]*))?\}")
_SLUG_SLOT = re.compile(r"\{([a-z]+[0-9]?)\}")
_OPEN, _CLOSE = "\x00", "\x01"  # stand-ins for the literal braces {{ and }}
_FILTERS = {
    "snake": lambda v: re.sub(r"[^a-z0-9]+", "_", v.lower()).strip("_"),
    "slug": lambda v: _slugify(v),
    "cap": lambda v: v[:1].upper() + v[1:],
    "upper": lambda v: v.upper(),
}


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _parse(spec: str) -> tuple[Template, ...]:
    out: list[Template] = []
    head: tuple[str, str] | None = None
    lines: list[str] = []

    def close() -> None:
        if head is None:
            return
        kind, slug = head
        typ, scope = _TYPES[kind]
        body = " ".join(lines)
        bound = {m.group(2) for m in _SLOT.finditer(body.replace("{{", _OPEN).replace("}}", _CLOSE))}
        if not bound:
            raise ValueError(f"template {slug!r} has no slot")
        if re.search(r"[{}]", _SLOT.sub("", body.replace("{{", "").replace("}}", ""))):
            raise ValueError(f"template {slug!r} has a stray or nested brace")
        missing = [s for s in _SLUG_SLOT.findall(slug) if s not in bound]
        if missing:
            raise ValueError(f"template {slug!r} names slots its body does not bind: {missing}")
        out.append(Template(typ, scope, slug, body))

    for line in spec.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line[0].isspace():
            part = line.strip()
            if lines and (lines[-1].endswith("|") or part.startswith("|")):
                lines[-1] += part  # a choice list wrapped at its bar
            else:
                lines.append(part)
            continue
        close()
        kind, slug = line.split(None, 1)
        head, lines = (kind, slug.strip()), []
    close()
    return tuple(out)


TEMPLATES: tuple[Template, ...] = _parse(_SPEC)


def instantiate(t: Template, rng: random.Random, project: str) -> tuple[str, str]:
    """(slug, body) of one filling of ``t``: every slot drawn from ``rng`` left to right."""
    values: dict[str, str] = {"proj": project}
    index: dict[str, int] = {}

    def fill(m: re.Match[str]) -> str:
        hidden, name, link, filt, inline = m.groups()
        if name not in values:
            if inline is not None and inline.startswith("#"):
                lo, hi = inline[1:].split("-")
                values[name] = str(rng.randint(int(lo), int(hi)))
            elif inline is not None:
                options = inline.split("|")
                i = index[link] if link else rng.randrange(len(options))
                values[name], index[name] = options[i], i
            else:
                base = name.rstrip("0123456789")
                taken = [values[k] for k in values if k.rstrip("0123456789") == base]
                options = [v for v in SLOTS[base] if v not in taken]
                i = rng.randrange(len(options))
                values[name], index[name] = options[i], i
        value = values[name]
        if hidden:
            return ""
        return _FILTERS[filt](value) if filt else value

    body = _SLOT.sub(fill, t.body.replace("{{", _OPEN).replace("}}", _CLOSE))
    body = body.replace(_OPEN, "{").replace(_CLOSE, "}")
    slug = _slugify(_SLUG_SLOT.sub(lambda m: values[m.group(1)], t.slug))[:80].strip("-")
    return slug, body


def words(text: str) -> frozenset[str]:
    """The lower-cased word set of ``text``."""
    return frozenset(re.findall(r"[a-z0-9_]+", text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def too_close(body: str, avoid: Sequence[frozenset[str]], threshold: float = 0.5) -> bool:
    """Whether ``body``'s word set has a Jaccard similarity of ``threshold`` or more with any of ``avoid``."""
    w = words(body)
    return any(jaccard(w, a) >= threshold for a in avoid)


def drop_near(made: Iterable[dict], bodies: Iterable[str], threshold: float = 0.5) -> list[dict]:
    """The facts of ``made`` whose body is not close (see ``too_close``) to any of ``bodies``."""
    avoid = [words(b) for b in bodies]
    return [f for f in made if not too_close(str(f["body"]), avoid, threshold)]


def facts(n: int, project: str, trusts: list[str], seed: int = 17, avoid: Sequence[str] = ()) -> list[dict]:
    """``n`` near-miss facts of ``project``: ``{key, type, body, trust}``.

    Types keep the templates' proportions: each fact goes to a type that is behind its share (drawn by how far
    behind), then to the next template of that type in an order shuffled per pass; later passes fill the templates
    again with other values. Bodies are distinct, and one close to any of ``avoid`` (the suite's own bodies) is
    dropped. Trust is drawn from ``trusts``.
    """
    rng = random.Random(seed)
    avoid_words = [words(b) for b in avoid]
    by_type = {typ: [i for i, t in enumerate(TEMPLATES) if t.type == typ] for typ in _TYPE_ORDER}
    share = {typ: len(ids) / len(TEMPLATES) for typ, ids in by_type.items()}
    queue: dict[str, list[int]] = {typ: [] for typ in _TYPE_ORDER}
    alive = [typ for typ in _TYPE_ORDER if by_type[typ]]
    count = dict.fromkeys(_TYPE_ORDER, 0)
    out: list[dict] = []
    bodies: set[str] = set()  # membership only, never iterated
    keys: set[str] = set()
    while len(out) < n:
        if not alive:
            raise ValueError(f"the templates give only {len(out)} distinct facts here, fewer than the {n} asked for")
        total = sum(share[t] for t in alive)
        need = [max(0.0, share[t] / total * (len(out) + 1) - count[t]) for t in alive]
        typ = rng.choices(alive, weights=need)[0] if sum(need) > 0 else alive[0]
        for _ in range(3 * len(by_type[typ])):
            if not queue[typ]:
                queue[typ] = by_type[typ][:]
                rng.shuffle(queue[typ])
            t = TEMPLATES[queue[typ].pop()]
            slug, body = instantiate(t, rng, project)
            if body in bodies or too_close(body, avoid_words):
                continue
            base = f"user/{slug}" if t.scope == "user" else f"project/{project}/{slug}"
            key, k = base, 1
            while key in keys:
                k += 1
                key = f"{base}-{k}"
            bodies.add(body)
            keys.add(key)
            count[typ] += 1
            out.append({"key": key, "type": typ, "body": body, "trust": rng.choice(trusts)})
            break
        else:
            alive.remove(typ)  # its templates have nothing new left
    return out
