#!/usr/bin/env bash
# kind's node image, made here: the Debian root filesystem (rootfs.sh) with kind's images/base
# files (entrypoint, systemd units, containerd config; read from kind's Go module), Debian's
# containerd, runc and CNI plugins, crictl, Kubernetes (kubelet, kubeadm, kubectl), the default
# CNI manifest (kindnet/), and the images of images.sh imported into the node's containerd
# as kind's `build node-image` does.
#   qdmesh-kind/node:<K8S_VERSION>-<key>   (<key>: this script, kind's files, rootfs, tools, images)
# Prints the image name. Cached: a warm run only checks that the image exists.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
IMAGES_NAMES_ONLY=1 . "$HERE/images.sh"

ensure_docker
ROOTFS=$(bash "$HERE/rootfs.sh")
TOOLS=$(bash "$HERE/tools.sh")
ARCHIVE=$(bash "$HERE/images.sh")
KINDNET_IMAGE=$(cat "$ARCHIVE.kindnet")
KIND_DIR=$(cd "$HERE" && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
KEY=$( { cat "$0" "$HERE/qdmesh-entrypoint"; echo "$ROOTFS $TOOLS $ARCHIVE $KIND_VERSION $PAUSE_IMAGE"; } | sha256sum | cut -c1-12)
IMAGE=qdmesh-kind/node:$K8S_VERSION-$KEY
image_exists "$IMAGE" && { log "cached: $IMAGE"; echo "$IMAGE"; exit 0; }
start=$SECONDS

CTX=$(mktemp -d "$CACHE/ctx.XXXXXX")
BUILDER=qdmesh-kind-build-$KEY
trap 'rm -rf "$CTX"; docker rm -f "$BUILDER" >/dev/null 2>&1 || true' EXIT
cp -r "$KIND_DIR/images/base/files" "$CTX/files"
chmod -R u+w "$CTX/files"
rm -rf "$CTX/files/LICENSES"
mkdir -p "$CTX/bin" "$CTX/files/kind/manifests"
cp "$HERE/qdmesh-entrypoint" "$CTX/files/usr/local/bin/"
cp "$K8S_BIN/kubelet" "$K8S_BIN/kubectl" "$TOOLS/kubeadm" "$TOOLS/crictl" "$CTX/bin/"
sed "s|@KINDNET_IMAGE@|$KINDNET_IMAGE|" "$HERE/kindnet/default-cni.yaml" > "$CTX/files/kind/manifests/default-cni.yaml"
echo "$K8S_VERSION" > "$CTX/files/kind/version"
cat > "$CTX/Dockerfile" <<DOCKERFILE
FROM $ROOTFS
COPY files/ /
COPY bin/ /usr/bin/
# What kind's images/base Dockerfile does, with Debian's containerd (/usr/bin), runc and CNI
# plugins (/usr/lib/cni). The host cannot lower oom_score_adj, so the containerd unit does
# not ask for it.
RUN set -e; chmod 755 /kind /kind/bin /kind/bin/* /usr/local/bin/* /usr/bin/kube* /usr/bin/crictl \\
    && chmod 644 /kind/version /kind/manifests/* \\
    && ln -sf /usr/bin/containerd /usr/local/bin/containerd \\
    && rm -rf /opt/cni/bin && mkdir -p /opt/cni && ln -s /usr/lib/cni /opt/cni/bin \\
    && sed -i '/^OOMScoreAdjust/d' /etc/systemd/system/containerd.service \\
    && sed -i 's|sandbox_image = .*|sandbox_image = "$PAUSE_IMAGE"|; s/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml \\
    && sed -i '/proxy_plugins/,/address = /d' /etc/containerd/config.toml \\
    && ctr oci spec | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \\
         | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json \\
    && find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete \\
    && rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \\
         /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \\
         /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/* \\
    && echo "ReadKMsg=no" >> /etc/systemd/journald.conf \\
    && systemctl enable kubelet.service containerd.service undo-mount-hacks.service \\
    && systemctl mask systemd-binfmt.service \\
    && mkdir -p /etc/kubernetes/manifests
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/usr/local/bin/qdmesh-entrypoint", "/sbin/init"]
DOCKERFILE
log "building the node's base image"
idle docker build -q -t "$IMAGE-base" "$CTX" >/dev/null 2>"$CTX.log" || { cat "$CTX.log" >&2; exit 1; }; rm -f "$CTX.log"

# Import the images into the node's containerd (content only, pinned), as kind does.
log "importing $(basename "$ARCHIVE") into the node's containerd"
docker rm -f "$BUILDER" >/dev/null 2>&1 || true
mapfile -t privileged < <(privileged_flags)
docker run -d --init --name "$BUILDER" "${privileged[@]}" --entrypoint sleep "$IMAGE-base" infinity >/dev/null
docker exec "$BUILDER" sh -c 'containerd >/tmp/containerd.log 2>&1 &'
for _ in $(seq 1 60); do docker exec "$BUILDER" ctr version >/dev/null 2>&1 && break; sleep 0.5; done
idle docker exec -i "$BUILDER" ctr --namespace=k8s.io images import --all-platforms --no-unpack --digests - < "$ARCHIVE" >/dev/null
docker exec "$BUILDER" sh -c 'for i in $(ctr -n k8s.io images list -q); do ctr -n k8s.io images label "$i" io.cri-containerd.pinned=pinned >/dev/null; done; ctr -n k8s.io images list -q' >&2
docker exec "$BUILDER" sh -c 'pkill containerd; while pgrep -x containerd >/dev/null; do sleep 0.2; done; rm -f /tmp/containerd.log'
idle docker commit --change 'ENTRYPOINT [ "/usr/local/bin/qdmesh-entrypoint", "/sbin/init" ]' "$BUILDER" "$IMAGE" >/dev/null
docker rm -f "$BUILDER" >/dev/null
docker rmi "$IMAGE-base" >/dev/null
# Older node images go (a running cluster keeps the one it uses: Docker refuses to remove it).
docker images --format '{{.Repository}}:{{.Tag}}' qdmesh-kind/node | grep -vx "$IMAGE" \
    | xargs -r docker rmi >/dev/null 2>&1 || true
log "built $IMAGE in $((SECONDS - start)) s"
echo "$IMAGE"
