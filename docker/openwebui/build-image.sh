#!/usr/bin/env bash
# Builds the Open WebUI image with no registry and no base image: an imported rootfs
# that holds only /etc/passwd, /etc/group, /etc/nsswitch.conf, /tmp and a /data owned by
# the user Open WebUI runs as (65534). The runtime itself comes in through read-only bind
# mounts (docker/openwebui/compose.yaml): the host's /usr, /lib, /lib64, /etc/ssl, the
# base Python the venv was made from, and the venv of tests/openwebui/setup.sh.
# Content-stable and idempotent: an image with this tag and content is left alone.
#
# Env: OWUI_IMAGE (default cordon-openwebui:dev)
set -euo pipefail

tag="${OWUI_IMAGE:-cordon-openwebui:dev}"
say() { printf '==> %s\n' "$*" >&2; }

ctx="$(mktemp -d -t cordon-owui-image.XXXXXX)"
trap 'rm -rf "$ctx"' EXIT
root="$ctx/root"
mkdir -p "$root/etc" "$root/tmp" "$root/data"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$root/etc/nsswitch.conf"
ln -s usr/bin "$root/bin"
# /sbin stays a real directory: the engine mounts docker-init there (init: true).
mkdir -p "$root/sbin"
chmod 1777 "$root/tmp"
chmod 0755 "$root/data"
# A named volume mounted on /data starts as a copy of this directory, owner included.
chown 65534:65534 "$root/data"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf "$ctx/rootfs.tar" \
    etc bin sbin tmp
tar --mtime=@0 --numeric-owner -C "$root" -rf "$ctx/rootfs.tar" data
digest="$(sha256sum "$ctx/rootfs.tar" | cut -c1-16)"
if [ "$(docker image inspect --format '{{index .Config.Labels "org.cordon.rootfs"}}' "$tag" 2>/dev/null || true)" = "$digest" ]; then
    say "image $tag is up to date (rootfs $digest)"
    exit 0
fi
say "importing $tag (rootfs $digest: passwd, group, nsswitch, /tmp, /data for uid 65534)"
docker import \
    --change 'LABEL org.cordon.fixture=1' \
    --change "LABEL org.cordon.rootfs=$digest" \
    --change 'USER 65534:65534' \
    --change 'WORKDIR /tmp' \
    --change 'ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1' \
    "$ctx/rootfs.tar" "$tag" >/dev/null
say "image $tag ready"
