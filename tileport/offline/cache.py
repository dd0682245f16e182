"""The pack cache: the expensive parts of a bundle, kept outside any clone and keyed by what they are made from.

`tileport offline pack` downloads ~600 MB of wheels, vendors the locked crates, compresses the GPU host's files
and the Rust toolchain. Each of these is a pure function of a few inputs (the requirements, Python version and
platform tags; the Cargo.lock and cargo's version; the exact wheel files; the rustc build), so a second pack
with the same inputs copies them from here instead (`TILEPORT_OFFLINE_CACHE`, default
`~/.cache/tileport/offline`). A change to any input is a new key, so it is packed afresh; `--refresh` ignores
the cache (and replaces what it holds).

An entry is a directory `<kind>-<key16>/` with the part's files and `entry.json` (the full key, the inputs it
was made from, and the sha256 + size of each file), written last through a rename: an entry either is complete
or does not exist. Every file is hashed again while it is copied out; one that no longer matches (a damaged
cache) drops the entry and the part is made afresh, so a damaged cache cannot make a damaged bundle.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from tileport.exec import settings

ENTRY = "entry.json"
KEEP = 2  # entries kept per kind (the most recently used): a new requirement set does not pile up copies of ~600 MB


def cache_root() -> Path:
    return settings.offline_cache_dir()


def make_key(kind: str, inputs: dict) -> str:
    blob = json.dumps({"kind": kind, "inputs": inputs}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _entry_dir(root: Path, kind: str, key: str) -> Path:
    return root / f"{kind}-{key[:16]}"


def _copy_hashed(src: Path, dst: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        while block := fi.read(1 << 20):
            h.update(block)
            fo.write(block)
            size += len(block)
    shutil.copystat(src, dst)
    return h.hexdigest(), size


def lookup(kind: str, inputs: dict, root: Path | None = None) -> Path | None:
    """The entry directory for these inputs, when complete (its entry.json names the same key)."""
    root = root or cache_root()
    key = make_key(kind, inputs)
    d = _entry_dir(root, kind, key)
    try:
        entry = json.loads((d / ENTRY).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not (isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("files"), dict)):
        return None
    try:
        os.utime(d / ENTRY)  # recently used: kept by prune
    except OSError:
        pass
    return d


def copy_out(entry: Path, dest: Path) -> tuple[list[str], dict]:
    """Copy an entry's files into dest (relative paths kept), checking each sha256 on the way. Returns the files
    and the entry's meta; raises ValueError naming the first file that does not match (the caller drops the entry)."""
    record = json.loads((entry / ENTRY).read_text(encoding="utf-8"))
    files = record["files"]
    out = []
    for rel, info in sorted(files.items()):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        digest, size = _copy_hashed(entry / rel, target)
        if digest != info.get("sha256") or size != info.get("size"):
            raise ValueError(f"{entry / rel}: does not match its cache record")
        out.append(rel)
    return out, dict(record.get("meta") or {})


def store(kind: str, inputs: dict, src: Path, files: list[str], meta: dict | None = None,
          root: Path | None = None) -> Path:
    """Copy `files` (relative to src) into a new complete entry (replacing an older one with the same key)."""
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    key = make_key(kind, inputs)
    final = _entry_dir(root, kind, key)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-{os.getpid()}-", dir=root))
    try:
        record = {}
        for rel in sorted(files):
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            digest, size = _copy_hashed(src / rel, staging / rel)
            record[rel] = {"sha256": digest, "size": size}
        (staging / ENTRY).write_text(json.dumps({"key": key, "kind": kind, "inputs": inputs, "files": record,
                                                 "meta": meta or {}},
                                                indent=1, sort_keys=True), encoding="utf-8")
        drop(final)
        try:
            staging.rename(final)
        except OSError:  # another pack stored the same entry meanwhile: theirs is as good
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    prune(kind, root)
    return final


def prune(kind: str, root: Path, keep: int = KEEP) -> None:
    """Drop all but the `keep` most recently used complete entries of a kind."""
    def used(d: Path) -> float:
        try:
            return (d / ENTRY).stat().st_mtime
        except OSError:
            return 0.0

    entries = sorted((d for d in root.glob(f"{kind}-*") if d.is_dir() and (d / ENTRY).is_file()), key=used,
                     reverse=True)
    for d in entries[keep:]:
        drop(d)


def drop(entry: Path) -> None:
    if entry.exists():
        trash = entry.with_name(f".{entry.name}.drop-{os.getpid()}")
        try:
            entry.rename(trash)  # gone at once for readers; removed below
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)


def _remove_copied(entry: Path, dest: Path) -> None:
    """Undo a copy_out that stopped half way (so `make` never reuses a damaged file, e.g. pip download's)."""
    try:
        files = json.loads((entry / ENTRY).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError):
        return
    for rel in files:
        (dest / rel).unlink(missing_ok=True)


def cached_part(kind: str, inputs: dict, dest: Path, make: Callable[[Path], tuple[list[str], dict]], *,
                refresh: bool = False, root: Path | None = None,
                log: Callable[[str], None] | None = None) -> tuple[list[str], dict, bool]:
    """The part's files in dest: copied from the cache when an entry for these inputs exists (and still matches),
    else made by `make(dest) -> (files relative to dest, meta)` and stored. Returns (files, meta, whether the
    cache served it)."""
    root = root or cache_root()
    if not refresh:
        entry = lookup(kind, inputs, root)
        if entry is not None:
            try:
                files, meta = copy_out(entry, dest)
                return files, meta, True
            except (OSError, ValueError, KeyError) as e:
                if log:
                    log(f"pack cache: {kind} entry damaged ({e}); making it afresh")
                _remove_copied(entry, dest)
                drop(entry)
    files, meta = make(dest)
    if not files:  # nothing made (no apt download, no GPU wheels): not worth keeping, and maybe a passing failure
        return files, meta, False
    try:
        store(kind, inputs, dest, files, meta, root)
    except OSError as e:  # a full or read-only cache never fails a pack
        if log:
            log(f"pack cache: could not store {kind} in {root} ({e.strerror or e}); packing goes on")
    return files, meta, False
