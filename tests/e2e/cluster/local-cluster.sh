#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, in the style of Kubernetes'
# hack/local-up-cluster.sh: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# containerd (Debian's 1.6), kubelet, kube-proxy and CoreDNS, from the binaries build.sh
# caches. Everything listens on loopback or on a private bridge whose address is the node IP.
#
#   local-cluster.sh up              start (builds first if needed); prints the kubeconfig path
#   local-cluster.sh down [--purge]  stop everything (--purge: also drop images, PKI, state)
#   local-cluster.sh status          what runs; exit 0 only when the node is Ready and untainted
#   local-cluster.sh import FILE...  load image archives (docker save / OCI) into containerd
#   local-cluster.sh kubeconfig      print the admin kubeconfig path
#
# Needs root. State lives in ${QDMESH_CLUSTER_DIR:-/var/tmp/qdmesh-cluster}.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
K8S_VERSION=${QDMESH_K8S_VERSION:-v1.36.3}
BIN=${QDMESH_K8S_CACHE:-/var/cache/qdmesh/k8s}/$K8S_VERSION/bin
DIR=${QDMESH_CLUSTER_DIR:-/var/tmp/qdmesh-cluster}
PKI=$DIR/pki
LOGS=$DIR/logs
PIDS=$DIR/pids
SOCK=$DIR/containerd/containerd.sock
KUBECONFIG_PATH=$DIR/kubeconfig

NODE_NAME=${QDMESH_NODE_NAME:-qdmesh-node}
NODE_BRIDGE=qdmesh-node0
NODE_IP=${QDMESH_NODE_IP:-10.200.0.1}
POD_BRIDGE=qdmesh-cni0
POD_CIDR=${QDMESH_POD_CIDR:-10.244.0.0/24}
SERVICE_CIDR=10.0.0.0/24
API_SERVICE_IP=10.0.0.1
DNS_IP=10.0.0.10
API_PORT=6443
SERVER=https://$NODE_IP:$API_PORT

PAUSE_IMAGE=localhost/qdmesh/pause:$K8S_VERSION
COREDNS_IMAGE=localhost/qdmesh/coredns:$K8S_VERSION
BUSYBOX_IMAGE=localhost/qdmesh/busybox:$K8S_VERSION
START_TIMEOUT=${QDMESH_CLUSTER_TIMEOUT:-180}
# Order matters: started in this order, stopped in reverse.
DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy)

log() { echo "[local-cluster $(date -u +%H:%M:%S)] $*" >&2; }
die() { log "error: $*"; exit 1; }
kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }
ctr_k8s() { ctr --address "$SOCK" --namespace k8s.io "$@"; }

