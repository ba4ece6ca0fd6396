#!/usr/bin/env bash
# The Open WebUI stack end to end, in one command:
#   1. installs Open WebUI 0.12.4 from PyPI on the first run (tests/openwebui/setup.sh,
#      ~7 GB, progress shown; later runs skip it),
#   2. builds the fixture image and the Open WebUI rootfs image (no registry),
#   3. deploys docker/openwebui/ as compose project cordon-owui-demo on 10.231.0.0/16
#      (groups first, then the connections' env with their ids, as the platform does),
#   4. runs docker/openwebui/suite.yaml (every openwebui:: check, the restart included),
#   5. tears the stack down, on every path (--keep leaves it up).
# Needs root and a running Docker engine. Arguments after the options go to cordon
# (a filter, --skip, --list ...).
#
#   docker/openwebui/demo.sh [--keep] [cordon test arguments...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
keep=false
if [ "${1:-}" = "--keep" ]; then keep=true; shift; fi
project=cordon-owui-demo
step() { printf '==> %s\n' "$*" >&2; }

step "installing Open WebUI 0.12.4 if needed (tests/openwebui/setup.sh)"
bash tests/openwebui/setup.sh
step "building the images (docker/build-images.sh, docker/openwebui/build-image.sh)"
export FIXTURE_TAG="${FIXTURE_TAG:-cordon-fixture:dev}"
bash docker/build-images.sh >/dev/null
export CORDON_FIXTURE_IMAGE="$FIXTURE_TAG"
export CORDON_OWUI_IMAGE="cordon-openwebui:${FIXTURE_TAG##*:}"
OWUI_IMAGE="$CORDON_OWUI_IMAGE" bash docker/openwebui/build-image.sh
step "building cordon"
# Where cargo says it put the binary: CARGO_TARGET_DIR (or a build.target-dir) moves it.
cordon="$(cargo build --quiet --bin cordon --message-format=json-render-diagnostics \
    | sed -n 's/.*"executable":"\([^"]*\/cordon\)".*/\1/p' | tail -n 1)"
[ -x "$cordon" ] || { echo "demo.sh: error: cargo reported no cordon executable" >&2; exit 1; }
export CORDON_SUBNET=10.231
secret() { head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32; }
for var in NATIVE_TOKEN FILES_TOKEN WIKI_TOKEN MODEL_KEY OIDC_CLIENT_SECRET IDP_CONTROL_TOKEN OWUI_SECRET_KEY OWUI_ADMIN_PASSWORD; do
    export "$var=$(secret)"
done

teardown() {
    if [ "$keep" = true ]; then
        step "keeping the stack; tear it down with: docker/openwebui/deploy.sh down $project (it uses the Compose plugin, else docker-compose)"
    else
        step "tearing the stack down"
        bash docker/openwebui/deploy.sh down "$project" || true
    fi
}
trap teardown EXIT
step "deploying the Open WebUI reference stack as $project"
bash docker/openwebui/deploy.sh up "$project"
step "running docker/openwebui/suite.yaml against docker/openwebui/scenario.yaml"
started=$SECONDS
set +e
# Ctrl-C stops cordon (which first undoes what it changed in Open WebUI), not this
# script: the EXIT trap still tears the stack down.
trap ':' INT
"$cordon" run --project "$project" --suite docker/openwebui/suite.yaml \
    --scenario docker/openwebui/scenario.yaml "$@"
code=$?
trap - INT
set -e
step "suite finished in $((SECONDS - started))s with exit code $code"
exit "$code"
