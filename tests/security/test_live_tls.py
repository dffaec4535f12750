"""Live TLS (qdmesh): a management UPDATE of an sslProfile re-reads its files, new connections
use the new material while existing ones keep theirs; bad material is refused whole, naming the
attribute; oldestValidOrdinal closes clients' connections made with older material. qdrouterd
1.19 refuses the UPDATE (docs/security.md, "Live TLS")."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import ssl
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from qdrouter.tools.errors import ManagementError
from qdrouter.tools.management_client import ManagementClient
from tests.policy.harness import PolicyRouter, login
from tests.router.amqpclient import Net, msg
from tests.router.routerkind import router_kind
from tests.router.routerproc import Router, run_qdrouter
from tests.security.certs import Cert, CertAuthority
from tests.security.test_tls import ADMIN, client_tls, profile, tls_url

PROFILE = "org.apache.qpid.dispatch.sslProfile"
PASSWORD = "rotate-me"
QDMESH_ONLY = pytest.mark.qdmesh_only("sslProfile UPDATE is a qdmesh extension: qdrouterd 1.19 refuses it")


class Pki:
    def __init__(self, directory: Path) -> None:
        self.ca = CertAuthority(directory / "ca")
        self.first = self.ca.issue("first", "/CN=localhost", ("localhost", "127.0.0.1"))
        self.second = self.ca.issue("second", "/CN=localhost", ("localhost", "127.0.0.1"))
        self.locked = self.ca.issue("locked", "/CN=localhost", ("localhost",), password=PASSWORD)
        self.garbage = directory / "garbage.pem"
        self.garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all!\n"
                                "-----END CERTIFICATE-----\n")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pki]:
    yield Pki(tmp_path_factory.mktemp("live-pki"))


def fingerprint(cert: Path) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(cert.read_text())).hexdigest()


def presented(router: Router, ca: Path) -> str:
    """SHA-256 of the certificate the router's TLS listener presents to a new client now."""
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", router.ports["default"]), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return hashlib.sha256(der).hexdigest()


def management(router: Router) -> ManagementClient:
    return ManagementClient(router.urls["admin"], timeout=10)


def read_profile(router: Router) -> Dict[str, Any]:
    with management(router) as client:
        return client.read(PROFILE, name="tls")


def update_profile(router: Router, changes: Dict[str, Any]) -> Dict[str, Any]:
    with management(router) as client:
        return client.update(PROFILE, changes, name="tls")


def tls_connections(router: Router) -> list:
    with management(router) as client:
        return [dict(row) for row in client.query("connection") if row["ssl"]]


def start(policy_router: PolicyRouter, cert: Cert) -> Router:
    return policy_router(profile("tls", cert, None), listener={"sslProfile": "tls"}, extra_listeners=ADMIN)


@QDMESH_ONLY
def test_update_with_a_new_certificate(policy_router: PolicyRouter, net: Net, pki: Pki) -> None:
    router = start(policy_router, pki.first)
    before = read_profile(router)
    assert before["ordinal"] == 0 and before["oldestValidOrdinal"] == 0
    assert before["certificateSha256"] == fingerprint(pki.first.cert)
    assert before["certificateNotAfter"].endswith("Z")
    assert presented(router, pki.ca.cert) == fingerprint(pki.first.cert)
    existing = login(net, tls_url(router), ssl_domain=client_tls(pki))

    update_profile(router, {"certFile": str(pki.second.cert), "privateKeyFile": str(pki.second.key)})

    after = read_profile(router)
    assert after["ordinal"] == 1, "an UPDATE without an ordinal adds one to it"
    assert after["certificateSha256"] == fingerprint(pki.second.cert)
    assert presented(router, pki.ca.cert) == fingerprint(pki.second.cert)
    # The connection made before the update is still up, and still carries messages.
    assert existing.alive
    receiver = existing.receiver("live.tls")
    sender = existing.sender("live.tls")
    sender.send(msg("still here"))
    net.wait(lambda: receiver.bodies() == ["still here"], what="a message over the older connection")
    newer = login(net, tls_url(router), ssl_domain=client_tls(pki))
    assert newer.alive
    assert sorted(row["sslProfileOrdinal"] for row in tls_connections(router)) == [0, 1]


