#!/usr/bin/env bash
# Builds cordon in release and prints where cargo put it: the benches never assume
# ./target (CARGO_TARGET_DIR, a CI cache, may put it elsewhere).
#   bin=$(bash benches/cordon-bin.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --bin cordon --message-format=json \
    | python3 -c '
import json, sys
found = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cordon"]
if not found:
    sys.exit("cargo reported no cordon executable")
print(found[-1])
'
