#!/usr/bin/env bash
# Build the image of cordon itself, with no registry and no pulls:
#   cordon:dev  FROM scratch + the static `cordon` binary (docker/images/cordon/Dockerfile),
#               labelled with its OCI version, revision, created and source
# Prints the image's digest (its id; a pushed image's repository digests too) last, on
# stdout, for pinning: `image: <registry>/cordon@sha256:…`.
# The same static binary is what carriers run on other swarm nodes (`cordon agent`).
# Idempotent; prints every step; stops at the first failure.
#
# Usage: build-cordon-image.sh [--print-binary]
#   --print-binary  only build the static cordon binary and print its path (no Docker).
#
# Env: CORDON_TAG (default cordon:dev), CARGO (default cargo), SOURCE_DATE_EPOCH (the
#      `created` label; default now), CORDON_SOURCE (the `source` label; default the
#      checkout's `origin` remote, else the directory). CARGO_TARGET_DIR and
#      cargo configuration are honoured (docker/static-binary.sh asks cargo).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
tag="${CORDON_TAG:-cordon:dev}"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'build-cordon-image.sh: error: %s\n' "$*" >&2; exit 1; }
run() { printf '+ %s\n' "$*" >&2; "$@"; }

print_binary=false
case "${1:-}" in
    --print-binary) print_binary=true ;;
    "") ;;
    *) die "unknown argument: $1 (usage: build-cordon-image.sh [--print-binary])" ;;
esac
if ! $print_binary; then
    command -v docker >/dev/null || die "docker CLI not found"
    docker info >/dev/null 2>&1 || die "docker engine not reachable (start dockerd)"
fi

say "building the static cordon binary (x86_64-unknown-linux-gnu, crt-static)"
start=$(date +%s)
bin="$(bash "$here/static-binary.sh" "$repo/Cargo.toml" cordon)" || die "cargo build of cordon failed"
say "binary ready in $(( $(date +%s) - start ))s: $bin ($(du -h "$bin" | cut -f1))"
if $print_binary; then
    printf '%s\n' "$bin"
    exit 0
fi

ctx="$(mktemp -d -t cordon-image.XXXXXX)"
trap 'rm -rf "$ctx"' EXIT
cp "$here/images/cordon/Dockerfile" "$ctx/Dockerfile"
cp "$bin" "$ctx/cordon"
previous="$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)"
say "building image $tag from docker/images/cordon"
# The binary says its own version and commit (`cordon 0.1.0 (commit abc123)`).
said="$("$bin" --version)"
version="$(printf '%s' "$said" | sed -n 's/^cordon \([^ ]*\).*/\1/p')"
revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || printf '%s' "$said" | sed -n 's/.*(commit \(.*\))$/\1/p')"
created="$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)"
source_url="${CORDON_SOURCE:-$(git -C "$repo" remote get-url origin 2>/dev/null || printf 'file://%s' "$repo")}"
DOCKER_BUILDKIT=0 run docker build --pull=false --network none \
    --build-arg "VERSION=${version:-unknown}" --build-arg "REVISION=${revision:-unknown}" \
    --build-arg "CREATED=$created" --build-arg "SOURCE=$source_url" -t "$tag" "$ctx" >&2
current="$(docker image inspect -f '{{.Id}}' "$tag")"
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
    # This tag's previous build, now untagged; still in use by a container, it stays.
    say "removing the previous build of $tag"
    docker image rm "$previous" >/dev/null 2>&1 || true
fi

say "smoke test"
run docker run --rm --network none "$tag" --version >&2
say "done: $tag ($(docker image inspect -f '{{.Size}}' "$tag") bytes), version ${version:-unknown}, revision ${revision:-unknown}"
# The digest to pin by: the image id here; once pushed, the registry's digest
# (`docker push` prints it, and `docker image inspect -f '{{.RepoDigests}}'` shows it).
printf '%s %s\n' "$tag" "$current"
docker image inspect -f '{{range .RepoDigests}}{{println .}}{{end}}' "$tag"
