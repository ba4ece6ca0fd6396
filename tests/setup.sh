#!/usr/bin/env bash
# Everything the tests need outside cargo, side by side: the MCP SDK venvs for real
# peers (tests/peers/setup.sh) and Open WebUI 0.12.4 for the Open WebUI stack
# (tests/openwebui/setup.sh, ~7 GB, 2-4 min the first time). Both are idempotent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/peers/setup.sh" &
peers=$!
bash "$here/openwebui/setup.sh" &
owui=$!
rc=0
wait "$peers" || rc=1
wait "$owui" || rc=1
[ "$rc" -eq 0 ] || { echo "tests/setup.sh: a setup step failed (see above)" >&2; exit 1; }
echo "tests/setup.sh: peers and Open WebUI ready"
