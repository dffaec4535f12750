"""End-to-end tests against a real Kubernetes cluster (see docs/e2e.md)."""
