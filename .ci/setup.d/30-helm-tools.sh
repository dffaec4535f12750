#!/usr/bin/env bash
# Tools for the chart, GitOps and image tests: helm and kubeconform (`go install` from the Go
# module proxy into ${QDMESH_TOOLS_CACHE:-/var/cache/qdmesh/tools}/bin, linked into
# /usr/local/bin), kubernetes-validate (PyPI: it bundles the Kubernetes JSON schemas that
# kubeconform cannot download here), lua5.4 (Argo CD health checks), and docker.io +
# debootstrap (images/build.sh). Idempotent; warm: a few seconds. Cold: see docs/images.md.
set -euo pipefail

HELM_VERSION=v3.19.5
# helm's default Kubernetes version (for `helm template` without --kube-version) follows the
# client-go it is built with, as its Makefile sets it: client-go v0.34 -> 1.34.
HELM_K8S_MINOR=34
KUBECONFORM_VERSION=v0.7.0
KUBERNETES_VALIDATE_VERSION=1.37.0
TOOLS=${QDMESH_TOOLS_CACHE:-/var/cache/qdmesh/tools}
PACKAGES=(lua5.4 docker.io debootstrap)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
log() { echo "setup helm-tools: $*" >&2; }

# -- Debian packages --------------------------------------------------------------------------
missing=()
for pkg in "${PACKAGES[@]}"; do
    grep -q "install ok installed" <<<"$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    status=1
    for attempt in 1 2 3; do
        # Another setup step or session may hold the dpkg lock for a while: wait for it.
        if $SUDO apt-get -o DPkg::Lock::Timeout=300 update -q &&
            $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"; then
            status=0
            break
        fi
        log "apt-get failed (attempt $attempt), retrying"
        sleep $((attempt * 5))
    done
    [ "$status" -eq 0 ] || { log "could not install ${missing[*]}"; exit 1; }
fi

# -- helm and kubeconform -----------------------------------------------------------------------
$SUDO mkdir -p "$TOOLS/bin"
export GOBIN=$TOOLS/bin
if ! grep -q "^${HELM_VERSION}" <<<"$("$GOBIN/helm" version --short 2>/dev/null)"; then
    log "go install helm $HELM_VERSION"
    go install -trimpath -ldflags "-s -w \
        -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
        -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 \
        -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR \
        -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 \
        -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR" \
        "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
if ! grep -q "^${KUBECONFORM_VERSION}" <<<"$("$GOBIN/kubeconform" -v 2>/dev/null)"; then
    log "go install kubeconform $KUBECONFORM_VERSION"
    go install -trimpath -ldflags "-s -w -X main.version=$KUBECONFORM_VERSION" \
        "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
fi
for tool in helm kubeconform; do
    [ -e "/usr/local/bin/$tool" ] || $SUDO ln -s "$GOBIN/$tool" "/usr/local/bin/$tool"
done

# -- kubernetes-validate (into the Python that runs the tests: CI's venv) -------------------------
if ! python3 -c "import kubernetes_validate" 2>/dev/null; then
    python3 -m pip install --quiet "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi

log "$("$GOBIN/helm" version --short), kubeconform $("$GOBIN/kubeconform" -v), $(lua5.4 -v)"
