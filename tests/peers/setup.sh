#!/usr/bin/env bash
# Creates the Python venvs holding the real MCP SDKs that cordon's integration
# tests run against. Idempotent: a venv that already imports the right mcp
# version is left alone.
#
#   ${CORDON_PEERS_DIR:-<repo>/.peers}/mcp1  -> mcp==1.30.0
#   ${CORDON_PEERS_DIR:-<repo>/.peers}/mcp2  -> mcp==2.3.0
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
peers="${CORDON_PEERS_DIR:-$repo/.peers}"
python="${PYTHON:-python3}"

mkdir -p "$peers"

ensure() {
    local name="$1" version="$2"
    local venv="$peers/$name"
    local have
    have="$("$venv/bin/python" -c 'import importlib.metadata as m, mcp; print(m.version("mcp"))' 2>/dev/null || true)"
    if [ "$have" = "$version" ]; then
        echo "setup.sh: $venv already has mcp $version, skipping"
        return
    fi
    if [ ! -x "$venv/bin/python" ]; then
        echo "setup.sh: creating venv $venv"
        "$python" -m venv "$venv"
    fi
    echo "setup.sh: installing mcp==$version into $venv"
    local t0=$SECONDS
    bash "$here/../pip-install.sh" "$venv" "mcp==$version"
    have="$("$venv/bin/python" -c 'import importlib.metadata as m, mcp; print(m.version("mcp"))')"
    if [ "$have" != "$version" ]; then
        echo "setup.sh: $venv has mcp $have, expected $version" >&2
        exit 1
    fi
    echo "setup.sh: $venv ready with mcp $version ($((SECONDS - t0)) s)"
}

# The two installs are independent; run them side by side.
ensure mcp1 1.30.0 &
p1=$!
ensure mcp2 2.3.0 &
p2=$!
rc=0
wait "$p1" || rc=1
wait "$p2" || rc=1
if [ "$rc" -ne 0 ]; then
    echo "setup.sh: failed" >&2
    exit 1
fi
echo "setup.sh: peers ready in $peers"
