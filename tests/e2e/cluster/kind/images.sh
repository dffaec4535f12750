#!/usr/bin/env bash
# The images kind preloads on a node, built here from build.sh's binaries (pause, CoreDNS,
# kube-apiserver, -controller-manager, -scheduler, -proxy), tools.sh's etcd (the version
# kubeadm expects) and kindnet/ (the CNI daemon), tagged with the names kubeadm uses, and
# saved in one archive:
#   $CACHE/images-<key>.tar     (<key>: this script, the binaries, the rootfs image, kindnet/)
# Prints the archive path. Cached: a warm run only checks that the archive exists.
# Also sourced by node.sh / kind.sh for the image names (with IMAGES_NAMES_ONLY=1).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/common.sh"

ETCD_VERSION=${QDMESH_KIND_ETCD_VERSION:-v3.6.8}
COREDNS_VERSION=${QDMESH_COREDNS_VERSION:-v1.15.0}
REG=registry.k8s.io
PAUSE_IMAGE=$REG/pause:3.10.2
# kubeadm learns these tags from the kind config (etcd.local.imageTag, dns.imageTag): CoreDNS
# is build.sh's, whose version is not kubeadm's default.
ETCD_TAG=${ETCD_VERSION#v}-0
COREDNS_TAG=$COREDNS_VERSION
[ "${IMAGES_NAMES_ONLY:-}" = 1 ] && return 0

ensure_docker
bash "$HERE/../build.sh" >&2
ROOTFS=$(bash "$HERE/rootfs.sh")
TOOLS=$(bash "$HERE/tools.sh")
KEY=$( { cat "$0" "$HERE"/kindnet/*; echo "$TOOLS"; docker image inspect -f '{{.Id}}' "$ROOTFS"
         ls -l --time-style=+%s "$K8S_BIN"/; echo "$K8S_VERSION"; } | sha256sum | cut -c1-12)
ARCHIVE=$CACHE/images-$KEY.tar
KINDNET_IMAGE=localhost/qdmesh/kindnet:$KEY
[ -s "$ARCHIVE" ] && { log "cached: $ARCHIVE"; echo "$ARCHIVE"; exit 0; }
start=$SECONDS
CTX=$(mktemp -d "$CACHE/ctx.XXXXXX")
trap 'rm -rf "$CTX"' EXIT

# build NAME FROM FILE... [-- DOCKERFILE LINES]: an image of the given files in /usr/local/bin.
build() {
    local name=$1 from=$2; shift 2
    local dir=$CTX/$RANDOM$RANDOM file extra=()
    mkdir -p "$dir/bin"
    while [ $# -gt 0 ] && [ "$1" != -- ]; do cp "$1" "$dir/bin/"; shift; done
    [ $# -gt 0 ] && { shift; extra=("$@"); }
    { echo "FROM $from"; echo "COPY bin/ /usr/local/bin/"
      echo "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
      printf '%s\n' "${extra[@]}"; } > "$dir/Dockerfile"
    log "building $name"
    idle docker build -q -t "$name" "$dir" >/dev/null 2>"$dir.log" || { cat "$dir.log" >&2; exit 1; }
}
B=$K8S_BIN
build "$PAUSE_IMAGE" scratch "$B/pause" -- 'ENTRYPOINT ["/usr/local/bin/pause"]'
build "$REG/etcd:$ETCD_TAG" scratch "$TOOLS/etcd" -- 'CMD ["/usr/local/bin/etcd"]'
build "$REG/coredns/coredns:$COREDNS_TAG" scratch "$B/coredns" -- 'ENTRYPOINT ["/usr/local/bin/coredns"]'
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
    build "$REG/$cmd:$K8S_VERSION" scratch "$B/$cmd" -- "ENTRYPOINT [\"/usr/local/bin/$cmd\"]"
done
# kube-proxy needs iptables, conntrack and ip: the Debian root filesystem.
build "$REG/kube-proxy:$K8S_VERSION" "$ROOTFS" "$B/kube-proxy" -- 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]'
build "$KINDNET_IMAGE" "$ROOTFS" "$B/kubectl" "$HERE/kindnet/kindnet.sh" -- 'ENTRYPOINT ["/usr/local/bin/kindnet.sh"]'
log "saving the images to $ARCHIVE"
idle docker save -o "$ARCHIVE.tmp" "$PAUSE_IMAGE" "$REG/etcd:$ETCD_TAG" "$REG/coredns/coredns:$COREDNS_TAG" \
    "$REG/kube-apiserver:$K8S_VERSION" "$REG/kube-controller-manager:$K8S_VERSION" \
    "$REG/kube-scheduler:$K8S_VERSION" "$REG/kube-proxy:$K8S_VERSION" "$KINDNET_IMAGE"
mv "$ARCHIVE.tmp" "$ARCHIVE"
echo "$KINDNET_IMAGE" > "$ARCHIVE.kindnet"
ls -1t "$CACHE"/images-*.tar | tail -n +3 | while read -r old; do rm -f "$old" "$old.kindnet"; done
log "built in $((SECONDS - start)) s: $(du -h "$ARCHIVE" | cut -f1)"
echo "$ARCHIVE"
