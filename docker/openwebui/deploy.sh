#!/usr/bin/env bash
# Deploys the Open WebUI reference stack, or one of its broken variants, the way the
# platform's deploy does:
#   1. every service up, Open WebUI with no connections yet;
#   2. the groups created through Open WebUI's admin API (provision.py, run inside the
#      Open WebUI container against its own loopback: nothing is published);
#   3. Open WebUI recreated with TOOL_SERVER_CONNECTIONS holding those groups' ids in
#      its access grants, then waited for until /ready answers.
#
#   deploy.sh up   <project> [variant-dir]
#   deploy.sh down <project> [variant-dir]
#
# A variant directory may hold compose.yaml (an override), connections.json (replaces
# the declared connections) and env (KEY=value lines exported before compose runs).
# In connections.json, `url` and header values may name variables as ${VAR} (the subnet,
# a key); `key_env` may be left out (no key); any other field of a connection (path,
# auth_type, headers, spec_type, spec) is passed to Open WebUI as written.
# Env: CORDON_SUBNET, CORDON_FIXTURE_IMAGE, CORDON_OWUI_IMAGE, the stack's secrets
# (NATIVE_TOKEN FILES_TOKEN MODEL_KEY OIDC_CLIENT_SECRET IDP_CONTROL_TOKEN OWUI_SECRET_KEY
# OWUI_ADMIN_PASSWORD), and OWUI_VENV / OWUI_PYTHON_BASE (read from
# ${CORDON_OWUI_DIR:-<repo>/.owui}/paths.env when unset). Secrets are never printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
verb="${1:?usage: deploy.sh up|down <project> [variant-dir]}"
project="${2:?usage: deploy.sh up|down <project> [variant-dir]}"
variant="${3:-}"
say() { printf 'deploy.sh: %s\n' "$*" >&2; }

if [ -z "${OWUI_VENV:-}" ]; then
    paths="${CORDON_OWUI_DIR:-$repo/.owui}/paths.env"
    [ -f "$paths" ] || { say "no $paths: run tests/openwebui/setup.sh first"; exit 1; }
    set -a; . "$paths"; set +a
fi
. "$here/../variant.sh"
apply_variant "$here/no-override.yaml" connections.json
connections="$state_file"

if [ "$verb" = down ]; then
    export TOOL_SERVER_CONNECTIONS='[]'
    compose down -v --remove-orphans -t 2 >&2
    exit 0
fi
[ "$verb" = up ] || { say "unknown verb $verb"; exit 2; }

script="$(cat "$here/provision.py")"
in_webui() { docker exec -i "$(compose ps -q openwebui)" "$OWUI_VENV/bin/python" -c "$script" "$@"; }

t0=$SECONDS
webui="$(compose ps -q openwebui 2>/dev/null || true)"
if [ -n "$webui" ] && [ "$(docker inspect --format '{{.State.Running}}' "$webui" 2>/dev/null)" = true ]; then
    # Already deployed: apply the variant's other services, then re-provision Open WebUI.
    others=($(compose config --services | grep -vx openwebui))
    say "1/3 project $project is up: updating ${others[*]}"
    compose up -d --no-build --no-deps --remove-orphans "${others[@]}" >&2
else
    say "1/3 starting project $project on ${CORDON_SUBNET}.0.0/16 (Open WebUI with no connections yet)"
    TOOL_SERVER_CONNECTIONS='[]' compose up -d --no-build --remove-orphans >&2
fi
spec="$(python3 - "$connections" <<'PY'
import json, os, string, sys
spec = json.load(open(sys.argv[1]))
def expand(text, where):
    # ${VAR} from the environment (a subnet, another pair's key): a missing one is an error.
    try:
        return string.Template(text).substitute(os.environ)
    except KeyError as e:
        sys.exit(f"deploy.sh: {where}: {e.args[0]} is not set")
for c in spec["connections"]:
    var = c.pop("key_env", None)
    if var is not None and var not in os.environ:
        sys.exit(f"deploy.sh: {var} is not set")
    c["key"] = os.environ[var] if var else ""
    c["url"] = expand(c["url"], f"connection {c['id']}: url")
    if isinstance(c.get("headers"), dict):
        c["headers"] = {k: expand(str(v), f"connection {c['id']}: header {k}") for k, v in c["headers"].items()}
spec.pop("//", None)
spec["admin"] = {"email": "admin@cordon.test", "password": os.environ["OWUI_ADMIN_PASSWORD"]}
print(json.dumps(spec))
PY
)"
say "2/3 waiting for /ready, then groups and connections through the admin API"
rendered="$(printf '%s' "$spec" | in_webui)"
booted=$((SECONDS - t0))
say "    boot (if any) and provisioning took ${booted}s"
t1=$SECONDS
say "3/3 (re)creating Open WebUI with TOOL_SERVER_CONNECTIONS (the groups' ids in its grants)"
TOOL_SERVER_CONNECTIONS="$rendered" compose up -d --no-build --no-deps openwebui >&2
printf '{"admin":null,"connections":[]}' | in_webui wait
say "    recreate to /ready took $((SECONDS - t1))s; deployed in $((SECONDS - t0))s"
. "$here/../heal-networks.sh"
recreate() {
    TOOL_SERVER_CONNECTIONS="$rendered" compose up -d --no-build --no-deps --force-recreate "$@" >&2
    if printf '%s\n' "$@" | grep -qx openwebui; then
        printf '{}' | in_webui wait
    fi
}
heal_networks
