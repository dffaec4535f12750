"""Write a single-layer container image archive (Docker ``save`` format) from local files.

A machine without registry access cannot pull images, and may have no Docker engine, so the
cluster's own images (the pause sandbox, CoreDNS, a busybox test image) are made from binaries
built or installed here::

    python3 mkimage.py OUT.tar NAME:TAG --file /path/to/pause=/pause --entrypoint /pause
    python3 mkimage.py OUT.tar NAME:TAG --busybox /bin/busybox --entrypoint /bin/sh

``ctr -n k8s.io images import OUT.tar`` (what ``local-cluster.sh import`` runs) and
``kind load image-archive`` accept the result.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

# Applets the tests use; busybox decides what to run from argv[0].
BUSYBOX_APPLETS = ("sh", "ls", "cat", "echo", "sleep", "nslookup", "wget", "httpd", "hostname", "env",
                   "nc", "ip", "mkdir", "true", "false", "grep", "date", "ps", "kill")
FIXED_MTIME = 1_700_000_000  # reproducible archives: the same inputs give the same image ID


def _add(tar: tarfile.TarFile, name: str, data: bytes = b"", mode: int = 0o644,
         kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.mtime, info.mode, info.type, info.linkname = FIXED_MTIME, mode, kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def build_layer(files: Sequence[Tuple[Path, str]], busybox: Path | None) -> bytes:
    """The layer tarball: ``files`` as (source, path in image), busybox with its applet links."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        directories = {"etc", "tmp", "bin"}
        for _, target in files:
            parts = target.strip("/").split("/")[:-1]
            directories.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        for directory in sorted(directories):
            _add(tar, directory, mode=0o1777 if directory == "tmp" else 0o755, kind=tarfile.DIRTYPE)
        _add(tar, "etc/passwd", b"root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
        _add(tar, "etc/group", b"root:x:0:\nnobody:x:65534:\n")
        if busybox is not None:
            _add(tar, "bin/busybox", busybox.read_bytes(), mode=0o755)
            for applet in BUSYBOX_APPLETS:
                _add(tar, f"bin/{applet}", kind=tarfile.SYMTYPE, link="busybox")
        for source, target in files:
            _add(tar, target.strip("/"), source.read_bytes(), mode=0o755)
    return buffer.getvalue()


def image_archive(reference: str, layer: bytes, entrypoint: List[str], cmd: List[str],
                  env: Dict[str, str]) -> bytes:
    """A ``docker save`` archive holding one image tagged ``reference``."""
    if ":" not in reference.rsplit("/", 1)[-1] or reference.endswith(":latest"):
        raise ValueError(f"image reference {reference!r} needs an explicit tag other than latest")
    layer_digest = hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": entrypoint or None, "Cmd": cmd or None,
                   "Env": [f"{k}={v}" for k, v in env.items()], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
        "history": [{"created_by": "qdmesh tests/e2e/cluster/mkimage.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [reference], "Layers": [f"{layer_digest}/layer.tar"]}]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add(tar, config_name, config_bytes)
        _add(tar, layer_digest, mode=0o755, kind=tarfile.DIRTYPE)
        _add(tar, f"{layer_digest}/layer.tar", layer)
        _add(tar, "manifest.json", json.dumps(manifest).encode())
    return buffer.getvalue()


def _file_mapping(text: str) -> Tuple[Path, str]:
    source, sep, target = text.partition("=")
    if not sep or not target.startswith("/"):
        raise argparse.ArgumentTypeError(f"--file wants SOURCE=/path/in/image, got {text!r}")
    if not Path(source).is_file():
        raise argparse.ArgumentTypeError(f"--file source {source!r} is not a file")
    return Path(source), target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Make a one-layer image archive from local files.")
    parser.add_argument("output", type=Path)
    parser.add_argument("reference", help="NAME:TAG (never latest)")
    parser.add_argument("--file", action="append", default=[], type=_file_mapping,
                        metavar="SOURCE=/PATH", help="copy a file into the image (repeatable)")
    parser.add_argument("--busybox", type=Path, help="a static busybox, installed with its applets")
    parser.add_argument("--entrypoint", action="append", default=[])
    parser.add_argument("--cmd", action="append", default=[])
    args = parser.parse_args(argv)
    layer = build_layer(args.file, args.busybox)
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    try:
        archive = image_archive(args.reference, layer, args.entrypoint, args.cmd, env)
    except ValueError as error:
        parser.error(str(error))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(archive)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
