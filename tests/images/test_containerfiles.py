"""Static checks of the Containerfiles: what a reviewer would check by eye, kept checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parents[2]
IMAGES = ["router", "operator"]


def stages(image: str) -> List[str]:
    """The Containerfile's stages, each as its text (line continuations joined)."""
    text = (REPO / "images" / image / "Containerfile").read_text().replace("\\\n", " ")
    parts = re.split(r"^FROM ", text, flags=re.M)
    return ["FROM " + p for p in parts[1:]]


@pytest.mark.parametrize("image", IMAGES)
def test_base_image_is_a_build_argument(image: str) -> None:
    text = (REPO / "images" / image / "Containerfile").read_text()
    assert re.search(r"^ARG BASE_IMAGE=\S+bookworm", text, re.M)
    assert all(s.startswith("FROM ${BASE_IMAGE}") for s in stages(image))
    assert ":latest" not in text


@pytest.mark.parametrize("image", IMAGES)
def test_final_stage_is_non_root_and_read_only_friendly(image: str) -> None:
    final = stages(image)[-1]
    assert re.search(r"^USER 10001:10001$", final, re.M), "numeric non-root user (runAsNonRoot can check it)"
    assert "PYTHONDONTWRITEBYTECODE=1" in final and "HOME=/tmp" in final
    assert "COPY --from=build /opt/qdmesh /opt/qdmesh" in final


@pytest.mark.parametrize("image", IMAGES)
def test_build_tools_stay_in_the_build_stage(image: str) -> None:
    build, final = stages(image)
    assert "gcc" in build and "libssl-dev" in build
    for dev in ("gcc", "-dev", "pkg-config", "/wheels"):
        assert dev not in final, f"{dev} in the final stage of {image}"


def test_router_builds_proton_with_cyrus_sasl_and_keeps_the_runtime_libraries() -> None:
    build, final = stages("router")
    assert "libsasl2-dev" in build
    assert "--no-binary python-qpid-proton python-qpid-proton==0.40.0" in build
    assert "proton.SASL.extended()" in build  # the build fails if Cyrus is missing
    assert "libsasl2-2" in final and "libsasl2-modules" in final
    assert 'ENTRYPOINT ["qdrouterd"]' in final
    assert "EXPOSE 5672 55672 8672" in final
    assert "8672/healthz" in final


def test_router_image_compiles_the_proton_shim_for_its_interpreter() -> None:
    # qdmesh arrives as a source distribution (images/build.sh): pip compiles the router's
    # proton shim in the build stage, and the build fails if that did not happen.
    build, _ = stages("router")
    assert "s.COMPILED, s.NOT_COMPILED_BECAUSE" in build


def test_operator_entrypoint() -> None:
    assert 'ENTRYPOINT ["qdmesh-operator"]' in stages("operator")[-1]


def test_router_pypy_variant_brings_pypy_to_the_final_stage() -> None:
    # router-pypy is this Containerfile with ROUTER_PYTHON=pypy3 (images/build.sh): the venv
    # links to /usr/bin/pypy3, so the final stage must install PyPy itself.
    build, final = stages("router")
    assert "pypy3-dev" in build and '"$ROUTER_PYTHON" -m venv /opt/qdmesh' in build
    assert '[ "$ROUTER_PYTHON" != pypy3 ] || pkgs="$pkgs pypy3"' in final
