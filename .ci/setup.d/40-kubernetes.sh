#!/usr/bin/env bash
# Kubernetes for the tests: Debian's container runtime pieces for the local single-node cluster
# (tests/e2e/cluster/local-cluster.sh), and the control-plane and node binaries built from the
# Go module proxy into ${QDMESH_K8S_CACHE:-/var/cache/qdmesh/k8s} (cold: see docs/e2e.md;
# warm: seconds). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack iproute2 procps kmod curl busybox-static openssl)

missing=()
for pkg in "${PACKAGES[@]}"; do
    grep -q "install ok installed" <<<"$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d 101: installing containerd must not start the system-wide daemon; the local
    # cluster runs its own with its own configuration and state directories.
    policy=/usr/sbin/policy-rc.d
    made_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
        $SUDO chmod 755 "$policy"
        made_policy=yes
    fi
    status=1
    for attempt in 1 2 3; do
        if $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
            status=0
            break
        fi
        echo "setup kubernetes: apt-get failed (attempt $attempt), retrying" >&2
        sleep $((attempt * 5))
    done
    [ -z "$made_policy" ] || $SUDO rm -f "$policy"
    [ "$status" -eq 0 ] || { echo "setup kubernetes: could not install ${missing[*]}" >&2; exit 1; }
fi

start=$(date +%s)
bash tests/e2e/cluster/build.sh
echo "setup kubernetes: binaries ready in $(( $(date +%s) - start )) s"
