"""TLS through sslProfile on listeners and connectors: encrypted clients, password-protected
keys, requireSsl/requireEncryption, mutual TLS with certificate identities (uidFormat) fed to
policy, connector hostname verification, protocol limits, and inter-router mutual TLS."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, Iterator

import pytest
from proton import SSLDomain

from qdrouter.tools.management_client import ManagementClient
from tests.policy.harness import PolicyRouter, login
from tests.prerequisites import require
from tests.router.amqpclient import Net, msg
from tests.router.routerproc import Router, free_port, run_qdrouter
from tests.security.certs import Cert, CertAuthority

PASSWORD = "s3cret-key"


class Pki:
    def __init__(self, directory: Path) -> None:
        self.ca = CertAuthority(directory / "ca")
        self.server = self.ca.issue("server", "/CN=localhost", ("localhost", "127.0.0.1"), password=PASSWORD)
        self.alice = self.ca.issue("alice", "/C=US/O=Acme/OU=Eng/CN=alice")
        self.wrong_host = self.ca.issue("otherhost", "/CN=otherhost", ("otherhost",))
        self.router_a = self.ca.issue("router-a", "/O=Mesh/CN=A", ("localhost",))
        self.router_b = self.ca.issue("router-b", "/O=Mesh/CN=B", ("localhost",))
        self.rogue_ca = CertAuthority(directory / "rogue", "Rogue CA")
        self.rogue = self.rogue_ca.issue("mallory", "/C=US/O=Acme/OU=Eng/CN=mallory")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pki]:
    yield Pki(tmp_path_factory.mktemp("pki"))


def profile(name: str, cert: Cert | None, ca: Path | None, **extra: str) -> str:
    lines = ["sslProfile {", f"    name: {name}"]
    if cert is not None:
        lines += [f"    certFile: {cert.cert}", f"    privateKeyFile: {cert.key}"]
        if cert.password and "passwordFile" not in extra and "password" not in extra:
            lines.append(f"    password: {cert.password}")
    if ca is not None:
        lines.append(f"    caCertFile: {ca}")
    lines += [f"    {key}: {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n}\n"


def client_tls(pki: Pki, cert: Cert | None = None, verify: bool = True) -> SSLDomain:
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    if verify:
        domain.set_trusted_ca_db(str(pki.ca.cert))
        domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    else:
        domain.set_peer_authentication(SSLDomain.ANONYMOUS_PEER)
    if cert is not None:
        domain.set_credentials(str(cert.cert), str(cert.key), cert.password)
    return domain


def tls_url(router: Router, name: str = "default") -> str:
    return f"amqps://localhost:{router.ports[name]}"


def rows(router: Router, entity: str = "connection") -> list:
    with ManagementClient(router.urls["admin"]) as client:
        return [dict(row) for row in client.query(entity)]


ADMIN = {"admin": {"saslMechanisms": "ANONYMOUS"}}


@pytest.mark.parametrize("password_setting", ["literal", "env", "file", "passwordFile"])
def test_tls_listener_with_a_password_protected_key(policy_router: PolicyRouter, net: Net, pki: Pki,
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    password_setting: str) -> None:
    secret_file = tmp_path / "key-password"
    secret_file.write_text(PASSWORD + "\n")
    monkeypatch.setenv("QDMESH_TEST_KEY_PASSWORD", PASSWORD)
    extra: Dict[str, str] = {
        "literal": {"password": f"literal:{PASSWORD}"},
        "env": {"password": "env:QDMESH_TEST_KEY_PASSWORD"},
        "file": {"password": f"file:{secret_file}"},
        "passwordFile": {"passwordFile": str(secret_file)},
    }[password_setting]
    router = policy_router(profile("tls", pki.server, None, **extra),
                           listener={"sslProfile": "tls", "requireSsl": "true"}, extra_listeners=ADMIN)
    client = login(net, tls_url(router), ssl_domain=client_tls(pki))
    assert client.alive
    tls_rows = [row for row in rows(router) if row["ssl"]]
    assert len(tls_rows) == 1 and tls_rows[0]["sslProto"].startswith("TLSv1")
    assert tls_rows[0]["sslCipher"]
    # requireSsl: a client speaking plain AMQP is turned away.
    plain = login(net, router.url, expect_open=False)
    assert not plain.opened


def test_tls_optional_unless_required(policy_router: PolicyRouter, net: Net, pki: Pki) -> None:
    router = policy_router(profile("tls", pki.server, None), listener={"sslProfile": "tls"},
                           extra_listeners={**ADMIN, "encrypted-only": {"sslProfile": "tls",
                                                                         "requireEncryption": "true"}})
    assert login(net, tls_url(router), ssl_domain=client_tls(pki)).alive
    assert login(net, router.url).alive  # requireSsl false: plain AMQP on the same port
    assert login(net, tls_url(router, "encrypted-only"), ssl_domain=client_tls(pki)).alive
    assert not login(net, router.urls["encrypted-only"], expect_open=False).opened
    assert sorted(row["ssl"] for row in rows(router) if row["host"] != "admin") == [False, False, True, True]


def test_mutual_tls_identity_feeds_policy(policy_router: PolicyRouter, net: Net, pki: Pki,
                                          tmp_path: Path) -> None:
    mapping = tmp_path / "names.json"
    mapping.write_text(json.dumps({"US;Acme;Eng": "eng-team"}))
    body = profile("mtls", pki.server, pki.ca.cert, uidFormat="cou", uidNameMappingFile=str(mapping)) + """
