#!/usr/bin/env bash
# Build the Kubernetes pieces the e2e cluster and the API-server tests need, once per machine,
# into a cache outside the repository keyed by version:
#   ${QDMESH_K8S_CACHE:-/var/cache/qdmesh/k8s}/<k8s version>/bin/
#     etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
#     kubectl, coredns, pause
# No registry ships these binaries and a machine without internet access cannot download release builds, so they
# are compiled from the Go module proxy (see docs/e2e.md). A warm run only checks the stamps.
set -euo pipefail

K8S_VERSION=${QDMESH_K8S_VERSION:-v1.36.3}
ETCD_VERSION=${QDMESH_ETCD_VERSION:-v3.5.35}
COREDNS_VERSION=${QDMESH_COREDNS_VERSION:-v1.15.0}
CACHE_ROOT=${QDMESH_K8S_CACHE:-/var/cache/qdmesh/k8s}
ROOT="$CACHE_ROOT/$K8S_VERSION"
BIN="$ROOT/bin"
SRC="$ROOT/src"
STAMP="$BIN/.complete-etcd-$ETCD_VERSION-coredns-$COREDNS_VERSION"

KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

log() { echo "[k8s-build $(date -u +%H:%M:%S)] $*"; }

if [ -f "$STAMP" ]; then
    log "cached: $BIN"
    exit 0
fi

command -v go >/dev/null || { echo "go is required (Go 1.26 pairs with Kubernetes 1.36)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "gcc is required for the pause binary" >&2; exit 1; }
mkdir -p "$BIN" "$SRC"
# One build at a time per cache (CI setup and a developer may start it together).
exec 9>"$ROOT/.build.lock"
if ! flock -n 9; then
    log "another build of $ROOT is running; waiting for it"
    flock 9
fi
if [ -f "$STAMP" ]; then
    log "cached: $BIN"
    exit 0
fi
start=$(date +%s)
export CGO_ENABLED=0 GOTOOLCHAIN=local

# The kubernetes module's go.mod replaces every staging module (k8s.io/api, k8s.io/client-go,
# ...) with a directory inside its own repository; replace directives of a dependency are
# ignored, so a wrapper module repeats them pointing at the published v0.<minor>.<patch>.
build_kubernetes() {
    local missing=0 cmd
    for cmd in "${KUBE_COMMANDS[@]}"; do [ -x "$BIN/$cmd" ] || missing=1; done
    [ "$missing" = 1 ] || { log "kubernetes binaries cached"; return; }
    local dir="$SRC/kubernetes" staging_version="v0.${K8S_VERSION#v1.}"
    mkdir -p "$dir"
    log "downloading k8s.io/kubernetes@$K8S_VERSION"
    local gomod
    gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    {
        echo "module qdmesh.local/k8s-build"
        echo
        echo "go $(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')"
        echo
        echo "require k8s.io/kubernetes $K8S_VERSION"
        echo
        sed -nE 's#^[[:space:]]*(replace[[:space:]]+)?(k8s\.io/[^[:space:]]+)[[:space:]]+=>[[:space:]]+\./staging/.*#replace \2 => \2 '"$staging_version"'#p' "$gomod"
    } > "$dir/go.mod"
    local count
    count=$(grep -c '^replace' "$dir/go.mod")
    [ "$count" -gt 20 ] || { echo "found only $count staging modules in $gomod" >&2; exit 1; }
    log "wrapper module replaces $count staging modules with $staging_version"
    local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
    local pkg ldflags=""
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    done
    local targets=()
    for cmd in "${KUBE_COMMANDS[@]}"; do targets+=("k8s.io/kubernetes/cmd/$cmd"); done
    log "building ${KUBE_COMMANDS[*]}"
    (cd "$dir" && go build -mod=mod -trimpath -ldflags "-s -w $ldflags" -o "$BIN/" "${targets[@]}")
}

# etcd's server module has replace directives of its own, so `go install` refuses it; a
# wrapper module requiring it builds the same main package.
build_etcd() {
    [ -x "$BIN/etcd" ] && [ -f "$BIN/.etcd-$ETCD_VERSION" ] && { log "etcd cached"; return; }
    local dir="$SRC/etcd"
    mkdir -p "$dir"
    printf 'module qdmesh.local/etcd-build\n\ngo 1.23\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
        "$ETCD_VERSION" > "$dir/go.mod"
    log "building etcd $ETCD_VERSION"
    (cd "$dir" && go build -mod=mod -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
    touch "$BIN/.etcd-$ETCD_VERSION"
}

build_coredns() {
    [ -x "$BIN/coredns" ] && [ -f "$BIN/.coredns-$COREDNS_VERSION" ] && { log "coredns cached"; return; }
    log "building coredns $COREDNS_VERSION"
    GOBIN="$BIN" go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
    touch "$BIN/.coredns-$COREDNS_VERSION"
}

build_pause() {
    [ -x "$BIN/pause" ] && { log "pause cached"; return; }
    local moddir
    moddir=$(cd "$SRC" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    log "building pause from $moddir/build/pause/linux/pause.c"
    gcc -Os -Wall -Werror -static -DVERSION="qdmesh-$K8S_VERSION" \
        -o "$BIN/pause" "$moddir/build/pause/linux/pause.c"
    strip "$BIN/pause"
}

build_pause
build_etcd
build_coredns
build_kubernetes
touch "$STAMP"
log "done in $(( $(date +%s) - start )) s: $(ls "$BIN" | tr '\n' ' ')"
