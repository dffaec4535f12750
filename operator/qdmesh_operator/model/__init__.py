"""Typed, validated specs: what the custom resources ask for, independent of Kubernetes I/O."""
