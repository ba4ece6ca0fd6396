#!/usr/bin/env bash
# Deploy or remove the swarm reference stack (docker/swarm/stack.yaml), as the demo and
# tests/swarm_stack.rs do:
#   deploy.sh up STACK [OVERRIDE.yaml ...]   deploy (twice: the clients need the DNS
#                                            task's address, known only after the first)
#   deploy.sh down STACK                     remove it and wait until its networks and
#                                            secrets are gone
# Env for up: CORDON_SUBNET, CORDON_BLOCK, CORDON_FIXTURE_IMAGE, CORDON_DNS_ENGINE (the
# engine of the node the DNS task runs on, if not this one) and the tokens
# NATIVE_TOKEN LEGACY_TOKEN MODERN_TOKEN GITEA_TOKEN WIKI_TOKEN (written to a private
# temporary directory for `docker stack deploy` to read as secrets, removed right after).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cmd="${1:?usage: deploy.sh up|down STACK [OVERRIDE.yaml ...]}"
stack="${2:?usage: deploy.sh up|down STACK [OVERRIDE.yaml ...]}"
shift 2

die() { printf 'deploy.sh: error: %s\n' "$*" >&2; exit 1; }

wait_gone() { # what, command printing leftovers
    local what="$1"; shift
    # A busy engine (CI, a stack with host-published ports) can take over a minute.
    for _ in $(seq 1 180); do
        [ -z "$("$@" 2>/dev/null)" ] && return 0
        sleep 1
    done
    die "$what of stack $stack still present after 180s: $("$@" | tr '\n' ' ')"
}

case "$cmd" in
up)
    files=(-c "$here/stack.yaml")
    for f in "$@"; do files+=(-c "$f"); done
    secrets="$(mktemp -d -t cordon-swarm-secrets.XXXXXX)"
    trap 'rm -rf "$secrets"' EXIT
    chmod 700 "$secrets"
    for name in native legacy modern gitea wiki; do
        var="$(echo "$name" | tr a-z A-Z)_TOKEN"
        [ -n "${!var:-}" ] || die "$var is not set"
        printf '%s' "${!var}" > "$secrets/$name"
    done
    export CORDON_SECRETS="$secrets"
    # Never ask a registry: the images exist on the nodes.
    CORDON_DNS=127.0.0.1 docker stack deploy --resolve-image never "${files[@]}" "$stack" >&2
    dns=""
    for _ in $(seq 1 90); do
        id="$(docker ${CORDON_DNS_ENGINE:+-H "$CORDON_DNS_ENGINE"} ps -q --filter "label=com.docker.swarm.service.name=${stack}_dns" | head -1)"
        if [ -n "$id" ]; then
            dns="$(docker ${CORDON_DNS_ENGINE:+-H "$CORDON_DNS_ENGINE"} inspect -f "{{with index .NetworkSettings.Networks \"${stack}_dnsnet\"}}{{.IPAddress}}{{end}}" "$id")"
            [ -n "$dns" ] && break
        fi
        sleep 1
    done
    [ -n "$dns" ] || die "the DNS task of $stack did not start"
    CORDON_DNS="$dns" docker stack deploy --resolve-image never "${files[@]}" "$stack" >&2
    echo "$dns"
    ;;
down)
    docker stack rm "$stack" >&2 || true
    wait_gone "services" docker service ls -q --filter "label=com.docker.stack.namespace=$stack"
    wait_gone "containers" docker ps -aq --filter "label=com.docker.stack.namespace=$stack"
    # A stack's named volumes outlive it: remove them with it.
    docker volume ls -q --filter "label=com.docker.stack.namespace=$stack" | xargs -r docker volume rm >/dev/null
    # Docker 20.10 now and then keeps a removed task's endpoint on an overlay network
    # (seen: still held 180 s after `stack rm`). After 30 s of waiting, what is left is
    # removed by hand, its stale endpoints disconnected by force first.
    for _ in $(seq 1 30); do
        [ -z "$(docker network ls -q --filter "label=com.docker.stack.namespace=$stack")" ] && break
        sleep 1
    done
    for net in $(docker network ls -q --filter "label=com.docker.stack.namespace=$stack"); do
        for ep in $(docker network inspect -f '{{range $id, $c := .Containers}}{{$c.Name}} {{end}}' "$net" 2>/dev/null); do
            echo "deploy.sh: disconnecting the stale endpoint $ep from network $net" >&2
            docker network disconnect -f "$net" "$ep" >/dev/null 2>&1 || true
        done
        docker network rm "$net" >/dev/null 2>&1 || true
    done
    wait_gone "networks" docker network ls -q --filter "label=com.docker.stack.namespace=$stack"
    wait_gone "secrets" docker secret ls -q --filter "label=com.docker.stack.namespace=$stack"
    ;;
*) die "unknown command $cmd" ;;
esac
