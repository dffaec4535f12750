#!/usr/bin/env bash
# Kubernetes for the tests: Debian's container runtime pieces for the local single-node cluster
# (tests/e2e/cluster/local-cluster.sh), and the control-plane and node binaries built from the
# Go module proxy into ${QDMESH_K8S_CACHE:-/var/cache/qdmesh/k8s} (cold: see docs/e2e.md;
# warm: seconds). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack iproute2 procps kmod curl busybox-static openssl)

# shellcheck source=../lib/apt.sh
. .ci/lib/apt.sh
# containerd must not start as a system-wide daemon: the local cluster runs its own, with its
# own configuration and state directories.
apt_install_missing_unstarted "${PACKAGES[@]}" || { echo "setup kubernetes: could not install packages" >&2; exit 1; }

start=$(date +%s)
bash tests/e2e/cluster/build.sh
echo "setup kubernetes: binaries ready in $(( $(date +%s) - start )) s"
