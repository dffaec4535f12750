"""Live TLS (qdmesh): which listeners and connectors use each sslProfile, and a management
UPDATE of a profile validated whole, then applied to all of them at once.

A listener or connector holds the proton domain its new connections are made from; an UPDATE
builds new domains from the files as they are now (re-opened by path) and swaps them in, so
connections made afterwards use the new material and existing ones keep theirs (each holds its
own domain, amqp/connections/tls.py). Nothing changes unless everything could be built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from .listener_settings import ListenerSettings
from .tls import TlsError, TlsProfile, TlsProfiles, release_domain, retain_domain


@dataclass
class TlsBinding:
    """How one listener or connector uses its profile (what its domain is built from)."""

    settings: ListenerSettings
    listener: bool
    verify_peer: bool = False       # listeners: EXTERNAL or uidFormat ask for client certificates
    allow_plain: bool = False       # listeners without requireSsl
    verify_hostname: bool = False   # connectors

    def build(self, profile: TlsProfile) -> Any:
        if self.listener:
            return profile.domain(True, self.verify_peer, allow_plain=self.allow_plain)
        # A connector verifies its peer whenever the profile names CAs to trust.
        return profile.domain(False, bool(profile.ca_file), self.verify_hostname)


def binding_for(settings: ListenerSettings, kind: str, attrs: Dict[str, Any],
                profile: TlsProfile) -> TlsBinding:
    """The binding a listener's or connector's attributes make (as qdrouterd reads them)."""
    if kind == "listener":
        mechanisms = settings.sasl_mechanisms.split()
        return TlsBinding(settings, True, verify_peer="EXTERNAL" in mechanisms or bool(profile.uid_format),
                          allow_plain=not attrs.get("requireSsl"))
    return TlsBinding(settings, False, verify_hostname=bool(attrs.get("verifyHostname", True)))


class TlsBindings:
    """The sslProfiles in use, and by whom."""

    def __init__(self, profiles: TlsProfiles) -> None:
        self.profiles = profiles
        self._bindings: Dict[ListenerSettings, TlsBinding] = {}

    def attach(self, store: Any, name: str, settings: ListenerSettings, kind: str,
               attrs: Dict[str, Any]) -> None:
        """Give ``settings`` the profile's domain; raises TlsError naming the attribute."""
        profile = self.profiles.get(store, name)
        binding = binding_for(settings, kind, attrs, profile)
        if kind != "listener":
            settings.verify_hostname = binding.verify_hostname
        settings.tls = profile
        settings.ssl_domain = binding.build(profile)
        self._bindings[settings] = binding

    def detach(self, settings: ListenerSettings) -> None:
        """The listener or connector is gone (it let go of its domain itself)."""
        self._bindings.pop(settings, None)

    def using(self, name: str) -> List[TlsBinding]:
        return [binding for binding in self._bindings.values()
                if binding.settings.tls is not None and binding.settings.tls.name == name]

    def update(self, store: Any, name: str, attrs: Dict[str, Any], changes: Dict[str, Any]) -> Dict[str, Any]:
        """Validate and apply an UPDATE of sslProfile ``name`` (``attrs``: its attributes now).
        Returns the attributes to store (the ordinal resolved); raises TlsError naming the
        attribute (and file) at fault, having changed nothing."""
        where = f"sslProfile {name!r}"
        merged = {**attrs, **changes}
        # The password given now wins over the other way of giving it, set before.
        if "password" in changes and "passwordFile" not in changes:
            merged.pop("passwordFile", None)
        elif "passwordFile" in changes and "password" not in changes:
            merged.pop("password", None)
        ordinal, oldest = _ordinals(where, attrs, changes)
        merged["ordinal"], merged["oldestValidOrdinal"] = ordinal, oldest
        profile = TlsProfile(name, merged, strict=True)
        bindings = self.using(name)
        built: List[Tuple[TlsBinding, Any]] = []
        try:
            for binding in bindings:
                built.append((binding, binding.build(profile)))
            if not bindings:
                # Unused for now: ciphers and protocols are checked all the same.
                profile.domain(bool(profile.cert_file), False)
        except TlsError:
            profile.close()
            raise
        for binding, domain in built:
            # The listener's or connector's own hold moves to the new domain.
            retain_domain(domain)
            old = binding.settings.ssl_domain
            binding.settings.tls = profile
            binding.settings.ssl_domain = domain
            if old is not None:
                release_domain(old)
        self.profiles.replace(profile)
        return {key: merged[key] for key in (*changes, "ordinal", "oldestValidOrdinal")}

    def status(self, store: Any, name: str, attrs: Dict[str, Any]) -> Dict[str, Any]:
        """qdmesh's attributes of an sslProfile as READ shows them: its ordinals (0 when the
        config names none) and the certificate loaded now."""
        ordinals = {"ordinal": int(attrs.get("ordinal") or 0),
                    "oldestValidOrdinal": int(attrs.get("oldestValidOrdinal") or 0)}
        profile = self.profiles.current(name)
        if profile is None:
            try:
                profile = self.profiles.get(store, name)
            except TlsError:
                return {**ordinals, "certificateSha256": "", "certificateNotAfter": None,
                        "caCertificateSha256": ""}
        return {**ordinals, "certificateSha256": profile.certificate.sha256,
                "certificateNotAfter": profile.certificate.not_after or None,
                "caCertificateSha256": profile.ca_sha256}


def _ordinals(where: str, attrs: Dict[str, Any], changes: Dict[str, Any]) -> Tuple[int, int]:
    current = int(attrs.get("ordinal") or 0)
    current_oldest = int(attrs.get("oldestValidOrdinal") or 0)
    # An UPDATE without an ordinal is a new revision all the same.
    ordinal = int(changes["ordinal"]) if changes.get("ordinal") is not None else current + 1
    if ordinal < current:
        raise TlsError(f"{where}: attribute 'ordinal': {ordinal} is lower than the current ordinal {current}")
    oldest = changes.get("oldestValidOrdinal")
    oldest = current_oldest if oldest is None else int(oldest)
    if oldest < current_oldest:
        raise TlsError(f"{where}: attribute 'oldestValidOrdinal': {oldest} is lower than the current "
                       f"{current_oldest}")
    if oldest > ordinal:
        raise TlsError(f"{where}: attribute 'oldestValidOrdinal': {oldest} is above the ordinal {ordinal} "
                       f"(no connection could be valid)")
    return ordinal, oldest