pid_of() {
    local file=$PIDS/$1.pid pid
    [ -f "$file" ] || return 1
    pid=$(cat "$file")
    # The PID must still be our process, not a reused number.
    [ -d "/proc/$pid" ] && grep -q -- "$1" "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

start_daemon() {
    local name=$1; shift
    if pid_of "$name" >/dev/null; then log "$name already running"; return; fi
    # The daemons outlive this script: they must not inherit its open files, above all the
    # lock of `flock LOCKFILE run.sh` (a kept cluster would hold the suite's lock until `down`).
    (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
        done
        exec setsid "$@" >"$LOGS/$name.log" 2>&1 < /dev/null
    ) &
    echo $! > "$PIDS/$name.pid"
}

stop_daemon() {
    local name=$1 pid i
    pid=$(pid_of "$name") || { rm -f "$PIDS/$name.pid"; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.2; done
    [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -f "$PIDS/$name.pid"
    log "stopped $name"
}

# wait_for WHAT DAEMON COMMAND...: poll COMMAND until it succeeds; stop early if DAEMON died.
wait_for() {
    local what=$1 daemon=$2 deadline=$(( $(date +%s) + START_TIMEOUT )); shift 2
    until "$@" >/dev/null 2>&1; do
        if [ -n "$daemon" ] && ! pid_of "$daemon" >/dev/null; then
            tail -n 30 "$LOGS/$daemon.log" >&2 || true
            die "$daemon exited while waiting for $what (log: $LOGS/$daemon.log)"
        fi
        [ "$(date +%s)" -lt "$deadline" ] || die "$what not reached within ${START_TIMEOUT} s (logs: $LOGS)"
        sleep 0.5
    done
}

render() {  # render TEMPLATE OUTPUT: fill the @NAME@ placeholders
    sed -e "s|@DIR@|$DIR|g" -e "s|@PKI@|$PKI|g" -e "s|@NODE_IP@|$NODE_IP|g" \
        -e "s|@NODE_NAME@|$NODE_NAME|g" -e "s|@POD_CIDR@|$POD_CIDR|g" -e "s|@POD_BRIDGE@|$POD_BRIDGE|g" \
        -e "s|@DNS_IP@|$DNS_IP|g" -e "s|@PAUSE_IMAGE@|$PAUSE_IMAGE|g" \
        -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|g" -e "s|@KUBELET_HEALTHZ_PORT@|10248|g" \
        -e "s|@PROXY_HEALTHZ_PORT@|10256|g" -e "s|@PROXY_METRICS_PORT@|10249|g" "$1" > "$2"
}

api_ready() {
    curl -sf --max-time 3 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
        "$SERVER/readyz" >/dev/null
}

# containerd answers `ctr version` before its CRI plugin has initialised, and a kubelet started
# in that gap exits ("server is not initialized yet"). So ask the CRI itself: an empty gRPC
# RuntimeService/Version request over HTTP/2, ready when the trailer says grpc-status 0.
cri_ready() {
    local headers
    headers=$(printf '\0\0\0\0\0' | curl -s --max-time 3 --http2-prior-knowledge --unix-socket "$SOCK" \
        -X POST -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @- -D - -o /dev/null \
        http://localhost/runtime.v1.RuntimeService/Version) || return 1
    grep -qi '^grpc-status: 0' <<<"$headers"
}

node_ready() {
    [ "$(kubectl get node "$NODE_NAME" \
        -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = "True" ]
}

# The node's taints that keep ordinary pods off it (key:effect, one per line).
node_taints() {
    kubectl get node "$NODE_NAME" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect}{"\n"}{end}' 2>/dev/null \
        | grep -E ':(NoSchedule|NoExecute)$' || true
}

node_conditions() {
    kubectl get node "$NODE_NAME" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}' 2>/dev/null
}

node_schedulable() { node_ready && [ -z "$(node_taints)" ]; }

# After a large image import: a pressure condition or a NotReady node taints the only node and
# every pod the suite creates would stay Pending, so say so here, with the reason.
check_schedulable() {
    local deadline=$(( $(date +%s) + 60 ))
    until node_schedulable; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            log "warning: node $NODE_NAME takes no pods: taints [$(node_taints | tr '\n' ' ')]" \
                "conditions [$(node_conditions)] (kubelet log: $LOGS/kubelet.log)"
            grep -iE 'evict|pressure|not ?ready|taint' "$LOGS/kubelet.log" | grep -v 'FLAG:' | tail -n 10 >&2 || true
            return 1
        fi
        sleep 1
    done
}

setup_network() {
    if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
        # A VM may have no dummy netdev: a bridge without ports carries the node address.
        ip link add "$NODE_BRIDGE" type bridge
    fi
    # (grep on a captured string: with pipefail, `ip ... | grep -q` fails when grep quits early.)
    grep -q "inet $NODE_IP/" <<<"$(ip addr show dev "$NODE_BRIDGE")" || ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
    ip link set "$NODE_BRIDGE" up
    sysctl -qw net.ipv4.ip_forward=1
    # Service traffic between pods on one bridge must pass the host's iptables.
    modprobe br_netfilter 2>/dev/null || true
    sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || log "warning: bridge-nf-call-iptables not set"
    # A Docker engine on the host (images/build.sh starts one) sets the FORWARD policy to DROP;
    # with bridge-nf-call-iptables that also drops pod-to-pod traffic on the bridge.
    iptables -C FORWARD -s "$POD_CIDR" -j ACCEPT 2>/dev/null || iptables -A FORWARD -s "$POD_CIDR" -j ACCEPT
    iptables -C FORWARD -d "$POD_CIDR" -j ACCEPT 2>/dev/null || iptables -A FORWARD -d "$POD_CIDR" -j ACCEPT
}

make_pki() {
    [ -f "$PKI/kubelet.kubeconfig" ] && return
    log "making certificates in $PKI"
    python3 "$REPO/tests/kube/pki.py" "$PKI" --ip "$NODE_IP" --ip "$API_SERVICE_IP" --ip 127.0.0.1 \
        --node-name "$NODE_NAME" --server "$SERVER"
}

make_images() {
    local images=$DIR/images coredns_version
    mkdir -p "$images"
    [ -f "$images/pause.tar" ] || python3 "$HERE/mkimage.py" "$images/pause.tar" "$PAUSE_IMAGE" \
        --file "$BIN/pause=/pause" --entrypoint /pause
    [ -f "$images/coredns.tar" ] || python3 "$HERE/mkimage.py" "$images/coredns.tar" "$COREDNS_IMAGE" \
        --file "$BIN/coredns=/coredns" --entrypoint /coredns
    if [ ! -f "$images/busybox.tar" ]; then
        [ -x /bin/busybox ] || die "/bin/busybox missing: apt-get install busybox-static"
        python3 "$HERE/mkimage.py" "$images/busybox.tar" "$BUSYBOX_IMAGE" --busybox /bin/busybox \
            --entrypoint /bin/sh
    fi
}

import_images() {  # import_images FILE...: load archives unless every tag in them is present
    local file
    for file in "$@"; do
        [ -f "$file" ] || die "no image archive $file"
        log "importing $(basename "$file")"
        ctr_k8s images import "$file" >/dev/null
    done
}

import_cluster_images() {
    local have name
    have=$(ctr_k8s images ls -q)
    for name in pause coredns busybox; do
        local ref_var=${name^^}_IMAGE
        grep -qx "${!ref_var}" <<< "$have" || import_images "$DIR/images/$name.tar"
    done
}

cmd_up() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (kubelet, containerd and the network need it)"
    local start=$SECONDS
    bash "$HERE/build.sh" >&2
    mkdir -p "$LOGS" "$PIDS" "$DIR/containerd" "$DIR/cni/net.d" "$DIR/config" "$DIR/kubelet"
    setup_network
    make_pki
    make_images
    cp "$PKI/admin.kubeconfig" "$KUBECONFIG_PATH"
    printf 'nameserver %s\n' "$NODE_IP" > "$DIR/resolv.conf"
    local template
    for template in containerd.toml cni.conflist kubelet.yaml kube-proxy.yaml coredns.yaml; do
        render "$HERE/config/$template" "$DIR/config/$template"
    done
    cp "$DIR/config/cni.conflist" "$DIR/cni/net.d/10-qdmesh.conflist"

    if ! pid_of etcd >/dev/null; then
        # Every `up` is a new cluster: fresh etcd data and IP leases, cached images and certs.
        rm -rf "$DIR/etcd" "$DIR/cni/ipam"
    fi
    start_daemon etcd "$BIN/etcd" --name "$NODE_NAME" --data-dir "$DIR/etcd" \
        --listen-client-urls "http://$NODE_IP:2379" --advertise-client-urls "http://$NODE_IP:2379" \
        --listen-peer-urls "http://$NODE_IP:2380" --initial-advertise-peer-urls "http://$NODE_IP:2380" \
        --initial-cluster "$NODE_NAME=http://$NODE_IP:2380" --unsafe-no-fsync --log-level warn
    start_daemon kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://$NODE_IP:2379" \
        --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
        --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
        --client-ca-file "$PKI/ca.crt" \
        --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
        --kubelet-client-key "$PKI/apiserver-kubelet-client.key" --kubelet-certificate-authority "$PKI/ca.crt" \
        --kubelet-preferred-address-types InternalIP \
        --service-account-key-file "$PKI/service-account.pub" \
        --service-account-signing-key-file "$PKI/service-account.key" \
        --service-account-issuer https://kubernetes.default.svc \
        --service-cluster-ip-range "$SERVICE_CIDR" --authorization-mode Node,RBAC \
        --enable-admission-plugins NodeRestriction --allow-privileged=true \
        --cert-dir "$DIR/apiserver-certs" --v 1
    wait_for "kube-apiserver /readyz" kube-apiserver api_ready
    log "kube-apiserver ready at $SERVER ($((SECONDS - start)) s)"
    start_daemon kube-controller-manager "$BIN/kube-controller-manager" \
        --kubeconfig "$PKI/controller-manager.kubeconfig" \
        --authentication-kubeconfig "$PKI/controller-manager.kubeconfig" \
        --authorization-kubeconfig "$PKI/controller-manager.kubeconfig" \
        --bind-address 127.0.0.1 --secure-port 10257 --leader-elect=false \
        --use-service-account-credentials=true --service-account-private-key-file "$PKI/service-account.key" \
        --root-ca-file "$PKI/ca.crt" --cluster-signing-cert-file "$PKI/ca.crt" \
        --cluster-signing-key-file "$PKI/ca.key" --service-cluster-ip-range "$SERVICE_CIDR" \
        --cluster-cidr "$POD_CIDR" --v 1
    start_daemon kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$PKI/scheduler.kubeconfig" \
        --authentication-kubeconfig "$PKI/scheduler.kubeconfig" \
        --authorization-kubeconfig "$PKI/scheduler.kubeconfig" \
        --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false --v 1
    start_daemon containerd containerd --config "$DIR/config/containerd.toml"
    wait_for "containerd socket" containerd ctr --address "$SOCK" version
    import_cluster_images
    wait_for "containerd CRI service" containerd cri_ready
    start_daemon kubelet "$BIN/kubelet" --config "$DIR/config/kubelet.yaml" \
        --kubeconfig "$PKI/kubelet.kubeconfig" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
        --root-dir "$DIR/kubelet" --cert-dir "$DIR/kubelet/pki" --v 1
    start_daemon kube-proxy "$BIN/kube-proxy" --config "$DIR/config/kube-proxy.yaml" --v 1
    wait_for "node $NODE_NAME Ready" kubelet node_ready
    log "node $NODE_NAME Ready ($((SECONDS - start)) s)"
    kubectl apply -f "$DIR/config/coredns.yaml" >/dev/null
    wait_for "CoreDNS available" kubelet \
        kubectl -n kube-system wait --for=condition=Available deployment/coredns --timeout=5s
    log "cluster up in $((SECONDS - start)) s; export KUBECONFIG=$KUBECONFIG_PATH"
    echo "$KUBECONFIG_PATH"
}

remove_containers() {
    pid_of containerd >/dev/null || return 0
    local id
    for id in $(ctr_k8s tasks ls -q 2>/dev/null); do
        ctr_k8s tasks kill --signal SIGKILL "$id" >/dev/null 2>&1 || true
    done
    sleep 0.5
    for id in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks delete --force "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_k8s containers ls -q 2>/dev/null); do ctr_k8s containers rm "$id" >/dev/null 2>&1 || true; done
}

# Let the kubelet tear pods down (CNI DEL, network namespace removed) before it stops: without
# the controllers nothing recreates them.
drain_pods() {
    pid_of kubelet >/dev/null && pid_of kube-apiserver >/dev/null || return 0
    kubectl delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    local deadline=$(( $(date +%s) + 30 ))
    while [ -n "$(ctr_k8s tasks ls -q 2>/dev/null)" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.5; done
    sleep 2  # sandboxes stop (and release their network) just after their containers
}

# Network namespaces of pods whose teardown did not happen (a crashed kubelet): ours are the
# ones holding an address of the pod range.
remove_stale_netns() {
    local ns prefix=${POD_CIDR%.*}.
    for ns in $(ls /var/run/netns 2>/dev/null | grep '^cni-' || true); do
        if grep -qF "inet $prefix" <<<"$(ip netns exec "$ns" ip -o -4 addr show 2>/dev/null)"; then
            ip netns delete "$ns" 2>/dev/null || true
        fi
    done
}

cmd_down() {
    local purge=${1:-} i
    for name in kube-controller-manager kube-scheduler; do stop_daemon "$name"; done
    drain_pods
    for name in kube-proxy kubelet; do stop_daemon "$name"; done
    remove_containers
    for (( i=${#DAEMONS[@]}-1; i>=0; i-- )); do stop_daemon "${DAEMONS[$i]}"; done
    remove_stale_netns
    # kube-proxy's Service rules would outlive it.
    [ -x "$BIN/kube-proxy" ] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
    # Mounts the runtime left (pod volumes, sandbox shm), deepest first.
    awk -v d="$DIR/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r mnt; do
        umount -l "$mnt" 2>/dev/null || true
    done
    if [ "$purge" = "--purge" ]; then
        ip link del "$POD_BRIDGE" 2>/dev/null || true
        ip link del "$NODE_BRIDGE" 2>/dev/null || true
        rm -rf "$DIR"
        log "purged $DIR"
    fi
}

cmd_status() {
    local name pid ok=0
    for name in "${DAEMONS[@]}"; do
        if pid=$(pid_of "$name"); then echo "$name: running (pid $pid)"; else echo "$name: stopped"; ok=1; fi
    done
    if [ "$ok" -eq 0 ] && node_schedulable; then
        echo "node $NODE_NAME: Ready, no taints; KUBECONFIG=$KUBECONFIG_PATH"
        return 0
    fi
    [ "$ok" -eq 0 ] && echo "node $NODE_NAME: conditions [$(node_conditions)] taints [$(node_taints | tr '\n' ' ')]"
    echo "cluster: not ready"
    return 1
}

case "${1:-}" in
    up) cmd_up ;;
    down) shift; cmd_down "${1:-}" ;;
    status) cmd_status ;;
    import) shift; [ "$#" -gt 0 ] || die "import needs image archive files"; import_images "$@"; check_schedulable ;;
    kubeconfig) echo "$KUBECONFIG_PATH" ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
