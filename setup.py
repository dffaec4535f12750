"""Builds the router's proton shim (router/qdrouter/amqp/bindings/proton_shim.c) with the package.

Everything else about the package is in pyproject.toml. The shim is optional: without a C
compiler or Python's headers the package installs without it, and the router runs on the
shim's pure-Python fallback (20-30% slower; it says so when it starts)."""

import importlib.util
import os
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
BUILDER = os.path.join("router", "qdrouter", "amqp", "bindings", "proton_shim_build.py")


def proton_shim_extensions() -> list:
    try:
        spec = importlib.util.spec_from_file_location("proton_shim_build", os.path.join(HERE, BUILDER))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        extension = module.builder().distutils_extension(tmpdir=os.path.join("build", "proton-shim"))
    except Exception as error:  # any failure here means: no shim
        print(f"qdmesh: not building the router's proton shim: {error}", file=sys.stderr)
        return []
    # A compiler failure leaves the package without the shim instead of failing the install.
    extension.optional = True
    return [extension]


setup(ext_modules=proton_shim_extensions())
