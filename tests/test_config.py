"""The home and config.yaml."""

from __future__ import annotations

import getpass
import stat

import pytest

from bead import config
from bead.core.memory import Memory
from bead.errors import BeadError
from bead.paths import Home, resolve_home


class TestHome:
    """BEAD_HOME chooses the home; it is created private."""

    def test_bead_home_overrides_default(self, tmp_path):
        assert resolve_home({"BEAD_HOME": str(tmp_path / "x")}).root == tmp_path / "x"

    def test_default_is_dot_bead_in_home_directory(self, monkeypatch, tmp_path):
        monkeypatch.setenv("HOME", str(tmp_path))
        assert resolve_home({}).root == tmp_path / ".bead"

    def test_home_created_0700_with_layout(self, bead_home):
        Memory.open()
        assert stat.S_IMODE(bead_home.stat().st_mode) == 0o700
        for sub in ("store/raw", "store/facts", "store/episodes", "sessions"):
            assert (bead_home / sub).is_dir(), sub

    def test_config_created_0600_and_never_rewritten(self, bead_home):
        Memory.open()
        cfg = bead_home / "config.yaml"
        assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
        cfg.write_text("owner: someone-else\n")
        before = cfg.read_bytes()
        mem = Memory.open()
        assert cfg.read_bytes() == before
        assert mem.config.owner == "someone-else"