def _install(cert: Cert, directory: Path) -> None:
    shutil.copy(cert.cert, directory / "tls.crt")
    shutil.copy(cert.key, directory / "tls.key")


@QDMESH_ONLY
@pytest.mark.parametrize("how", ["overwritten", "symlink-swapped"])
def test_same_paths_new_contents(policy_router: PolicyRouter, net: Net, pki: Pki, tmp_path: Path,
                                 how: str) -> None:
    """The files are re-read by path: overwritten in place, or a Kubernetes Secret volume whose
    `..data` symlink is swapped to a new directory."""
    secret = tmp_path / "secret"
    secret.mkdir()
    if how == "overwritten":
        _install(pki.first, secret)
    else:
        (secret / "..2026_first").mkdir()
        _install(pki.first, secret / "..2026_first")
        (secret / "..data").symlink_to("..2026_first")
        for name in ("tls.crt", "tls.key"):
            (secret / name).symlink_to(f"..data/{name}")
    router = start(policy_router, Cert(secret / "tls.crt", secret / "tls.key"))
    existing = login(net, tls_url(router), ssl_domain=client_tls(pki))
    assert presented(router, pki.ca.cert) == fingerprint(pki.first.cert)
    if how == "overwritten":
        _install(pki.second, secret)
    else:
        (secret / "..2026_second").mkdir()
        _install(pki.second, secret / "..2026_second")
        (secret / "..data_tmp").symlink_to("..2026_second")
        os.replace(secret / "..data_tmp", secret / "..data")  # as the kubelet swaps it
        shutil.rmtree(secret / "..2026_first")
    # Until the UPDATE, the router keeps what it loaded.
    assert presented(router, pki.ca.cert) == fingerprint(pki.first.cert)
    update_profile(router, {"ordinal": 7})
    assert presented(router, pki.ca.cert) == fingerprint(pki.second.cert)
    state = read_profile(router)
    assert (state["ordinal"], state["certificateSha256"]) == (7, fingerprint(pki.second.cert))
    assert existing.alive


BAD_UPDATES = {
    "missing file": ({"certFile": "/nonexistent/tls.crt"}, "certFile", "/nonexistent/tls.crt"),
    "bad PEM": ({"certFile": "GARBAGE"}, "certFile", "garbage.pem"),
    "mismatched key": ({"privateKeyFile": "SECOND_KEY"}, "privateKeyFile", "second-key.pem"),
    "wrong password": ({"certFile": "LOCKED", "privateKeyFile": "LOCKED_KEY", "password": "wrong"},
                       "password", "locked-key"),
    "lower ordinal": ({"ordinal": 2}, "ordinal", "lower than the current ordinal 3"),
    "unreadable CA": ({"caCertFile": "GARBAGE"}, "caCertFile", "garbage.pem"),
    "unknown ciphers": ({"ciphers": "NO-SUCH-CIPHER"}, "ciphers", "NO-SUCH-CIPHER"),
    "unknown protocol": ({"protocols": "TLSv9"}, "protocols", "TLSv9"),
}


@QDMESH_ONLY
@pytest.mark.parametrize("case", sorted(BAD_UPDATES))
def test_bad_updates_are_refused_naming_the_attribute(policy_router: PolicyRouter, net: Net, pki: Pki,
                                                      case: str) -> None:
    router = policy_router(profile("tls", pki.first, None, ordinal="3"), listener={"sslProfile": "tls"},
                           extra_listeners=ADMIN)
    paths = {"GARBAGE": str(pki.garbage), "SECOND_KEY": str(pki.second.key), "LOCKED": str(pki.locked.cert),
             "LOCKED_KEY": str(pki.locked.key)}
    changes, attribute, names = BAD_UPDATES[case]
    changes = {key: paths.get(str(value), value) for key, value in changes.items()}
    with pytest.raises(ManagementError) as refused:
        update_profile(router, changes)
    assert 400 <= refused.value.status_code < 500
    assert f"attribute '{attribute}'" in refused.value.description and names in refused.value.description
    # The profile as it was: its ordinal, its material, what new clients are shown.
    state = read_profile(router)
    assert (state["ordinal"], state["certificateSha256"]) == (3, fingerprint(pki.first.cert))
    assert state["certFile"] == str(pki.first.cert) and state["privateKeyFile"] == str(pki.first.key)
    assert presented(router, pki.ca.cert) == fingerprint(pki.first.cert)
    assert login(net, tls_url(router), ssl_domain=client_tls(pki)).alive
    # A good update still works afterwards.
    locked = {"certFile": str(pki.locked.cert), "privateKeyFile": str(pki.locked.key), "password": PASSWORD}
    assert update_profile(router, locked)["ordinal"] == 4
    assert presented(router, pki.ca.cert) == fingerprint(pki.locked.cert)


