#!/usr/bin/env bash
# Wall time of the compose suite on the reference stack at concurrency 1 vs the suite's
# own (8), N runs each; prints the medians and their ratio. Needs what the demo needs.
#   benches/compose_concurrency.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
project=cordon-bench-$$
export CORDON_SUBNET=10.239
# Every credential the reference stack and scenarios/reference.yaml read (src/demo.rs TOKEN_VARS).
for t in NATIVE_TOKEN LEGACY_TOKEN MODERN_TOKEN GITEA_TOKEN WIKI_TOKEN NATIVE_TOKEN_OLD NATIVE_N8N_TOKEN; do
  export "$t=bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
done
export CORDON_FIXTURE_IMAGE="${FIXTURE_TAG:-cordon-fixture:dev}"
compose() { docker-compose -p "$project" -f docker/reference/compose.yaml "$@"; }
trap 'compose down -v -t 1 >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
tmp=$(mktemp -d)
bash docker/build-images.sh >/dev/null 2>&1
# The scenario pins gitea's adapter image to the one just built (as the demo does).
CORDON_FIXTURE_DIGEST="$(docker image inspect --format '{{.Id}}' "$CORDON_FIXTURE_IMAGE")"
export CORDON_FIXTURE_DIGEST
cordon="$(bash benches/cordon-bin.sh)"
compose up -d --no-build >/dev/null 2>&1
sed 's/^concurrency: .*/concurrency: 1/' suites/compose.yaml > "$tmp/serial.yaml"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_runs() { # suite
  for _ in $(seq 1 "$runs"); do
    start=$(date +%s%N)
    "$cordon" compose --project "$project" --scenario scenarios/reference.yaml --suite "$1" --results "$tmp/results" >/dev/null 2>&1 || { echo "suite failed" >&2; exit 1; }
    python3 -c "print(($(date +%s%N) - $start) / 1e9)"
  done | median
}
"$cordon" compose --project "$project" --scenario scenarios/reference.yaml --results "$tmp/results" >/dev/null 2>&1 || true # warm-up
parallel=$(time_runs suites/compose.yaml)
serial=$(time_runs "$tmp/serial.yaml")
checks=$(python3 -c "import json;print(len(json.load(open('$tmp/results/report.json'))['report']['results']))")
echo "compose suite, $checks checks, median of $runs runs:"
echo "  concurrency 8: ${parallel}s"
echo "  concurrency 1: ${serial}s"
echo "  ratio serial/parallel: $(python3 -c "print(round($serial / $parallel, 2))")"
