#!/bin/sh
# Install bead into its own virtual environment, put `bead` on PATH, and start
# its services: as systemd user units or launchd agents (`bead setup`) where a
# service manager runs, else in the foreground (`bead up`; Ctrl-C stops them).
# Needs only python3 (3.11+). BEAD_VENV chooses another environment.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
venv="${BEAD_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/bead/venv}"
bindir="$HOME/.local/bin"

python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "bead needs Python 3.11 or newer")'
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$repo"
mkdir -p "$bindir"
ln -sf "$venv/bin/bead" "$bindir/bead"
echo "installed: $bindir/bead -> $venv/bin/bead" >&2
case ":$PATH:" in *":$bindir:"*) ;; *) echo "add $bindir to PATH to run \`bead\` from anywhere" >&2 ;; esac

if [ "$(uname)" = Darwin ] || systemctl --user show-environment >/dev/null 2>&1; then
  "$venv/bin/bead" setup
  exec "$venv/bin/bead" status
fi
# No service manager (a container, WSL without systemd): the same config, shell.sh and rc block as on any
# machine, then the services in the foreground. `bead up` says how to point claude and Codex at the proxy.
"$venv/bin/bead" setup --no-load --no-vault
echo "no service manager for this user here: running the services in the foreground (bead up; Ctrl-C stops them)" >&2
case ":$PATH:" in *":$bindir:"*) ;; *) echo "add $bindir to PATH to run \`bead\` from anywhere" >&2 ;; esac
exec "$venv/bin/bead" up
