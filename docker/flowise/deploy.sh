#!/usr/bin/env bash
# Deploys the Flowise reference stack, or one of its broken variants, the way the
# platform's deploy does: every service up, then the platform's reconciler
# (provision.js, run with Flowise's own Node inside the Flowise container against its
# loopback: nothing is published) makes the admin, the model credential, one custom MCP
# server entry and one chatflow per declared provider, and the declared API keys.
#
#   deploy.sh up   <project> [variant-dir]
#   deploy.sh down <project> [variant-dir]
#
# A variant directory may hold compose.yaml (an override), registry.json (replaces the
# declared registry) and env (KEY=value lines exported before compose runs).
# Env: CORDON_SUBNET, CORDON_FIXTURE_IMAGE, CORDON_NODEAPP_IMAGE, the stack's secrets
# (NATIVE_TOKEN FILES_TOKEN LEGACY_TOKEN MODEL_KEY FLOWISE_ADMIN_PASSWORD
# FLOWISE_SECRET_KEY), and CORDON_NODE_DIR / CORDON_FLOWISE_DIR (read from
# <repo>/.clients.env, written by tests/clients/setup.sh, when unset). Secrets are never
# printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
app=flowise
spec_name=registry.json
. "$here/../client-stack.sh"
spec="$(render_spec "$(cat <<'PY'
for e in spec["entries"]:
    e["key"] = need(e.pop("key_env"))
    extra = e.get("extra_auth_config") or {}
    for k, v in list(extra.items()):
        if isinstance(v, str) and v.startswith("$"):
            extra[k] = need(v[1:])
for v in spec.get("variables", []):
    if "value_env" in v:
        v["value"] = need(v.pop("value_env"))
spec.setdefault("prefix", "infinito:")
spec["admin"] = {"email": "admin@cordon.test", "password": need("FLOWISE_ADMIN_PASSWORD")}
spec["model"] = {"name": "cordon-scripted", "base_url": "http://model:9100/v1", "key": need("MODEL_KEY")}
PY
)")"
say "2/2 the platform's reconciler: admin, model credential, entries, chatflows, keys"
provision "$spec"
say "deployed in $((SECONDS - t0)) s"
