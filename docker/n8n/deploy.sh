#!/usr/bin/env bash
# Deploys the n8n reference stack, or one of its broken variants, the way the platform's
# deploy does: every service up, then the platform's deploy step (provision.js, run with
# n8n's own Node inside the n8n container against its loopback: nothing is published)
# sets the owner up through n8n's setup API, makes the credentials and the managed
# workflows through n8n's public API, and a least-scope API key for cordon.
#
#   deploy.sh up   <project> [variant-dir]
#   deploy.sh down <project> [variant-dir]
#
# A variant directory may hold compose.yaml (an override), workflows.json (replaces the
# declared workflows) and env (KEY=value lines exported before compose runs).
# Env: CORDON_SUBNET, CORDON_FIXTURE_IMAGE, CORDON_BUSYBOX_IMAGE, CORDON_NODEAPP_IMAGE,
# the stack's secrets (LEGACY_TOKEN NOTES_TOKEN N8N_MCP_TOKEN WIKI_TOKEN MODEL_KEY
# N8N_OWNER_PASSWORD N8N_ENCRYPTION_KEY), N8N_API_KEY_FILE (where the least-scope key is
# written, mode 0600), and CORDON_NODE_DIR / CORDON_N8N_DIR (read from
# <repo>/.clients.env, written by tests/clients/setup.sh, when unset). Secrets are never
# printed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
app=n8n
spec_name=workflows.json
key_file="${N8N_API_KEY_FILE:-}"
if [ "${1:-}" = up ] && [ -z "$key_file" ]; then
    echo "deploy.sh: set N8N_API_KEY_FILE: where the least-scope API key is written" >&2
    exit 2
fi
. "$here/../client-stack.sh"
spec="$(render_spec "$(cat <<'PY'
for w in spec["workflows"] + ([spec["server"]] if spec.get("server") else []):
    w["key"] = need(w.pop("key_env"))
    if "notes_env" in w:
        w["notes"] = "call it with Bearer " + need(w.pop("notes_env"))
for h in spec.get("human", []):
    h["sticky"] = "the token, for when the credential breaks: " + need(h.pop("sticky_env"))
spec.setdefault("prefix", "infinito:")
spec["owner"] = {"email": "owner@cordon.test", "password": need("N8N_OWNER_PASSWORD")}
spec["model"] = {"base_url": "http://model:9100/v1", "key": need("MODEL_KEY")}
PY
)")"
say "2/2 the platform's deploy step: owner, credentials, workflows, API key"
umask 077
provision "$spec" > "$key_file.tmp"
mv "$key_file.tmp" "$key_file"
say "deployed in $((SECONDS - t0)) s (the least-scope API key is in $key_file)"
