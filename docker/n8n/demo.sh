#!/usr/bin/env bash
# The n8n stack end to end, in one command:
#   1. installs Node 24, Flowise 3.1.4 and n8n 1.100.1 from npm on the first run
#      (tests/clients/setup.sh, ~4.5 GB, 6-9 min, progress shown; later runs skip it),
#   2. builds the fixture images and the empty-root image for Node apps (no registry),
#   3. deploys docker/n8n/ as compose project cordon-n8n-demo on 198.19.0.0/16 (the owner
#      through n8n's setup API, credentials, the managed workflows and n8n's own MCP
#      Server Trigger through its API, a least-scope API key for cordon),
#   4. runs docker/n8n/suite.yaml (every n8n:: check, and the contract family on every
#      provider, n8n's own endpoint included),
#   5. tears the stack down, on every path (--keep leaves it up).
# Needs root and a running Docker engine. Arguments after the options go to cordon.
#
#   docker/n8n/demo.sh [--keep] [cordon test arguments...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
exec bash "$repo/docker/client-demo.sh" n8n "$@"
