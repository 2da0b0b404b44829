#!/bin/sh
# Run bead's whole test suite in a virtual environment it creates (.venv-test).
# Needs only python3 (3.11+). Extra arguments go to pytest.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
venv="$repo/.venv-test"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$repo[test]"
cd "$repo"
exec "$venv/bin/python" -m pytest -n 2 "$@"
