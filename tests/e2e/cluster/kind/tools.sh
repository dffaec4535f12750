#!/usr/bin/env bash
# The Go binaries a kind node and the host need beyond build.sh's: kubeadm (from build.sh's
# Kubernetes wrapper module), crictl (sigs.k8s.io/cri-tools) and kind itself
# (sigs.k8s.io/kind), and the etcd that kubeadm's static pod expects (build.sh's etcd 3.5
# does not take the --feature-gates flag kubeadm 1.36 gives it), all from the Go module proxy,
# into $CACHE/bin/<key>/. Prints that folder.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"

CRICTL_VERSION=${QDMESH_CRICTL_VERSION:-v1.36.0}
# kubeadm's etcd for Kubernetes 1.36 (`kubeadm config images list`).
KIND_ETCD_VERSION=${QDMESH_KIND_ETCD_VERSION:-v3.6.8}
KEY=$(content_key "$0" <<<"$K8S_VERSION $CRICTL_VERSION $KIND_VERSION $KIND_ETCD_VERSION")
OUT=$CACHE/bin/$KEY
[ -f "$OUT/.complete" ] && { log "cached: $OUT"; echo "$OUT"; exit 0; }
mkdir -p "$OUT"
export CGO_ENABLED=0 GOTOOLCHAIN=local
start=$SECONDS

# build.sh leaves its wrapper module (the staging modules replaced) in its cache.
bash "$HERE/../build.sh" >&2
SRC=$(dirname "$K8S_BIN")/src/kubernetes
if [ ! -x "$OUT/kubeadm" ]; then
    log "building kubeadm $K8S_VERSION"
    minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
    ldflags=""
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    done
    (cd "$SRC" && idle go build -mod=mod -trimpath -ldflags "-s -w $ldflags" -o "$OUT/kubeadm" k8s.io/kubernetes/cmd/kubeadm)
fi
if [ ! -x "$OUT/crictl" ]; then
    log "building crictl $CRICTL_VERSION"
    GOBIN=$OUT idle go install -trimpath -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
fi
if [ ! -x "$OUT/kind" ]; then
    log "building kind $KIND_VERSION"
    GOBIN=$OUT idle go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
fi
if [ ! -x "$OUT/etcd" ]; then
    # etcd's server module has replace directives, so `go install` refuses it (as in build.sh).
    log "building etcd $KIND_ETCD_VERSION"
    dir=$CACHE/src/etcd-$KIND_ETCD_VERSION
    mkdir -p "$dir"
    printf 'module qdmesh.local/etcd-build\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
        "$KIND_ETCD_VERSION" > "$dir/go.mod"
    (cd "$dir" && idle go build -mod=mod -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3)
fi
touch "$OUT/.complete"
log "built kubeadm, crictl, kind, etcd in $((SECONDS - start)) s"
echo "$OUT"
