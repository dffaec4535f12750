"""The operator's Kubernetes client, shared by the stages that read or write the API server
(observe, tls, apply, status): the typed calls they make (api.py) and a timeout on every
request (apiclient.py)."""

from .api import EdgePod, KubeApi, KubeRefused, NodeHealth

__all__ = ["EdgePod", "KubeApi", "KubeRefused", "NodeHealth"]
