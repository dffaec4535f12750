"""Rendering: router config files and Kubernetes manifests from the model (pure functions)."""
