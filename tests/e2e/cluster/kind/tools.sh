#!/usr/bin/env bash
# The Go binaries a kind node and the host need beyond build.sh's: kubeadm (from build.sh's
# Kubernetes wrapper module), crictl (sigs.k8s.io/cri-tools) and kind itself
# (sigs.k8s.io/kind), all from the Go module proxy, into $CACHE/bin/<key>/. Prints that folder.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"

CRICTL_VERSION=${QDMESH_CRICTL_VERSION:-v1.36.0}
KEY=$(content_key "$0" <<<"$K8S_VERSION $CRICTL_VERSION $KIND_VERSION")
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
touch "$OUT/.complete"
log "built kubeadm, crictl, kind in $((SECONDS - start)) s"
echo "$OUT"
