#!/usr/bin/env bash
# pip-install.sh VENV REQUIREMENT...: installs into VENV (made if missing) with uv, itself
# installed once from PyPI into ${CORDON_UV_DIR:-<repo>/.uv}. uv resolves and downloads
# side by side: measured on a clean 2-core machine beside the test lanes, Open WebUI's
# 262 packages (7 GB) took 1159 s through pip at nice 19 and 18 s through uv, to the same
# versions. Used by the setup scripts of tests/peers, tests/openwebui and tests/lint.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="${1:?usage: pip-install.sh VENV REQUIREMENT...}"
shift
python="${PYTHON:-python3}"
uv_version=0.13.9
uv_dir="${CORDON_UV_DIR:-$repo/.uv}"
uv="$uv_dir/venv/bin/uv"

mkdir -p "$uv_dir"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# The setup scripts run side by side: one installs uv, the others wait for it.
exec 9>"$uv_dir/.lock"
flock 9
if [ "$("$uv" --version 2>/dev/null | cut -d' ' -f2)" != "$uv_version" ]; then
    [ -x "$uv_dir/venv/bin/python" ] || "$python" -m venv "$uv_dir/venv"
    "$uv_dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$uv_version" || true
fi
flock -u 9
# --compile-bytecode, as pip does: Open WebUI's venv is mounted read-only into its
# container, where a venv without .pyc files is compiled again at every start (seen: each
# restart to /ready 15 s slower, the Open WebUI stack test 900 s instead of 515 s).
if [ -x "$uv" ] && UV_CACHE_DIR="${UV_CACHE_DIR:-$uv_dir/cache}" \
    "$uv" pip install --quiet --compile-bytecode --python "$venv/bin/python" "$@"; then
    exit 0
fi
# Where uv cannot run or reach the index (a pip.conf it does not read), pip does it, slower.
echo "pip-install.sh: uv did not install $*; installing with pip" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
