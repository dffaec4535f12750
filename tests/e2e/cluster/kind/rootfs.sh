#!/usr/bin/env bash
# Debian root filesystem for kind's node image and the images preloaded on a node, made with
# debootstrap from Debian's packages and imported into Docker (no registry):
#   qdmesh-kind/rootfs:<key>   (<key>: hash of this script; the suite and package list are in it)
# Prints the image name. Cached: a warm run only checks that the image exists.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"

SUITE=bookworm
# kind's images/base installs these (its Dockerfile), plus Debian's containerd, runc and CNI
# plugins in place of the ones kind builds from source.
PACKAGES=(systemd systemd-sysv dbus conntrack iptables nftables iproute2 ethtool util-linux mount kmod
    libseccomp2 pigz e2fsprogs bash ca-certificates curl jq procps socat
    containerd runc containernetworking-plugins)
KEY=$(content_key "$0" <<<"$SUITE ${PACKAGES[*]}")
IMAGE=qdmesh-kind/rootfs:$KEY

ensure_docker
if image_exists "$IMAGE"; then log "cached: $IMAGE"; echo "$IMAGE"; exit 0; fi
command -v debootstrap >/dev/null || { log "debootstrap is required (apt-get install debootstrap)"; exit 1; }
# The mirror apt already uses on this machine.
MIRROR=$(apt_mirror)
DIR=$CACHE/rootfs-$KEY
start=$SECONDS
if [ ! -f "$DIR.done" ]; then
    rm -rf "$DIR"; mkdir -p "$DIR"
    log "debootstrap $SUITE from $MIRROR into $DIR"
    idle debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" "$SUITE" "$DIR" "$MIRROR" \
        > "$CACHE/debootstrap-$KEY.log" 2>&1 || { tail -n 30 "$CACHE/debootstrap-$KEY.log" >&2; exit 1; }
    rm -rf "$DIR"/var/cache/apt/archives/*.deb "$DIR"/var/lib/apt/lists/*
    touch "$DIR.done"
fi
log "importing into Docker"
tar -C "$DIR" -c . | idle docker import - "$IMAGE" >/dev/null
rm -rf "$DIR" "$DIR.done"
log "built $IMAGE in $((SECONDS - start)) s"
echo "$IMAGE"
