"""TLS for listeners and connectors: proton SSL domains built from sslProfile attributes, and
the user identity taken from a client certificate (uidFormat, uidNameMappingFile)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Tuple

from ..bindings.proton_ffi import NULL, c_string, ffi, lib
from .tls_material import CertificateInfo, MaterialError, certificate_info, check_material, file_sha256


class TlsError(ValueError):
    """An sslProfile that cannot be used; str() names the attribute."""


# uidFormat letters (qdrouterd's): certificate subject fields and fingerprints.
_SUBJECT_FIELDS = {
    "c": lib.PN_SSL_CERT_SUBJECT_COUNTRY_NAME,
    "s": lib.PN_SSL_CERT_SUBJECT_STATE_OR_PROVINCE,
    "l": lib.PN_SSL_CERT_SUBJECT_CITY_OR_LOCALITY,
    "o": lib.PN_SSL_CERT_SUBJECT_ORGANIZATION_NAME,
    "u": lib.PN_SSL_CERT_SUBJECT_ORGANIZATION_UNIT,
    "n": lib.PN_SSL_CERT_SUBJECT_COMMON_NAME,
}
_FINGERPRINTS = {"1": (lib.PN_SSL_SHA1, 41), "2": (lib.PN_SSL_SHA256, 65), "5": (lib.PN_SSL_SHA512, 129)}
UID_SEPARATOR = ";"


def resolve_password(value: str | None, password_file: str | None, where: str) -> str | None:
    """A password given as itself, 'literal:TEXT', 'pass:TEXT', 'env:VAR' or 'file:PATH'."""
    if value is None and password_file:
        value = f"file:{password_file}"
    if value is None:
        return None
    scheme, sep, rest = value.partition(":")
    if not sep or scheme not in ("literal", "pass", "env", "file"):
        return value
    if scheme in ("literal", "pass"):
        return rest
    if scheme == "env":
        if rest not in os.environ:
            raise TlsError(f"{where}: password: environment variable {rest!r} is not set")
        return os.environ[rest]
    if os.path.exists(rest) and not os.path.isfile(rest):  # a FIFO or device would block
        raise TlsError(f"{where}: password: cannot read {rest!r}: not a regular file")
    try:
        with open(rest, encoding="utf-8") as handle:
            return handle.readline().rstrip("\r\n")
    except OSError as error:
        raise TlsError(f"{where}: password: cannot read {rest!r}: {error.strerror}") from None


class TlsProfile:
    """One sslProfile as proton domains (server side and client side, built on first use)."""

    def __init__(self, name: str, attrs: Dict[str, Any], strict: bool = False) -> None:
        """``strict`` (a management UPDATE): the files are loaded and checked at once, naming the
        attribute and file at fault, instead of when a domain is first built."""
        self.name = name
        where = f"sslProfile {name!r}"
        self.where = where
        self.cert_file: str | None = attrs.get("certFile")
        self.key_file: str | None = attrs.get("privateKeyFile")
        self.ca_file: str | None = attrs.get("caCertFile")
        self.ciphers: str | None = attrs.get("ciphers")
        self.protocols: str | None = attrs.get("protocols")
        self.uid_format: str | None = attrs.get("uidFormat")
        self.password = resolve_password(attrs.get("password"), attrs.get("passwordFile"), where)
        # qdmesh: the revision of the material, and the oldest revision connections may keep.
        self.ordinal = int(attrs.get("ordinal") or 0)
        self.oldest_valid = int(attrs.get("oldestValidOrdinal") or 0)
        for attribute, path in (("certFile", self.cert_file), ("privateKeyFile", self.key_file),
                                ("caCertFile", self.ca_file)):
            if path is not None and not os.path.isfile(path):
                raise TlsError(f"{where}: attribute '{attribute}': no such file {path!r}")
        # The leaf certificate, as management reports it (certificateSha256, certificateNotAfter).
        self.certificate = CertificateInfo()
        try:
            if strict:
                self.certificate = check_material(self.cert_file, self.key_file, self.ca_file, self.password)
            else:
                self.certificate = certificate_info(self.cert_file)
        except MaterialError as error:
            if strict:
                raise TlsError(f"{where}: {error}") from None
        # The CA file's bytes, as management reports them (caCertificateSha256).
        try:
            self.ca_sha256 = file_sha256("caCertFile", self.ca_file)
        except MaterialError as error:
            if strict:
                raise TlsError(f"{where}: {error}") from None
            self.ca_sha256 = ""
        if self.uid_format:
            bad = [ch for ch in self.uid_format.replace(",", "") if ch not in _SUBJECT_FIELDS
                   and ch not in _FINGERPRINTS]
            if bad:
                raise TlsError(f"{where}: attribute 'uidFormat': unknown field letter(s) {''.join(bad)!r} "
                               f"(allowed: c s l o u n 1 2 5)")
        self.uid_names: Dict[str, str] = {}
        mapping = attrs.get("uidNameMappingFile")
        if mapping:
            try:
                with open(mapping, encoding="utf-8") as handle:
                    loaded = json.load(handle)
            except (OSError, ValueError) as error:
                raise TlsError(f"{where}: attribute 'uidNameMappingFile': cannot read {mapping!r}: {error}") \
                    from None
            if not isinstance(loaded, dict) or not all(isinstance(v, str) for v in loaded.values()):
                raise TlsError(f"{where}: attribute 'uidNameMappingFile': expected a JSON map of id to name")
            self.uid_names = {str(key): value for key, value in loaded.items()}
        self._domains: Dict[Tuple[Any, ...], Any] = {}

    def domain(self, server: bool, verify_peer: bool, verify_hostname: bool = False,
               allow_plain: bool = False) -> Any:
        """A proton SSL domain; raises TlsError naming the attribute proton rejected."""
        key = (server, verify_peer, verify_hostname, allow_plain)
        domain = self._domains.get(key)
        if domain is not None:
            return domain
        domain = lib.pn_ssl_domain(lib.PN_SSL_MODE_SERVER if server else lib.PN_SSL_MODE_CLIENT)
        if not domain:
            raise TlsError(f"{self.where}: TLS is not available in this proton build")
        try:
            self._configure(domain, server, verify_peer, verify_hostname, allow_plain)
        except TlsError:
            lib.pn_ssl_domain_free(domain)
            raise
        self._domains[key] = domain
        retain_domain(domain)  # the profile's own hold, until it is forgotten
        return domain

    def _configure(self, domain: Any, server: bool, verify_peer: bool, verify_hostname: bool,
                   allow_plain: bool) -> None:
        where = self.where
        if self.cert_file:
            key = self.key_file or self.cert_file
            password = self.password.encode() if self.password is not None else NULL
            if lib.pn_ssl_domain_set_credentials(domain, self.cert_file.encode(), key.encode(), password):
                raise TlsError(f"{where}: certFile/privateKeyFile: cannot load the certificate and key "
                               f"(wrong password or not PEM?)")
        elif server:
            raise TlsError(f"{where}: attribute 'certFile' is required to accept TLS connections")
        if self.ca_file:
            if lib.pn_ssl_domain_set_trusted_ca_db(domain, self.ca_file.encode()):
                raise TlsError(f"{where}: attribute 'caCertFile': cannot load {self.ca_file!r}")
        if verify_peer:
            if not self.ca_file and server:
                raise TlsError(f"{where}: attribute 'caCertFile' is required to verify peer certificates")
            mode = lib.PN_SSL_VERIFY_PEER_NAME if verify_hostname else lib.PN_SSL_VERIFY_PEER
            ca = self.ca_file.encode() if self.ca_file and server else NULL
            if lib.pn_ssl_domain_set_peer_authentication(domain, mode, ca):
                raise TlsError(f"{where}: cannot require peer certificates")
        else:
            lib.pn_ssl_domain_set_peer_authentication(domain, lib.PN_SSL_ANONYMOUS_PEER, NULL)
        if self.ciphers and lib.pn_ssl_domain_set_ciphers(domain, self.ciphers.encode()):
            raise TlsError(f"{where}: attribute 'ciphers': {self.ciphers!r} is not a valid cipher list")
        if self.protocols and lib.pn_ssl_domain_set_protocols(domain, self.protocols.encode()):
            raise TlsError(f"{where}: attribute 'protocols': {self.protocols!r} is not a valid protocol list "
                           f"(e.g. 'TLSv1.2 TLSv1.3')")
        if server and allow_plain:
            lib.pn_ssl_domain_allow_unsecured_client(domain)

    def close(self) -> None:
        """The profile is gone: it lets go of its domains (freed once nothing else holds them)."""
        for domain in self._domains.values():
            release_domain(domain)
        self._domains.clear()


def certificate_uid(transport: Any, uid_format: str, names: Dict[str, str]) -> str | None:
    """The user id built from the peer's certificate (fields joined by ';'), mapped through
    uidNameMappingFile when it names it; None without a peer certificate."""
    ssl = lib.pn_ssl(transport)
    if not ssl:
        return None
    parts = []
    for letter in uid_format.replace(",", ""):
        if letter in _SUBJECT_FIELDS:
            value = c_string(lib.pn_ssl_get_remote_subject_subfield(ssl, _SUBJECT_FIELDS[letter]))
        else:
            kind, size = _FINGERPRINTS[letter]
            buffer = ffi.new("char[]", size)
            value = None
            if lib.pn_ssl_get_cert_fingerprint(ssl, buffer, size, kind) == 0:
                value = ffi.string(buffer).decode("ascii", "replace")
        if value:
            parts.append(value)
    if not parts:
        return None
    uid = UID_SEPARATOR.join(parts)
    return names.get(uid, uid)


# Holders of each proton SSL domain, by address: the profile that built it, each listener
# or connector configured with it, each connection made with it. Proton's SSL objects keep only
# the domain's OpenSSL context, but a listener makes new connections from the domain itself
# (pn_ssl_init): it is freed when the last holder lets go, never while one still might use it.
_DOMAIN_HOLDERS: Dict[int, int] = {}


def _address(domain: Any) -> int:
    return int(ffi.cast("uintptr_t", domain))


def retain_domain(domain: Any) -> None:
    key = _address(domain)
    _DOMAIN_HOLDERS[key] = _DOMAIN_HOLDERS.get(key, 0) + 1


def release_domain(domain: Any) -> None:
    key = _address(domain)
    left = _DOMAIN_HOLDERS.get(key, 0) - 1
    if left > 0:
        _DOMAIN_HOLDERS[key] = left
        return
    if key in _DOMAIN_HOLDERS:  # never free what was not held (a crash is worse than a leak)
        del _DOMAIN_HOLDERS[key]
        lib.pn_ssl_domain_free(domain)


def held_domains() -> int:
    """How many SSL domains are alive (tests: none left behind)."""
    return len(_DOMAIN_HOLDERS)


class TlsProfiles:
    """sslProfile entities as TlsProfiles, built when a listener or connector first names one."""

    def __init__(self) -> None:
        self._profiles: Dict[str, TlsProfile] = {}

    def get(self, store: Any, name: str) -> TlsProfile:
        profile = self._profiles.get(name)
        if profile is None:
            from ...schema import entity_type

            found = [entity for entity in store.of_type(entity_type("sslProfile")) if entity.name == name]
            if not found:
                raise TlsError(f"attribute 'sslProfile': no sslProfile named {name!r}")
            profile = TlsProfile(name, found[0].attributes)
            self._profiles[name] = profile
        return profile

    def current(self, name: str) -> TlsProfile | None:
        """The profile built for ``name``, if a listener or connector (or a READ) built it."""
        return self._profiles.get(name)

    def replace(self, profile: TlsProfile) -> None:
        """An updated profile takes the place of the one of its name (which lets go of its
        domains: listeners, connectors and connections hold their own)."""
        old = self._profiles.get(profile.name)
        self._profiles[profile.name] = profile
        if old is not None and old is not profile:
            old.close()

    def forget(self, name: str) -> None:
        """A deleted sslProfile: later listeners and connectors cannot use it."""
        profile = self._profiles.pop(name, None)
        if profile is not None:
            profile.close()  # its domains live on while listeners or connections hold them
