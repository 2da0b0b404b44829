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
cd "$repo"
# Three workers on two cores: many tests wait on a subprocess, a socket or an fsync,
# and work stealing keeps the slow ones from ending the run alone.
exec "$venv/bin/python" -m pytest -n 3 --dist worksteal "$@"
