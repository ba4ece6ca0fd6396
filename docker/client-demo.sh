#!/usr/bin/env bash
# What docker/flowise/demo.sh and docker/n8n/demo.sh share: install, build, deploy the
# app's reference stack with random secrets, run its suite, tear down on every path.
#
#   docker/client-demo.sh flowise|n8n [--keep] [cordon test arguments...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"
app="${1:?usage: client-demo.sh flowise|n8n [--keep] [cordon arguments...]}"
shift
keep=false
if [ "${1:-}" = "--keep" ]; then keep=true; shift; fi
step() { printf '==> %s\n' "$*" >&2; }
secret() { head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32; }

case "$app" in
    flowise)
        export CORDON_SUBNET=198.18
        secrets=(NATIVE_TOKEN FILES_TOKEN LEGACY_TOKEN WIKI_TOKEN MODEL_KEY FLOWISE_ADMIN_PASSWORD FLOWISE_SECRET_KEY) ;;
    n8n)
        export CORDON_SUBNET=198.19
        secrets=(LEGACY_TOKEN NOTES_TOKEN N8N_MCP_TOKEN WIKI_TOKEN MODEL_KEY N8N_OWNER_PASSWORD N8N_ENCRYPTION_KEY) ;;
    *) echo "client-demo.sh: unknown app $app (flowise or n8n)" >&2; exit 2 ;;
esac
project="cordon-$app-demo"

step "installing Node 24, Flowise 3.1.4 and n8n 1.100.1 if needed (tests/clients/setup.sh)"
bash tests/clients/setup.sh
step "building the images (docker/build-images.sh, and the empty root for Node apps)"
export FIXTURE_TAG="${FIXTURE_TAG:-cordon-fixture:dev}" BUSYBOX_TAG="${BUSYBOX_TAG:-cordon-busybox:dev}"
bash docker/build-images.sh >/dev/null
export CORDON_FIXTURE_IMAGE="$FIXTURE_TAG" CORDON_BUSYBOX_IMAGE="$BUSYBOX_TAG"
export CORDON_NODEAPP_IMAGE="cordon-nodeapp:${FIXTURE_TAG##*:}"
OWUI_IMAGE="$CORDON_NODEAPP_IMAGE" bash docker/openwebui/build-image.sh
step "building cordon"
cargo build --quiet
cordon="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/cordon"
for var in "${secrets[@]}"; do export "$var=$(secret)"; done
# Flowise and n8n want upper and lower case, a digit and a special character in a password.
for var in FLOWISE_ADMIN_PASSWORD N8N_OWNER_PASSWORD; do
    [ -n "${!var:-}" ] && export "$var=${!var}-Aa1!"
done
key_dir="$(mktemp -d -t cordon-demo.XXXXXX)"
export N8N_API_KEY_FILE="$key_dir/n8n-api-key"

teardown() {
    if [ "$keep" = true ]; then
        step "keeping the stack; tear it down with: docker/$app/deploy.sh down $project (it uses the Compose plugin, else docker-compose)"
    else
        step "tearing the stack down"
        bash "docker/$app/deploy.sh" down "$project" || true
    fi
    rm -rf "$key_dir"
}
trap teardown EXIT
step "deploying the $app reference stack as $project"
bash "docker/$app/deploy.sh" up "$project"
[ -f "$N8N_API_KEY_FILE" ] && N8N_API_KEY="$(cat "$N8N_API_KEY_FILE")" && export N8N_API_KEY
step "running docker/$app/suite.yaml against docker/$app/scenario.yaml"
started=$SECONDS
set +e
# Ctrl-C stops cordon (which first undoes what it made in the app), not this script:
# the EXIT trap still tears the stack down.
trap ':' INT
"$cordon" run --project "$project" --suite "docker/$app/suite.yaml" --scenario "docker/$app/scenario.yaml" "$@"
code=$?
trap - INT
set -e
step "suite finished in $((SECONDS - started))s with exit code $code"
exit "$code"
