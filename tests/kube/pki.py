"""Certificates for a private Kubernetes control plane, made with the openssl command line.

Used by the ``kube_apiserver`` pytest fixture and by ``tests/e2e/cluster/local-cluster.sh``
(``python3 tests/kube/pki.py DIR --ip 10.200.0.1``): one CA, the API server's serving
certificate, client certificates for the admin and each component, and the service-account
signing key. Nothing here is meant for anything but a throwaway test cluster.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import List, Sequence

CLUSTER_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)

# (file stem, common name, organisation): the identities RBAC and the Node authorizer expect.
CLIENT_IDENTITIES = (
    ("admin", "kubernetes-admin", "system:masters"),
    ("controller-manager", "system:kube-controller-manager", ""),
    ("scheduler", "system:kube-scheduler", ""),
    ("kube-proxy", "system:kube-proxy", "system:node-proxier"),
    ("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
)


def _openssl(args: Sequence[str], cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _key(directory: Path, stem: str) -> None:
    _openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-out", f"{stem}.key"], directory)


def _signed_cert(directory: Path, stem: str, subject: str, extensions: str) -> None:
    _key(directory, stem)
    ext_file = directory / f"{stem}.ext"
    ext_file.write_text(extensions)
    _openssl(["req", "-new", "-key", f"{stem}.key", "-subj", subject, "-out", f"{stem}.csr"], directory)
    _openssl(["x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
              "-CAcreateserial", "-days", "365", "-sha256", "-extfile", ext_file.name,
              "-out", f"{stem}.crt"], directory)
    (directory / f"{stem}.csr").unlink()
    ext_file.unlink()


def _subject(common_name: str, organisation: str) -> str:
    return f"/CN={common_name}" + (f"/O={organisation}" if organisation else "")


def make_pki(directory: Path, ips: Sequence[str] = ("127.0.0.1",),
             node_name: str | None = None) -> Path:
    """Write every certificate and key of a cluster into ``directory``; returns it.

    ``ips`` are the API server's addresses (serving-certificate SANs; the first service IP of
    the service range belongs there too). ``node_name`` adds a kubelet client certificate.
    """
    directory.mkdir(parents=True, exist_ok=True)
    _key(directory, "ca")
    _openssl(["req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=qdmesh-test-ca", "-days", "365",
              "-sha256", "-out", "ca.crt"], directory)
    sans: List[str] = [f"DNS:{name}" for name in CLUSTER_DNS_NAMES] + [f"IP:{ip}" for ip in ips]
    _signed_cert(directory, "apiserver", "/CN=kube-apiserver",
                 "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                 f"extendedKeyUsage=serverAuth\nsubjectAltName={','.join(sans)}\n")
    identities = list(CLIENT_IDENTITIES)
    if node_name:
        identities.append(("kubelet", f"system:node:{node_name}", "system:nodes"))
        node_sans = [f"DNS:{node_name}"] + [f"IP:{ip}" for ip in ips]
        _signed_cert(directory, "kubelet-serving", f"/CN={node_name}",
                     "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                     f"extendedKeyUsage=serverAuth\nsubjectAltName={','.join(node_sans)}\n")
    for stem, common_name, organisation in identities:
        _signed_cert(directory, stem, _subject(common_name, organisation),
                     "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                     "extendedKeyUsage=clientAuth\n")
    _openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
              "-out", "service-account.key"], directory)
    _openssl(["pkey", "-in", "service-account.key", "-pubout", "-out", "service-account.pub"], directory)
    for key in directory.glob("*.key"):
        key.chmod(0o600)
    return directory


def write_kubeconfig(path: Path, server: str, pki: Path, stem: str, user: str) -> Path:
    """A kubeconfig for ``server`` authenticating with the client certificate ``stem``."""
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: qdmesh\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {pki / 'ca.crt'}\n"
        f"users:\n- name: {user}\n  user:\n"
        f"    client-certificate: {pki / (stem + '.crt')}\n    client-key: {pki / (stem + '.key')}\n"
        f"contexts:\n- name: qdmesh\n  context:\n    cluster: qdmesh\n    user: {user}\n"
        "current-context: qdmesh\n"
    )
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Make a throwaway Kubernetes PKI with openssl.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--ip", action="append", default=[], help="API server address (repeatable)")
    parser.add_argument("--node-name", help="also make a kubelet client certificate for this node")
    parser.add_argument("--server", help="also write <component>.kubeconfig files for this URL")
    args = parser.parse_args(argv)
    pki = make_pki(args.directory.resolve(), args.ip or ["127.0.0.1"], args.node_name)
    if args.server:
        stems = [stem for stem, _, _ in CLIENT_IDENTITIES] + (["kubelet"] if args.node_name else [])
        for stem in stems:
            write_kubeconfig(pki / f"{stem}.kubeconfig", args.server, pki, stem, stem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
