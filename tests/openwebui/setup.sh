#!/usr/bin/env bash
# Installs Open WebUI 0.12.4 from PyPI into a venv that the Open WebUI reference
# stack bind-mounts read-only into an image made from scratch (no registry).
# Idempotent: a venv that already imports open_webui 0.12.4 is left alone.
#
#   ${CORDON_OWUI_DIR:-<repo>/.owui}/venv      -> open-webui==0.12.4 (~7 GB)
#   ${CORDON_OWUI_DIR:-<repo>/.owui}/paths.env -> what docker/openwebui/compose.yaml mounts
set -euo pipefail

version="0.12.4"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
owui="${CORDON_OWUI_DIR:-$repo/.owui}"
python="${PYTHON:-python3}"
venv="$owui/venv"

mkdir -p "$owui"
owui="$(cd "$owui" && pwd)"
venv="$owui/venv"

installed() {
    "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("open-webui"))' 2>/dev/null || true
}

t0=$SECONDS
if [ "$(installed)" = "$version" ]; then
    echo "setup.sh: $venv already has open-webui $version, skipping"
else
    if [ ! -x "$venv/bin/python" ]; then
        echo "setup.sh: creating venv $venv with $("$python" --version 2>&1)"
        "$python" -m venv "$venv"
    fi
    echo "setup.sh: installing open-webui==$version into $venv (7 GB; through uv, about 20 s on a fast mirror)"
    bash "$here/../pip-install.sh" "$venv" "open-webui==$version"
    if [ "$(installed)" != "$version" ]; then
        echo "setup.sh: $venv does not import open-webui $version after the install" >&2
        exit 1
    fi
fi

# The interpreter the venv was built on: the container needs it at the same path.
home="$(sed -n 's/^home *= *//p' "$venv/pyvenv.cfg")"
base="$(cd "$home/.." && pwd)"
cat > "$owui/paths.env.tmp" <<PATHS
OWUI_VENV=$venv
OWUI_PYTHON_BASE=$base
PATHS
mv "$owui/paths.env.tmp" "$owui/paths.env"
echo "setup.sh: open-webui $version ready in $venv ($(du -sh "$venv" 2>/dev/null | cut -f1), $((SECONDS - t0)) s); base python $base"
