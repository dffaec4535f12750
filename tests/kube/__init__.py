"""A real Kubernetes API server for tests (see tests/kube/apiserver.py)."""
