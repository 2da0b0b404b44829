"""The documentation: a short README with the two commands first, a docs/ site whose generated parts match the
code, and code comments that cite pages that exist."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bead import config

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def test_the_readme_is_short_and_opens_with_the_two_commands():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    first = re.search(r"```sh\n(.*?)```", text, re.S)
    assert first is not None
    commands = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    assert commands == ["sh setup_scripts/install.sh", "sh setup_scripts/test.sh"]


def test_the_configuration_reference_is_generated_from_the_schema():
    """docs/configuration.md holds exactly what bead.config.reference() gives: a setting added, renamed or
    redocumented in the schema fails here until the page is regenerated (the page says how)."""
    page = (DOCS / "configuration.md").read_text()
    start, end = page.index(config.REFERENCE_START), page.index(config.REFERENCE_END) + len(config.REFERENCE_END)
    assert page[start:end] + "\n" == config.reference()


def test_every_setting_is_in_the_reference():
    ref = config.reference()
    for section in ("proxy", "store", "recall", "rerank", "dream", "mcp", "import"):
        assert f"## `{section}`" in ref
    for name in ("recall_deadline_ms", "pointer_budget_tokens", "max_line_bytes", "verified_claim", "decay_days"):
        assert f"| `{name}` |" in ref


def test_the_configuration_example_is_a_valid_config():
    page = (DOCS / "configuration.md").read_text()
    example = re.search(r"```yaml\n(.*?)```", page, re.S)
    assert example is not None
    parsed = config.parse(example.group(1))
    assert parsed.dream.provider == "anthropic" and parsed.recall.pointers == 5
    assert yaml.safe_load(example.group(1))["owner"] == parsed.owner


def test_every_page_is_in_the_site_navigation():
    nav = (REPO / "mkdocs.yml").read_text()
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert [p for p in pages if p not in nav] == []


def test_code_comments_cite_pages_that_exist():
    """The code, the tests, the benchmarks and the eval files cite docs pages for their reasons (never README
    sections, which moved)."""
    cited, stale = set(), []
    files = [
        p for d in ("bead", "tests", "benchmarks", "evals") for p in sorted((REPO / d).rglob("*")) if p.suffix in (".py", ".yaml")
    ]
    for path in files:
        if path.name in ("nearmiss.py", "test_docs.py", "poisoning.yaml") or "fixtures" in path.parts:
            continue  # eval data (made-up facts of a made-up project, which cite its own docs), and this test
        text = path.read_text(errors="replace")
        cited |= set(re.findall(r"docs/([a-z-]+\.md)", text))
        stale += [
            f"{path.relative_to(REPO)}: {m}" for m in re.findall(r"README,? \"[A-Z][^\"]*\"|README's rule|README table", text)
        ]
    assert stale == []
    assert cited, "the code cites the docs somewhere"
    assert sorted(c for c in cited if not (DOCS / c).is_file()) == []