class TestConfigErrors:
    """A typo or bad value names the line and the fix; no silent default."""

    def test_unknown_key_names_line_and_suggestion(self):
        with pytest.raises(BeadError) as e:
            config.parse("proxy:\n  listen: 127.0.0.1:7077\n  upstrem: https://x\n")
        assert "line 3" in e.value.message and "proxy.upstrem" in e.value.message
        assert "upstream" in e.value.hint

    def test_a_blank_model_is_no_model(self):
        """`model: "  "` would count as a model (a dry run estimating calls of "ollama/  "): refused, on its line."""
        with pytest.raises(BeadError) as e:
            config.parse('dream:\n  provider: ollama\n  model: "  "\n')
        assert "line 3" in e.value.message and "`dream.model` is blank" in e.value.message
        assert config.parse("dream:\n  model: null\n").dream.model is None

    def test_wrong_type_names_line(self):
        with pytest.raises(BeadError) as e:
            config.parse("dream:\n  decay_days: soon\n")
        assert "line 2" in e.value.message and "whole number" in e.value.message

    def test_bad_choice_lists_choices(self):
        with pytest.raises(BeadError) as e:
            config.parse("dream:\n  provider: olama\n")
        assert "ollama" in e.value.hint

    def test_invalid_yaml_names_line(self):
        with pytest.raises(BeadError) as e:
            config.parse("owner: ben\nproxy: [unclosed\n")
        assert "line" in e.value.message and "not valid YAML" in e.value.message

    @pytest.mark.parametrize(
        "text", ["owner: " + "[" * 600 + "]" * 600 + "\n", "owner: x\nproxy: " + "{a: " * 600 + "1" + "}" * 600]
    )
    def test_nesting_hundreds_deep_is_a_clear_error_not_a_traceback(self, bead, bead_home, text):
        """A kilobyte of brackets made PyYAML's parser recurse past Python's stack: every command, setup included,
        printed a traceback of thousands of lines."""
        with pytest.raises(BeadError) as e:
            config.parse(text)
        assert "too deep" in e.value.message and "three levels" in (e.value.hint or "")
        bead_home.mkdir(parents=True, exist_ok=True)
        (bead_home / "config.yaml").write_text(text)
        r = bead("status")
        assert r.code == 1 and "too deep" in r.err and "Traceback" not in r.err + r.out, r.err[-500:]

    def test_boolean_is_not_a_number(self):
        with pytest.raises(BeadError):
            config.parse("dream:\n  decay_days: yes\n")

    def test_a_flow_mapping_with_unquoted_keys_is_read(self):
        """What PyYAML's parser always accepted (libyaml refuses `{ana:[web]}`) still loads."""
        c = config.parse('owner: ana\nmcp:\n  projects: {ana:[web], bo:["*"]}\n')
        assert c.mcp.projects == {"ana": ["web"], "bo": ["*"]}

    def test_a_tab_in_a_value_is_an_error_that_names_the_character(self):
        with pytest.raises(BeadError) as e:
            config.parse("owner:\tana\n")
        assert "line 1" in e.value.message and "\\t" in e.value.message

    @pytest.mark.parametrize(
        "text,line",
        [
            ("owner: !foo x\n", 1),
            ("owner: x\nproxy:\n  recall_deadline_ms: !!int abc\n", 3),
            ("owner: x\nproxy:\n  listen: !!bool maybe\n", 3),
        ],
    )
    def test_a_value_yaml_cannot_build_names_its_line(self, text, line):
        with pytest.raises(BeadError) as e:
            config.parse(text)
        assert f"line {line}" in e.value.message and "cannot build" in e.value.message and e.value.hint

    def test_a_value_nested_by_aliases_is_shown_short(self):
        """Six lines of anchors make a list of 531,441 strings; the error shows a few of them."""
        levels = ['&a ["xxxxxxxx", "x", "x", "x", "x", "x", "x", "x", "x"]']
        levels += [f"&{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip("abcde", "bcdef", strict=True)]
        with pytest.raises(BeadError) as e:
            config.parse(f"owner: [{', '.join(levels)}]\n")
        assert "line 1" in e.value.message and "must be a string" in e.value.message
        assert len(e.value.message) < 1000

    @pytest.mark.parametrize(
        "key", ["sk-ant-api03-" + "Ab9" * 20 + "AA", "ghp_" + "Ab12Cd34Ef56Gh78Ij90Kl12", "my key", "$ANTHROPIC_API_KEY"]
    )
    def test_a_key_where_a_variables_name_goes_is_refused_and_never_shown(self, bead, bead_home, key):
        """`api_key_env` names the variable: a key written there reached the dream's report and the curator's
        `summary` tool in clear ("no API key: set sk-ant-..."). Refused on its line, and the message holds no part
        of it."""
        bead_home.mkdir(parents=True)
        (bead_home / "config.yaml").write_text(f"dream:\n  provider: anthropic\n  api_key_env: '{key}'\n")
        r = bead("dream", "run")
        assert r.code == 1 and "line 3" in r.err and "dream.api_key_env" in r.err, r.err
        assert key not in r.out + r.err and key[:12] not in r.out + r.err
        assert config.parse("rerank:\n  api_key_env: ANTHROPIC_API_KEY\n").rerank.api_key_env == "ANTHROPIC_API_KEY"

    @pytest.mark.parametrize("listen", ["127.0.0.1:99999", "[::1%lo]:7077", "0.0.0.0:7077", "127.0.0.1:017077"])
    def test_a_listen_address_the_proxy_would_refuse_is_refused_by_the_file(self, bead, bead_home, listen):
        """The proxy refused these when it started while the file was read without a word, so `bead status` said
        nothing was wrong; now the file's line says so, for every command."""
        bead_home.mkdir(parents=True)
        (bead_home / "config.yaml").write_text(f'proxy:\n  listen: "{listen}"\n')
        r = bead("status")
        assert r.code == 1 and "line 2" in r.err and "proxy.listen" in r.err, r.err
        assert config.parse('proxy:\n  listen: "localhost:7077"\n').proxy.listen == "localhost:7077"

    def test_cli_reports_config_error_and_exit_1(self, bead, bead_home):
        bead_home.mkdir(parents=True)
        (bead_home / "config.yaml").write_text("ownr: ben\n")
        r = bead("status")
        assert r.code == 1
        assert "line 1" in r.err and "owner" in r.err


class TestOwner:
    """Every record carries the owner."""

    def test_owner_defaults_to_login_name(self):
        assert config.parse("").owner == getpass.getuser()

    def test_owner_written_on_facts_and_audit(self, bead_home):
        bead_home.mkdir(parents=True)
        (bead_home / "config.yaml").write_text("owner: ben\n")
        mem = Memory.open()
        res = mem.write("user/editor", "vim", "user")
        assert "owner: ben" in res.fact.path.read_text()
        assert all(e["owner"] == "ben" for e in mem.audit.entries())
        mem.close()


def test_home_dataclass_paths(tmp_path):
    h = Home(tmp_path)
    assert h.index_db == tmp_path / "index.db" and h.raw_lock == tmp_path / "store" / "raw" / ".lock"


KEY_IN_PATH = "sk-ant-api03-" + "Zq7" * 30


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://gw.example/v1;key=PARAMSECRET", "http://gw.example/v1;***"),
        ("http://gw.example/a;x=PARAMSECRET/v1", "http://gw.example/a;***/v1"),
        (f"http://gw.example/{KEY_IN_PATH}/v1", "http://gw.example/***/v1"),
    ],
)
def test_an_upstreams_key_in_its_path_is_never_shown(url, shown):
    """A gateway's key in a path segment's parameters (`/v1;key=...`) or as a path segment of its own was shown
    whole in the proxy's log line and health, which `bead status` prints (a review): `***` in its place."""
    from bead.proxy.access import shown_url

    assert shown_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "https://api.anthropic.com",
        "http://127.0.0.1:11434/v1",
        "https://gateway.ai.cloudflare.com/v1/0123456789abcdef0123456789abcdef/my-gateway/anthropic",
    ],
)
def test_an_upstream_path_with_no_credential_is_shown_as_it_is(url):
    from bead.proxy.access import shown_url

    assert shown_url(url) == url