@QDMESH_ONLY
def test_oldest_valid_ordinal_closes_older_client_connections(policy_router: PolicyRouter, net: Net,
                                                              pki: Pki) -> None:
    router = start(policy_router, pki.first)
    older = login(net, tls_url(router), ssl_domain=client_tls(pki))
    plain = login(net, router.url)  # not TLS: not the profile's business
    update_profile(router, {"certFile": str(pki.second.cert), "privateKeyFile": str(pki.second.key),
                            "ordinal": 1, "oldestValidOrdinal": 1})
    net.wait(lambda: older.remote_closed, what="the older TLS connection to be closed")
    assert older.error is not None and older.error.name == "amqp:connection:forced"
    assert "sslProfile 'tls'" in older.error.description and "ordinal 0" in older.error.description
    assert plain.alive
    newer = login(net, tls_url(router), ssl_domain=client_tls(pki))
    assert newer.alive
    assert [row["sslProfileOrdinal"] for row in tls_connections(router)] == [1]
    # An oldestValidOrdinal above the ordinal would leave no connection valid.
    with pytest.raises(ManagementError) as refused:
        update_profile(router, {"ordinal": 2, "oldestValidOrdinal": 3})
    assert refused.value.status_code == 400 and "attribute 'oldestValidOrdinal'" in refused.value.description


def test_ssl_profile_update_qdmesh_applies_it_qdrouterd_refuses_it(policy_router: PolicyRouter,
                                                                   pki: Pki) -> None:
    """The one behaviour both routers are asked for: qdrouterd 1.19 refuses an UPDATE of an
    sslProfile (and keeps its material); qdmesh applies it (docs/security.md, "Live TLS")."""
    router = start(policy_router, pki.first)
    changes = {"certFile": str(pki.second.cert), "privateKeyFile": str(pki.second.key)}
    if router_kind() == "c":
        with pytest.raises(ManagementError) as refused:
            update_profile(router, changes)
        assert refused.value.status_code == 501 and "Operation 'UPDATE' not implemented" in str(refused.value)
        assert presented(router, pki.ca.cert) == fingerprint(pki.first.cert)
    else:
        update_profile(router, changes)
        assert presented(router, pki.ca.cert) == fingerprint(pki.second.cert)


@QDMESH_ONLY
def test_qdmanage_updates_and_reads_an_ssl_profile(policy_router: PolicyRouter, pki: Pki) -> None:
    router = start(policy_router, pki.first)
    address = router.urls["admin"][len("amqp://"):]
    command = ["qdmanage", "-b", address, "update", "--type", "sslProfile", "--name", "tls",
               f"certFile={pki.second.cert}", f"privateKeyFile={pki.second.key}", "ordinal=5"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    read = subprocess.run(["qdmanage", "-b", address, "read", "--type", "sslProfile", "--name", "tls"],
                          capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert '"ordinal": 5' in read.stdout and fingerprint(pki.second.cert) in read.stdout


@QDMESH_ONLY
def test_a_config_with_oldest_valid_ordinal_above_ordinal_is_refused(pki: Pki, tmp_path: Path) -> None:
    config = tmp_path / "r.conf"
    config.write_text("router {\n    id: R\n}\n"
                      + profile("tls", pki.first, None, ordinal="1", oldestValidOrdinal="2"))
    result = run_qdrouter(["-c", str(config)])
    assert result.returncode != 0
    assert "attribute 'oldestValidOrdinal': 2 is above the ordinal 1" in result.stderr
    assert "Traceback" not in result.stderr
