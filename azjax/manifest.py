"""A directory's manifest: the size and CRC-32 of its files, written once they are complete and checked before
they are read, so that a truncated or damaged file is a clear error, never silently wrong weights.

    manifest.json    {"files": {"model/...": {"size": bytes, "crc32": checksum}, ...}}

A run's checkpoints (`azjax.checkpointing`) and exports (`azjax.exports`) carry one.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path

MANIFEST_FILE = "manifest.json"


def write_manifest(directory: Path, items: tuple[str, ...] | None = None) -> None:
    """Writes `manifest.json`: the size and CRC-32 of every file (under `items` only, if given), fsynced."""
    files = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        name = path.relative_to(directory).as_posix()
        if name != MANIFEST_FILE and (items is None or name.split("/")[0] in items):
            files[name] = {"size": path.stat().st_size, "crc32": _crc32(path)}
    with open(directory / MANIFEST_FILE, "w") as f:
        json.dump({"files": files}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


def verify_files(directory: Path, items: tuple[str, ...], error: Callable[[str], Exception], *,
                 required: bool) -> None:
    """Raises `error(why)` unless every file the manifest lists under `items` is there, whole and unchanged.

    Without a manifest, raises if one is `required`, else checks nothing (a checkpoint older than manifests).
    """
    manifest = directory / MANIFEST_FILE
    if not manifest.is_file():
        if required:
            raise error(f"its {MANIFEST_FILE} is missing")
        return
    try:
        files = json.loads(manifest.read_text())["files"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as caught:
        raise error(f"its {MANIFEST_FILE} is damaged ({caught})") from None
    listed = [name for name in files if name.split("/")[0] in items]
    if not listed:
        raise error(f"its {MANIFEST_FILE} lists no files of {', '.join(items)}")
    for name in listed:
        path, expected = directory / name, files[name]
        if not path.is_file():
            raise error(f"{name} is missing")
        size = path.stat().st_size
        if size != expected["size"]:
            raise error(f"{name} has {size} bytes instead of {expected['size']}")
        if _crc32(path) != expected["crc32"]:
            raise error(f"{name} does not match its checksum")


def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc
