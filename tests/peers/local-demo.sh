#!/usr/bin/env bash
# Starts four real MCP peers on 127.0.0.1:18101-18104, runs the host-mode contract suite
# against them (extra arguments go to `cordon run`: a filter, --list, --skip …), stops
# the peers, and exits with cordon's exit code.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
peers_dir=${CORDON_PEERS_DIR:-$repo/.peers}
bash tests/peers/setup.sh
mkdir -p "$peers_dir/tokens" "$peers_dir/logs"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

start() { # name sdk kind port
  local name=$1 sdk=$2 kind=$3 port=$4 token_file="$peers_dir/tokens/$1.token"
  [ -s "$token_file" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$token_file"
  PEER_TOKEN=$(cat "$token_file") "$peers_dir/$sdk/bin/python" tests/peers/peer.py --kind "$kind" --port "$port" \
    > "$peers_dir/logs/$name.out" 2> "$peers_dir/logs/$name.err" &
  pids+=($!)
}
start sdk1-stateful mcp1 stateful-sse 18101
start sdk1-json mcp1 stateful-json 18102
start sdk1-legacy mcp1 legacy-sse 18103
start sdk2-modern mcp2 stateful-sse 18104
for name in sdk1-stateful sdk1-json sdk1-legacy sdk2-modern; do
  for _ in $(seq 1 100); do grep -q LISTENING "$peers_dir/logs/$name.out" 2>/dev/null && break; sleep 0.2; done
  grep -q LISTENING "$peers_dir/logs/$name.out" || { echo "peer $name did not start; see $peers_dir/logs/$name.err" >&2; exit 3; }
done
echo "peers listening on 127.0.0.1:18101-18104"
set +e
cargo run --quiet -- run --suite suites/local.yaml --scenario scenarios/local.yaml "$@"
code=$?
exit $code
