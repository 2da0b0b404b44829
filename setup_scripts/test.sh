#!/bin/sh
# Run bead's whole test suite in a virtual environment it creates (.venv-test).
# Needs only python3 (3.11+). Extra arguments go to pytest.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
venv="$repo/.venv-test"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# The install is editable, so code changes need no reinstall; pip runs again
# only when pyproject.toml (the dependencies) changed since the last install.
stamp="$venv/.bead-installed"
want=$(cksum < "$repo/pyproject.toml")
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$repo[test]"
  printf '%s\n' "$want" > "$stamp"
fi
# MCP Inspector's CLI for the one test that drives bead's MCP server with it: into .venv-test,
# once, where npm and Node.js 20 or later are installed (its CLI is checked on Node 20 here; it
# asks for 22; npm only warns). Without them, or offline, that test skips and says why.
inspector_version=2.12.0
inspector="$venv/npm/node_modules/.bin/mcp-inspector"
if [ -z "${BEAD_MCP_INSPECTOR:-}" ] && command -v npm >/dev/null 2>&1 \
   && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null; then
  if [ ! -x "$inspector" ] || [ "$(cat "$venv/npm/.version" 2>/dev/null)" != "$inspector_version" ]; then
    if npm install --prefix "$venv/npm" --silent --no-audit --no-fund \
         "@modelcontextprotocol/inspector@$inspector_version" >/dev/null 2>&1; then
      printf '%s\n' "$inspector_version" > "$venv/npm/.version"
    else
      echo "test.sh: could not install MCP Inspector with npm; its test will skip" >&2
    fi
  fi
  [ -x "$inspector" ] && BEAD_MCP_INSPECTOR="$inspector" && export BEAD_MCP_INSPECTOR
fi
cd "$repo"
# The tests' homes live in memory where the machine has a tmpfs: bead fsyncs every
# write, and the tests check what is written and in what order, not the disk's
# durability (kill -9 tests kill processes, not the machine). Half the suite's time
# was fsync. BEAD_TEST_TMP overrides; each run has its own folder, removed after.
tmp_root=${BEAD_TEST_TMP:-}
# Only a roomy one (Docker's default /dev/shm is 64 MB; a whole run writes about 90 MB there).
if [ -z "$tmp_root" ] && [ -d /dev/shm ] && [ -w /dev/shm ] \
   && [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $4}')" -ge 2097152 ] 2>/dev/null; then
  tmp_root=/dev/shm
fi
basetemp=""
if [ -n "$tmp_root" ]; then
  basetemp=$(mktemp -d "$tmp_root/bead-tests.XXXXXX")
  trap 'rm -rf "$basetemp"' EXIT INT TERM
  # The eval harness makes its homes with tempfile (under TMPDIR): those go there too.
  mkdir "$basetemp/tmp"
  TMPDIR="$basetemp/tmp"
  export TMPDIR
fi
# bead's bytecode, compiled once here (into the checkout's ignored __pycache__ folders): with
# PYTHONDONTWRITEBYTECODE set, as on a fresh CI machine, every worker and each of the ~150 bead
# processes the tests start would otherwise compile bead's modules again (~0.12 s each).
"$venv/bin/python" -m compileall -q bead
# pytest rewrites each test module's asserts on import, and each worker would do it again: about 6 s of CPU per
# worker for the whole suite. Two processes rewrite half the modules each, once, into the checkout's ignored
# __pycache__ folders (pytest reads them there even with PYTHONDONTWRITEBYTECODE set), which the workers then load.
# A module that does not import is reported by the run itself, so errors here are left to it.
i=0; odd=""; even=""
for f in tests/test_*.py; do
  if [ $((i % 2)) = 0 ]; then even="$even $f"; else odd="$odd $f"; fi
  i=$((i + 1))
done
for half in "$even" "$odd"; do
  # shellcheck disable=SC2086
  env -u PYTHONDONTWRITEBYTECODE "$venv/bin/python" -m pytest --collect-only -q -p no:cacheprovider $half >/dev/null 2>&1 &
done
wait
# Three workers on two cores: many tests wait on a subprocess, a socket or an fsync,
# and work stealing keeps the slow ones from ending the run alone.
if [ -n "$basetemp" ]; then
  "$venv/bin/python" -m pytest -n 3 --dist worksteal --basetemp "$basetemp/t" "$@"
else
  "$venv/bin/python" -m pytest -n 3 --dist worksteal "$@"
fi
