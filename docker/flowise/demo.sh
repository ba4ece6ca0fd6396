#!/usr/bin/env bash
# The Flowise stack end to end, in one command:
#   1. installs Node 24, Flowise 3.1.4 and n8n 1.100.1 from npm on the first run
#      (tests/clients/setup.sh, ~4.5 GB, 6-9 min, progress shown; later runs skip it),
#   2. builds the fixture image and the empty-root image for Node apps (no registry),
#   3. deploys docker/flowise/ as compose project cordon-flowise-demo on 198.18.0.0/16
#      (the admin, the model credential, one custom MCP server entry and one chatflow per
#      admitted provider, through Flowise's API, as the platform's reconciler does),
#   4. runs docker/flowise/suite.yaml (every flowise:: check),
#   5. tears the stack down, on every path (--keep leaves it up).
# Needs root and a running Docker engine. Arguments after the options go to cordon
# (a filter, --skip, --list ...).
#
#   docker/flowise/demo.sh [--keep] [cordon test arguments...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
exec bash "$repo/docker/client-demo.sh" flowise "$@"
