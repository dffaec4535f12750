"""Values the CRD's schema types only as strings or free-form objects, checked the way
Kubernetes will check them later: an image reference needs a tag or a digest (an untagged one
means whatever ``latest`` is that day, on each node separately), and a pod's resource
quantities must parse (else the StatefulSet is refused at every reconciliation).  The CRD
refuses both with CEL rules; these catch objects stored before those rules existed."""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping

from .errors import SpecError

# Kubernetes' quantity syntax (apimachinery resource.Quantity): a decimal number, then a binary
# (Ki..Ei) or decimal (n, u, m, k, M..E) suffix or a decimal exponent. A pattern, not the
# Kubernetes client's parser: the model stays free of the client (.importlinter).
_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?")
# A reference is [registry[:port]/]path[:tag][@digest]; the tag is after the last '/'.
_TAGGED = re.compile(r":[\w][\w.-]{0,127}$")
_DIGEST = re.compile(r"@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$")


def check_image(path: str, image: str) -> str:
    if image.endswith(":latest"):
        raise SpecError(path, "must name a version, not the 'latest' tag")
    last = image.rsplit("/", 1)[-1]
    if not _DIGEST.search(image) and not _TAGGED.search(last):
        raise SpecError(path, f"{image!r} has no tag; name a version (for example "
                              "qdmesh/router:1.2.3) or a digest")
    return image


def check_resources(path: str, resources: Mapping[str, Any]) -> Dict[str, Any]:
    """``resources`` (requests, limits) with every quantity checked; the first bad one named."""
    for part in ("requests", "limits"):
        values = resources.get(part)
        if values is None:
            continue
        if not isinstance(values, Mapping):
            raise SpecError(f"{path}.{part}", f"must be an object, not {type(values).__name__}")
        for name, value in values.items():
            if not is_quantity(value):
                raise SpecError(f"{path}.{part}.{name}", f"{value!r} is not a quantity "
                                "(for example 500m or 2 for cpu, 256Mi or 1Gi for memory)")
    return dict(resources)


def is_quantity(value: Any) -> bool:
    """Whether Kubernetes would take ``value`` as a resource quantity."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return False
    return _QUANTITY.fullmatch(str(value).strip() if isinstance(value, str) else repr(value)) is not None
