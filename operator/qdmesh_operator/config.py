"""The operator's run-time settings, from its command line or environment (docs/kubernetes-contract.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        raise SystemExit(f"qdmesh-operator: {name}={value!r} is not a number") from None


def _float(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    try:
        return float(value) if value else default
    except ValueError:
        raise SystemExit(f"qdmesh-operator: {name}={value!r} is not a number") from None


@dataclass
class Settings:
    health_port: int
    metrics_port: int
    drift_interval: float

    @classmethod
    def from_env(cls) -> Settings:
        return cls(health_port=_int("QDMESH_HEALTH_PORT", 8080),
                   metrics_port=_int("QDMESH_METRICS_PORT", 9090),
                   drift_interval=_float("QDMESH_DRIFT_INTERVAL", 30.0))


SETTINGS = Settings.from_env()


def load_kube_credentials() -> None:
    """Points the kubernetes package's default client at the API server: the pod's service
    account in a cluster, else $KUBECONFIG as it is now (read here, not when the package was
    imported). Raises the package's ConfigException (or OSError) when neither works."""
    from kubernetes import config as kube_config

    try:
        kube_config.load_incluster_config()
    except kube_config.ConfigException:
        kube_config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
