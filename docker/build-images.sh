#!/usr/bin/env bash
# Build the fixture images of cordon's reference stack, with no registry and no pulls:
#   cordon-fixture:dev  FROM scratch + the static `cordon-fixture` binary (fixtures/ crate)
#   cordon-busybox:dev  FROM scratch + Debian's busybox-static, applets installed in /bin
#   cordon-fixture-rebuilt:dev  the fixture with one label more (another id, the same code)
# Idempotent; prints every step; stops at the first failure.
#
# Usage: build-images.sh [--print-binary]
#   --print-binary  only build the static fixture binary and print its path (no Docker).
#
# Env: FIXTURE_TAG (default cordon-fixture:dev), BUSYBOX_TAG (default cordon-busybox:dev),
#      BUSYBOX (default /bin/busybox), CARGO (default cargo). CARGO_TARGET_DIR and cargo
#      configuration are honoured: cargo itself says where it put the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
fixture_tag="${FIXTURE_TAG:-cordon-fixture:dev}"
busybox_tag="${BUSYBOX_TAG:-cordon-busybox:dev}"
busybox="${BUSYBOX:-/bin/busybox}"
cargo="${CARGO:-cargo}"
target=x86_64-unknown-linux-gnu

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'build-images.sh: error: %s\n' "$*" >&2; exit 1; }
run() { printf '+ %s\n' "$*" >&2; "$@"; }

print_binary=false
case "${1:-}" in
    --print-binary) print_binary=true ;;
    "") ;;
    *) die "unknown argument: $1 (usage: build-images.sh [--print-binary])" ;;
esac

command -v "$cargo" >/dev/null || die "cargo not found"
if ! $print_binary; then
    command -v docker >/dev/null || die "docker CLI not found"
    docker info >/dev/null 2>&1 || die "docker engine not reachable (start dockerd)"
fi

# Test binaries run side by side and each builds the images once: one build at a time,
# so two never tag, or prune, over each other (the engine refuses a second prune).
if command -v flock >/dev/null; then
    exec 9>"${TMPDIR:-/tmp}/cordon-build-images.lock"
    flock 9
fi

# The static fixture binary, where cargo put it (docker/static-binary.sh).
build_fixture() {
    bash "$here/static-binary.sh" "$repo/fixtures/Cargo.toml" cordon-fixture
}

ctx="$(mktemp -d -t cordon-images.XXXXXX)"
trap 'rm -rf "$ctx"' EXIT

# 1. The static fixture binary.
say "building the static cordon-fixture binary ($target, crt-static)"
start=$(date +%s)
bin="$(build_fixture)" || die "cargo build of the fixtures failed"
say "binary ready in $(( $(date +%s) - start ))s: $bin ($(du -h "$bin" | cut -f1))"
if $print_binary; then
    printf '%s\n' "$bin"
    exit 0
fi

# 2. Busybox: Debian's busybox-static (the dynamic `busybox` package would not run FROM scratch).
is_static() { [ -x "$1" ] && command -v file >/dev/null && file -L "$1" | grep -Eq 'statically linked|static-pie linked'; }
if ! is_static "$busybox"; then
    say "$busybox missing or not static; installing Debian's busybox-static"
    run apt-get install -y busybox-static || die "cannot install busybox-static"
    busybox=/bin/busybox
    is_static "$busybox" || die "$busybox is still not a static binary"
fi

build() { # tag dockerfile-dir file...
    local tag="$1" dir="$2"; shift 2
    local c="$ctx/$(basename "$dir")"
    mkdir -p "$c"
    cp "$here/images/$dir/Dockerfile" "$c/Dockerfile"
    local f
    for f in "$@"; do cp "$f" "$c/"; done
    say "building image $tag from docker/images/$dir"
    DOCKER_BUILDKIT=0 run docker build --pull=false -t "$tag" "$c"
}

build "$fixture_tag" fixture "$bin"
# The same adapter rebuilt with one label more: another image id, the same binary. The
# variants sidecar-image-drift run it where the scenario pins the fixture's own id.
rebuilt_tag="${fixture_tag%:*}-rebuilt:${fixture_tag##*:}"
say "building image $rebuilt_tag (the fixture, one label more: another id, the same code)"
printf 'FROM %s\nLABEL org.cordon.fixture.rebuilt=1\n' "$fixture_tag" \
    | DOCKER_BUILDKIT=0 run docker build --pull=false -q -t "$rebuilt_tag" - >/dev/null
mkdir -p "$ctx/stage" && cp "$busybox" "$ctx/stage/busybox" && chmod 0755 "$ctx/stage/busybox"
build "$busybox_tag" busybox "$ctx/stage/busybox"

say "removing dangling images left by earlier builds (label org.cordon.fixture=1 only)"
# Housekeeping only: a prune another process holds is no reason to fail the build.
run docker image prune -f --filter label=org.cordon.fixture=1 >/dev/null \
    || say "prune skipped (the engine is busy with another); the images are built"

say "smoke test"
run docker run --rm --network none "$fixture_tag" --version
run docker run --rm --network none "$busybox_tag" sh -c 'busybox | head -1; for a in sh ip nc wget nslookup; do command -v $a || exit 1; done'

say "done"
docker image ls --filter label=org.cordon.fixture=1 --format '{{.Repository}}:{{.Tag}}  {{.Size}}' \
    | grep -E "^(${fixture_tag}|${busybox_tag})  " >&2 || true
