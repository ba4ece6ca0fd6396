"""Provisions a running Open WebUI the way the platform's deploy does: groups first,
then the tool-server connections with those groups' ids in their access grants.

Runs inside the Open WebUI container (its own Python, stdlib only) and talks to
127.0.0.1:8080 there. Reads one JSON document on stdin:
  {"admin": {"email": ..., "password": ...},
   "groups": [names to exist],
   "connections": [{"id", "name", "url", "key", "groups": [names],
                    optional "type", "path", "auth_type", "headers", "spec_type", "spec"}]}
Creates the missing groups, renders TOOL_SERVER_CONNECTIONS, also POSTs it through the
admin API (what a platform with persistent config relies on), and prints the rendered
JSON on stdout: deploy.sh recreates the container with it. It holds keys: never echo it.
"""

import json
import sys
import time
import urllib.error
import urllib.request

BASE = "http://127.0.0.1:8080"


def call(method, path, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def wait_ready(budget=240):
    started = time.time()
    last = "no answer"
    while time.time() - started < budget:
        try:
            with urllib.request.urlopen(BASE + "/ready", timeout=5) as resp:
                if resp.status == 200:
                    return time.time() - started
        except urllib.error.HTTPError as e:
            last = f"/ready answered {e.code}"
        except Exception as e:  # starting: connection refused
            last = type(e).__name__
        time.sleep(0.5)
    sys.exit(f"provision: Open WebUI not ready within {budget}s ({last})")


def main():
    if sys.argv[1:] == ["wait"]:
        print(f"provision: ready after {wait_ready():.1f}s", file=sys.stderr)
        return
    spec = json.load(sys.stdin)
    waited = wait_ready()
    print(f"provision: ready after {waited:.1f}s", file=sys.stderr)
    token = call("POST", "/api/v1/auths/signin", body=spec["admin"])["token"]
    existing = {}
    for g in call("GET", "/api/v1/groups/", token):
        existing.setdefault(g["name"], []).append(g["id"])
    wanted = list(spec.get("groups", []))
    for c in spec["connections"]:
        wanted.extend(n for n in c["groups"] if n not in wanted)
    for name in wanted:
        if name not in existing:
            g = call("POST", "/api/v1/groups/create", token, {"name": name, "description": "MCP access (deploy)"})
            existing[name] = [g["id"]]
            print(f"provision: created group {name}", file=sys.stderr)
        elif len(existing[name]) > 1:
            sys.exit(f"provision: {len(existing[name])} groups are named {name}")
    rendered = []
    for c in spec["connections"]:
        grants = [{"principal_type": "group", "principal_id": existing[n][0], "permission": "read"} for n in c["groups"]]
        entry = {
            "type": c.get("type", "mcp"),
            "url": c["url"],
            "path": c.get("path", ""),
            "auth_type": c.get("auth_type", "bearer"),
            "key": c["key"],
            "config": {"enable": True, "function_name_filter_list": "", "access_grants": grants},
            "info": {"id": c["id"], "name": c.get("name", c["id"]), "description": c.get("description", "")},
        }
        # What the admin UI adds (spec_type, spec) and custom headers, as written.
        for extra in ("headers", "spec_type", "spec"):
            if extra in c:
                entry[extra] = c[extra]
        rendered.append(entry)
    call("POST", "/api/v1/configs/tool_servers", token, {"TOOL_SERVER_CONNECTIONS": rendered})
    print(f"provision: {len(rendered)} connection(s) rendered", file=sys.stderr)
    print(json.dumps(rendered, separators=(",", ":")))


main()