policy {
    enableVhostPolicy: true
}
vhost {
    hostname: localhost
    groups: {
        engineers: {
            users: eng-team
            remoteHosts: *
            sources: eng.*
            targets: eng.*
        }
    }
}
vhost {
    hostname: 127.0.0.1
    allowUnknownUser: true
    groups: {
        $default: {
            remoteHosts: *
            sources: *
            targets: *
            allowDynamicSource: true
        }
    }
}
"""
    router = policy_router(body, listener={"sslProfile": "mtls", "requireSsl": "true",
                                           "saslMechanisms": "EXTERNAL", "authenticatePeer": "true"},
                           extra_listeners=ADMIN)
    alice = login(net, tls_url(router), ssl_domain=client_tls(pki, pki.alice), mechanism="EXTERNAL")
    assert not alice.sender("eng.builds").remote_closed
    refused = alice.sender("finance.books")
    net.wait(lambda: refused.remote_closed, what="policy refusal for the certificate's user")
    assert "group 'engineers'" in str(refused.remote_condition.description)
    users = [row["user"] for row in rows(router) if row["ssl"]]
    assert users == ["eng-team"]
    # No client certificate, or one from another CA: no connection.
    assert not login(net, tls_url(router), ssl_domain=client_tls(pki), mechanism="EXTERNAL",
                     expect_open=False).alive
    assert not login(net, tls_url(router), ssl_domain=client_tls(pki, pki.rogue), mechanism="EXTERNAL",
                     expect_open=False).alive


def test_certificate_fields_and_fingerprint_as_user(policy_router: PolicyRouter, net: Net, pki: Pki) -> None:
    router = policy_router(profile("mtls", pki.server, pki.ca.cert, uidFormat="n2"),
                           listener={"sslProfile": "mtls", "requireSsl": "true",
                                     "saslMechanisms": "EXTERNAL"},
                           extra_listeners=ADMIN)
    login(net, tls_url(router), ssl_domain=client_tls(pki, pki.alice), mechanism="EXTERNAL")
    fingerprint = subprocess.run(["openssl", "x509", "-in", str(pki.alice.cert), "-noout", "-fingerprint",
                                  "-sha256"], capture_output=True, text=True, check=True).stdout
    expected = "alice;" + fingerprint.split("=", 1)[1].strip().replace(":", "").lower()
    assert [row["user"] for row in rows(router) if row["ssl"]] == [expected]


@pytest.mark.parametrize("extra, message", [
    ({"password": "wrong"}, "cannot load the certificate and key"),
    ({"ciphers": "NO-SUCH-CIPHER"}, "attribute 'ciphers'"),
    ({"protocols": "TLSv9"}, "attribute 'protocols'"),
    ({"certFile": "/nonexistent/cert.pem"}, "attribute 'certFile': no such file"),
    ({"uidFormat": "cxz"}, "attribute 'uidFormat': unknown field letter(s) 'xz'"),
])
def test_bad_ssl_profiles_stop_start_up_naming_the_attribute(pki: Pki, tmp_path: Path, extra: Dict[str, str],
                                                              message: str) -> None:
    cert = Cert(pki.server.cert, pki.server.key, PASSWORD if "password" not in extra else None)
    if "certFile" in extra:
        cert = Cert(Path(extra.pop("certFile")), pki.server.key, PASSWORD)
    config = tmp_path / "r.conf"
    config.write_text("router {\n    id: R\n}\n" + profile("tls", cert, None, **extra)
                      + f"listener {{\n    host: 127.0.0.1\n    port: {free_port()}\n"
                        f"    sslProfile: tls\n}}\n")
    result = run_qdrouter(["-c", str(config)])
    assert result.returncode != 0
    assert message in result.stderr and "sslProfile 'tls'" in result.stderr
    assert "Traceback" not in result.stderr


def test_protocols_limit_tls_versions(policy_router: PolicyRouter, pki: Pki) -> None:
    require(shutil.which("openssl") is not None, "the openssl command")
    router = policy_router(profile("tls", pki.server, None, protocols="TLSv1.3"),
                           listener={"sslProfile": "tls", "requireSsl": "true"})

    def handshake(version: str) -> bool:
        result = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{router.port}", version,
                                 "-CAfile", str(pki.ca.cert)], input=b"", capture_output=True, timeout=20)
        return b"Cipher is " in result.stdout and b"Cipher is (NONE)" not in result.stdout

    assert handshake("-tls1_3")
    assert not handshake("-tls1_2")



def test_ciphers_limit_what_is_negotiated(policy_router: PolicyRouter, net: Net, pki: Pki) -> None:
    require(shutil.which("openssl") is not None, "the openssl command")
    chosen, other = "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"
    # ciphers governs TLS 1.2 and below (TLS 1.3 suites are not OpenSSL cipher-list names).
    router = policy_router(profile("tls", pki.server, None, protocols="TLSv1.2", ciphers=chosen),
                           listener={"sslProfile": "tls", "requireSsl": "true"}, extra_listeners=ADMIN)

    def negotiated(cipher: str) -> bool:
        result = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{router.port}", "-tls1_2",
                                 "-cipher", cipher, "-CAfile", str(pki.ca.cert)],
                                input=b"", capture_output=True, timeout=20)
        return f"Cipher is {cipher}".encode() in result.stdout

    assert negotiated(chosen)
    assert not negotiated(other)
    # A proton client offering its defaults gets the one cipher allowed, as management reports.
    assert login(net, tls_url(router), ssl_domain=client_tls(pki)).alive
    assert [row["sslCipher"] for row in rows(router) if row["ssl"]] == [chosen]

def connectors(router: Router) -> Dict[str, tuple]:
    with ManagementClient(router.url) as client:
        return {row["name"]: (row["connectionStatus"], str(row["connectionMsg"]))
                for row in client.query("connector")}


def test_connector_verifies_the_server_hostname(policy_router: PolicyRouter, pki: Pki) -> None:
    server = policy_router(profile("tls", pki.wrong_host, None), listener={"sslProfile": "tls",
                                                                         "requireSsl": "true"})
    body = "".join(
        f"connector {{\n    name: {name}\n    host: localhost\n    port: {server.port}\n"
        f"    sslProfile: trust\n"
        f"    verifyHostname: {verify}\n    role: route-container\n}}\n"
        for name, verify in (("strict", "true"), ("lenient", "false")))
    client = policy_router(profile("trust", None, pki.ca.cert) + body)
    deadline = time.monotonic() + 20
    status: Dict[str, tuple] = {}
    while time.monotonic() < deadline:
        status = connectors(client)
        if status["lenient"][0] == "Operational" and "certificate" in status["strict"][1]:
            break
        time.sleep(0.3)
    assert status["lenient"][0] == "Operational"
    assert status["strict"][0] != "Operational" and "certificate" in status["strict"][1], status


def test_inter_router_over_mutual_tls(tmp_path: Path, pki: Pki) -> None:
    mesh_port = free_port()

    def interior(router_id: str, body: str) -> Router:
        workdir = tmp_path / router_id
        workdir.mkdir()
        router = Router(workdir, router_id=router_id)
        router.config_path.write_text(
            f"router {{\n    mode: interior\n    id: {router_id}\n}}\n"
            f"listener {{\n    host: 127.0.0.1\n    port: {router.port}\n    saslMechanisms: ANONYMOUS\n}}\n"
            + body)
        return router

    a = interior("A", profile("mesh", pki.router_a, pki.ca.cert)
                 + f"listener {{\n    host: 127.0.0.1\n    port: {mesh_port}\n    role: inter-router\n"
                   f"    sslProfile: mesh\n    requireSsl: true\n    saslMechanisms: EXTERNAL\n"
                   f"    authenticatePeer: true\n}}\n")
    a.ports["mesh"] = mesh_port
    b = interior("B", profile("mesh", pki.router_b, pki.ca.cert)
                 + f"connector {{\n    host: localhost\n    port: {mesh_port}\n    role: inter-router\n"
                   f"    sslProfile: mesh\n    saslMechanisms: EXTERNAL\n}}\n")
    rogue = interior("C", profile("mesh", pki.rogue, pki.ca.cert)
                     + f"connector {{\n    host: localhost\n    port: {mesh_port}\n    role: inter-router\n"
                       f"    sslProfile: mesh\n    saslMechanisms: EXTERNAL\n}}\n")
    routers = [a.start(), b.start(), rogue.start()]
    try:
        deadline = time.monotonic() + 20
        nodes: list = []
        while time.monotonic() < deadline:
            with ManagementClient(a.url) as client:
                nodes = sorted(row["id"] for row in client.query("router.node"))
            if "B" in nodes:
                break
            time.sleep(0.3)
        assert "B" in nodes and "C" not in nodes
        with ManagementClient(a.url) as client:
            # The rogue keeps dialling: a connection of its may be listed while its handshake
            # is under way, never once it is done (it fails).
            mesh_rows = [row for row in client.query("connection")
                         if row["role"] == "inter-router" and row.get("isAuthenticated")]
        assert len(mesh_rows) == 1 and mesh_rows[0]["ssl"] and mesh_rows[0]["sasl"] == "EXTERNAL"
        assert "CN=B" in str(mesh_rows[0]["user"])
    finally:
        for router in routers:
            router.stop(check=True)


def test_ssl_profile_and_listener_removed_while_connections_use_them(policy_router: PolicyRouter, net: Net,
                                                                    pki: Pki) -> None:
    """Deleting a TLS listener and its sslProfile at run time frees their proton SSL domain
    only once the last connection made from it has gone: the open TLS connection keeps
    carrying messages, the router lives, and a new profile and listener serve TLS again."""
    router = policy_router(profile("tls", pki.server, None), extra_listeners=ADMIN)
    secure_port, later_port = free_port(), free_port()
    with ManagementClient(router.urls["admin"]) as admin:
        admin.create("listener", {"host": "127.0.0.1", "port": str(secure_port), "sslProfile": "tls",
                                  "saslMechanisms": "ANONYMOUS"}, name="secure")
    url = f"amqps://localhost:{secure_port}"
    for _ in range(20):  # connections made from the domain come and go
        login(net, url, ssl_domain=client_tls(pki)).close()
    staying = login(net, url, ssl_domain=client_tls(pki))
    with ManagementClient(router.urls["admin"]) as admin:
        admin.delete("listener", name="secure")
        admin.delete("sslProfile", name="tls")
    rcv = staying.receiver("tls.after-delete")
    snd = staying.sender("tls.after-delete")
    net.wait(lambda: snd.credit > 0, 10, "credit on the TLS connection")
    for n in range(50):
        snd.send(msg(n))
    net.wait(lambda: snd.settled_count() == 50, 10, "outcomes over the TLS connection")
    assert snd.outcome_counts() == {"accepted": 50} and len(rcv.received) == 50
    staying.close()
    with ManagementClient(router.urls["admin"]) as admin:
        admin.create("sslProfile", {"certFile": str(pki.server.cert), "privateKeyFile": str(pki.server.key),
                                    "password": PASSWORD}, name="tls")
        admin.create("listener", {"host": "127.0.0.1", "port": str(later_port), "sslProfile": "tls",
                                  "saslMechanisms": "ANONYMOUS"}, name="secure-again")
    again = login(net, f"amqps://localhost:{later_port}", ssl_domain=client_tls(pki))
    assert any(row["ssl"] for row in rows(router))
    again.close()
