#!/usr/bin/env bash
# Build one binary of this repository statically linked (x86_64 gnu, crt-static: it runs
# FROM scratch, with no loader and no libc in the image) and print the path cargo reports
# for it. The one place such a binary is built: docker/build-images.sh (the fixtures),
# docker/build-cordon-image.sh (cordon's image, and the carrier's binary) and the tests
# that need either call it.
#
# Usage: static-binary.sh MANIFEST BINARY
#   e.g. static-binary.sh fixtures/Cargo.toml cordon-fixture
#        static-binary.sh Cargo.toml cordon
#
# Env: CARGO (default cargo). CORDON_STATIC_PROFILE: release (default) or dev, unoptimised
# and without debug info: the tests' carrier and image build in 90 s on 2 cores where a
# release build takes 270 s, and only what the binary does is tested, not how fast it runs.
# CARGO_TARGET_DIR and cargo configuration are honoured:
# cargo itself says where it put the binary (a guessed target/ path would find nothing,
# or a stale binary). Cargo's progress goes to stderr; stdout is the path alone.
set -euo pipefail

manifest="${1:?usage: static-binary.sh MANIFEST BINARY}"
binary="${2:?usage: static-binary.sh MANIFEST BINARY}"
cargo="${CARGO:-cargo}"
target=x86_64-unknown-linux-gnu
profile="${CORDON_STATIC_PROFILE:-release}"

die() { printf 'static-binary.sh: error: %s\n' "$*" >&2; exit 1; }
command -v "$cargo" >/dev/null || die "cargo not found"
[ -f "$manifest" ] || die "$manifest: no such manifest"
rustflags="-C target-feature=+crt-static"
case "$profile" in
    release) profile_args=(--release) ;;
    dev) profile_args=(); rustflags="$rustflags -C strip=debuginfo" ;;
    *) die "CORDON_STATIC_PROFILE=$profile: expected release or dev" ;;
esac

printf '+ %s\n' "RUSTFLAGS=\"$rustflags\" $cargo build ${profile_args[*]} --locked --target $target --manifest-path $manifest --bin $binary" >&2
# --target keeps RUSTFLAGS off build scripts and proc macros, which run on the host.
bin="$(RUSTFLAGS="$rustflags" "$cargo" build "${profile_args[@]}" --locked --target "$target" \
        --manifest-path "$manifest" --bin "$binary" --message-format=json-render-diagnostics \
        | sed -n "s/.*\"executable\":\"\([^\"]*\/$binary\)\".*/\1/p" | tail -n 1)" \
    || die "cargo build of $binary failed"
[ -n "$bin" ] || die "cargo reported no $binary executable"
[ -x "$bin" ] || die "cargo reported $bin, which is not an executable file"
if command -v file >/dev/null; then
    file "$bin" | grep -Eq 'statically linked|static-pie linked' || die "$bin is not statically linked: $(file "$bin")"
fi
printf '%s\n' "$bin"
