"""Test certificates made with the openssl command: a CA, server and client certificates
signed by it, optionally with a password-protected key. Nothing is checked in."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.prerequisites import require


@dataclass
class Cert:
    cert: Path
    key: Path
    password: str | None = None


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=str(cwd), check=True, timeout=60, capture_output=True)


class CertAuthority:
    def __init__(self, directory: Path, name: str = "Test CA") -> None:
        require(shutil.which("openssl") is not None, "the openssl command")
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.key = directory / "ca-key.pem"
        self.cert = directory / "ca.pem"
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                 "-keyout", str(self.key), "-out", str(self.cert), cwd=directory)
        self._serial = 1

    def issue(self, name: str, subject: str, hosts: tuple = (), password: str | None = None) -> Cert:
        """A certificate for ``subject`` ('/C=US/O=Acme/OU=Eng/CN=alice'); ``hosts`` become SANs."""
        key = self.directory / f"{name}-key.pem"
        request = self.directory / f"{name}.csr"
        cert = self.directory / f"{name}.pem"
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", str(key),
                 "-out", str(request), cwd=self.directory)
        extensions = self.directory / f"{name}.ext"
        sans = ",".join(f"IP:{h}" if h[0].isdigit() or ":" in h else f"DNS:{h}" for h in hosts)
        extensions.write_text(f"subjectAltName={sans}\n" if sans else "basicConstraints=CA:FALSE\n")
        self._serial += 1
        _openssl("x509", "-req", "-in", str(request), "-CA", str(self.cert), "-CAkey", str(self.key),
                 "-set_serial", str(self._serial), "-days", "2", "-extfile", str(extensions),
                 "-out", str(cert), cwd=self.directory)
        if password is not None:
            encrypted = self.directory / f"{name}-key-encrypted.pem"
            _openssl("pkey", "-in", str(key), "-aes256", "-passout", f"pass:{password}",
                     "-out", str(encrypted), cwd=self.directory)
            key = encrypted
        return Cert(cert, key, password)
