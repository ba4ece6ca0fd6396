#!/usr/bin/env bash
# cordon at 12 to 5000 client×provider pairs against one throwaway container per probe
# (sequential and 8 in parallel): builds the fixture images and the release binary, then
# runs benches/scale.py (generate, deploy, measure interleaved, tear down, table).
#   benches/scale.sh [--runs N] [--sizes 12,100,200,1000,5000] [--families route,reach,session]
#                    [--only-cordon] [--profile] [--also NAME=BINARY] ...
# Needs what the demo needs (root, dockerd, docker-compose, busybox-static, python3).
# FIXTURE_TAG / BUSYBOX_TAG name the images (defaults cordon-fixture:dev, cordon-busybox:dev).
set -euo pipefail
cd "$(dirname "$0")/.."
export FIXTURE_TAG="${FIXTURE_TAG:-cordon-fixture:dev}" BUSYBOX_TAG="${BUSYBOX_TAG:-cordon-busybox:dev}"
echo "==> building images ($FIXTURE_TAG, $BUSYBOX_TAG) and the release binary" >&2
log=$(mktemp)
bash docker/build-images.sh >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
cordon="$(bash benches/cordon-bin.sh)"
exec python3 benches/scale.py --cordon "$cordon" --fixture-image "$FIXTURE_TAG" --busybox-image "$BUSYBOX_TAG" "$@"
