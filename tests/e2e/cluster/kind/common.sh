# Sourced by the kind/ scripts: cache location, logging, content keys, idle-priority builds.
# shellcheck shell=bash
CACHE=${QDMESH_KIND_CACHE:-/var/cache/qdmesh/kind}
K8S_VERSION=${QDMESH_K8S_VERSION:-v1.36.3}
K8S_BIN=${QDMESH_K8S_CACHE:-/var/cache/qdmesh/k8s}/$K8S_VERSION/bin
KIND_VERSION=${QDMESH_KIND_VERSION:-v0.33.0}
mkdir -p "$CACHE"

log() { echo "[kind-build $(date -u +%H:%M:%S)] $(basename "$0"): $*" >&2; }
# Builds run at idle priority: the machines are small and shared with test runs.
idle() { nice -n 19 ionice -c3 "$@"; }
# The project's way to get a Docker daemon (Debian's dockerd, started if none answers).
ensure_docker() { bash "$(dirname "${BASH_SOURCE[0]}")/../../../../images/start-dockerd.sh" >&2; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
# A short hash of the given files and of stdin (versions, options).
content_key() { { cat "$@"; cat; } | sha256sum | cut -c1-12; }
apt_mirror() {
    local uri
    uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1)
    [ -n "$uri" ] || uri=$(awk '$1=="deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [ -n "$uri" ] || { log "no Debian mirror found in apt's sources"; exit 1; }
    echo "$uri"
}
# The flags that stand for `docker run --privileged` on this machine, one a line: --privileged
# itself when root's capability bounding set is full, else all capabilities but the missing
# ones, no seccomp/AppArmor/masked paths, every device, and QDMESH_UNPRIVILEGED=1 for the node
# image's entrypoint (which remounts the cgroup hierarchies read-write).
privileged_flags() {
    local bnd last cap names missing=()
    bnd=$((16#$(awk '/^CapBnd/ {print $2}' /proc/self/status)))
    last=$(cat /proc/sys/kernel/cap_last_cap)
    names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
        NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT
        SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
        AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ
        PERFMON BPF CHECKPOINT_RESTORE)
    for ((cap = 0; cap <= last && cap < ${#names[@]}; cap++)); do
        (( (bnd >> cap) & 1 )) || missing+=("--cap-drop=${names[cap]}")
    done
    if [ ${#missing[@]} -eq 0 ]; then echo --privileged; return; fi
    printf '%s\n' --cap-add=ALL "${missing[@]}" --security-opt=seccomp=unconfined \
        --security-opt=apparmor=unconfined --security-opt=systempaths=unconfined \
        "--device-cgroup-rule=a *:* rwm" --env=QDMESH_UNPRIVILEGED=1
    [ -e /dev/kmsg ] && echo --device=/dev/kmsg
    return 0
}
