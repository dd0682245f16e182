"""The offline bundle's contract: its manifest, the sha256 check, and the record an offline install leaves.

A bundle (made by `tileport offline pack DIR`, see tileport.offline.pack) is one directory:

    manifest.json       versions of everything and the sha256 + size of every other file
    install.sh          sets up what scripts/setup.sh sets up, from the bundle only
    verify.py           this module, copied: install.sh runs it with a bare python3 before anything is installed
    wheels/*.whl        tileport's dependencies (and dev extras) for one Python version and platform
    src/tileport-src.tar.gz   the tileport tree (ports/, examples/, scripts/, the package)
    cargo/vendor.tar.gz       `cargo vendor` of tileport's pinned Cargo.lock (cutile =0.5.0 and every dependency)
    gpu/tileiras-<release>.tar.gz  bin/tileiras, bin/ptxas, lib/libnvvm.so.4 for a GPU host without them
    rust/rust-<version>-<host>.tar.gz  cargo, rustc and the host's std (optional: `pack --no-rust`)
    system/*.deb        bubblewrap, when the packing machine could fetch it (optional)

The install writes `tileport-offline.json` into the venv (sys.prefix): the bundle's versions, where the vendored
crates, the cargo config with the source replacement and the bundled Rust toolchain are. tileport's Rust builds
run that toolchain with CARGO_HOME = DEST/.offline/cargo and pass the config to cargo (`--config FILE`), so the
cutile crates come from the vendored sources and cargo never needs the network (nor reads ~/.cargo).

Standard library only: this file runs as `python3 verify.py` on a machine where nothing is installed yet.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sys
from pathlib import Path, PurePosixPath

try:  # inside tileport: a UserError (one line, exit 2); standalone (verify.py): a plain exception
    from tileport.errors import UserError as _Base
except ImportError:  # pragma: no cover - exercised by running verify.py with python -I
    _Base = Exception  # type: ignore[assignment,misc]

FORMAT = "tileport-offline-bundle/1"
MANIFEST = "manifest.json"
RECORD = "tileport-offline.json"  # in the venv (sys.prefix) of an offline install
# Files a bundle holds besides the manifest, which it does not list (install.sh and verify.py are listed too).
LISTED_DIRS = ("wheels", "src", "cargo", "gpu", "system", "rust")
SRC_ARCHIVE = "src/tileport-src.tar.gz"
VENDOR_ARCHIVE = "cargo/vendor.tar.gz"
LOCK_IN_SRC = "tileport/tileport/validators/rust/crate_template/cargo-lock.toml"
MAX_MANIFEST_BYTES = 16 << 20


class BundleError(_Base):
    """The bundle is incomplete or corrupted: one line naming the file, and what to do."""

    exit_code = 2  # as a UserError's (standalone, str() of a plain exception is its message too)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def list_files(bundle: str | os.PathLike) -> list[str]:
    """Every regular file of the bundle except the manifest, as sorted POSIX paths relative to it."""
    root = Path(bundle)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            rel = Path(dirpath, name).relative_to(root).as_posix()
            if rel != MANIFEST:
                out.append(rel)
    return sorted(out)


def write_manifest(bundle: str | os.PathLike, meta: dict) -> dict:
    """Hash every file of the bundle and write manifest.json (meta + `files`). Returns the manifest."""
    root = Path(bundle)
    files = {}
    for rel in list_files(root):
        p = root / rel
        if p.is_symlink() or not p.is_file():
            raise BundleError(f"{rel}: not a regular file; a bundle holds only plain files")
        files[rel] = {"sha256": sha256_file(p), "size": p.stat().st_size}
    manifest = {"format": FORMAT, **meta, "files": files}
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(root / MANIFEST)
    return manifest


def _safe_rel(rel: object) -> bool:
    if not isinstance(rel, str) or not rel or "\\" in rel or "\x00" in rel:
        return False
    p = PurePosixPath(rel)
    return not p.is_absolute() and ".." not in p.parts and p.as_posix() == rel


def read_manifest(bundle: str | os.PathLike) -> dict:
    root = Path(bundle)
    path = root / MANIFEST
    if not root.is_dir():
        raise BundleError(f"{root}: not a directory; pass the bundle directory `tileport offline pack` wrote")
    if not path.is_file():
        raise BundleError(f"{path}: missing; this is not a complete tileport offline bundle (copy the whole directory)")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise BundleError(f"{path}: larger than {MAX_MANIFEST_BYTES} bytes; not a tileport manifest")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"{path}: not valid JSON ({e}); copy the bundle again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(manifest.get("files"), dict):
        raise BundleError(f"{path}: not a {FORMAT} manifest; make the bundle with this tileport's `offline pack`")
    return manifest


def verify(bundle: str | os.PathLike) -> dict:
    """Check every listed file (present, size, sha256) and that nothing unlisted sits in the bundle's
    directories. Returns the manifest; raises BundleError naming the first bad file."""
    root = Path(bundle)
    manifest = read_manifest(root)
    listed = manifest["files"]
    for rel, info in sorted(listed.items()):
        if not _safe_rel(rel) or not isinstance(info, dict):
            raise BundleError(f"{root / MANIFEST}: bad entry {str(rel)[:80]!r}; copy the bundle again")
        p = root / rel
        if p.is_symlink() or (p.exists() and not p.is_file()):
            raise BundleError(f"{rel}: not a regular file in the bundle; copy the bundle again")
        if not p.exists():
            raise BundleError(f"{rel}: missing from the bundle (listed in {MANIFEST}); copy the whole bundle again")
        size = p.stat().st_size
        if size != info.get("size"):
            raise BundleError(f"{rel}: {size} bytes, the manifest says {info.get('size')}; the copy is truncated or "
                              "changed: copy it again")
        digest = sha256_file(p)
        if digest != info.get("sha256"):
            raise BundleError(f"{rel}: sha256 {digest[:16]}... does not match the manifest's "
                              f"{str(info.get('sha256'))[:16]}...; the file is corrupted: copy it again")
    for rel in list_files(root):
        if rel not in listed and rel.split("/", 1)[0] in LISTED_DIRS:
            raise BundleError(f"{rel}: not listed in {MANIFEST}; remove it (only the packed files are installed)")
    if VENDOR_ARCHIVE in listed:
        check_vendor_archive(root)
    return manifest


def check_vendor_archive(root: Path) -> None:
    """Every crate the shipped Cargo.lock names is in cargo/vendor.tar.gz (a bundle packed from a lock its vendor
    run did not cover would send cargo to the network)."""
    import tarfile

    try:
        with tarfile.open(root / SRC_ARCHIVE) as tar:
            member = tar.extractfile(LOCK_IN_SRC)
            lock = member.read().decode("utf-8") if member else None
    except (tarfile.TarError, KeyError, OSError, EOFError, UnicodeDecodeError):
        lock = None
    if lock is None:
        raise BundleError(f"{SRC_ARCHIVE}: holds no readable {LOCK_IN_SRC.split('/', 1)[1]}; pack the bundle again")
    try:
        with tarfile.open(root / VENDOR_ARCHIVE) as tar:
            names = set(tar.getnames())
    except (tarfile.TarError, OSError, EOFError) as e:
        raise BundleError(f"{VENDOR_ARCHIVE}: not a readable tar.gz ({e}); pack the bundle again") from None
    missing = [f"{n}-{v}" for n, v in locked_packages(lock) if f"vendor/{n}-{v}/.cargo-checksum.json" not in names]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise BundleError(f"{VENDOR_ARCHIVE}: lacks the locked crate {missing[0]}{more}; cargo would need the "
                          "network: pack the bundle again")


# ------------------------------------------------------------------------------------------- the install record


def record_path(prefix: str | os.PathLike | None = None) -> Path:
    return Path(prefix or sys.prefix) / RECORD


def write_record(bundle: str | os.PathLike, dest: str | os.PathLike, prefix: str | os.PathLike | None = None) -> Path:
    """Called by install.sh with the new venv's python: what was installed, from which bundle."""
    manifest = read_manifest(bundle)
    dest = Path(dest).resolve()
    cargo = dest / ".offline" / "cargo"
    rust = dest / ".offline" / "rust"
    lock = dest / LOCK_IN_SRC.split("/", 1)[1]
    if (cargo / "vendor").is_dir() and lock.is_file():
        missing = missing_vendored(lock.read_text(encoding="utf-8"), cargo / "vendor")
        if missing:
            raise BundleError(f"{cargo / 'vendor'}: the locked crate {missing[0]} is missing after extracting "
                              f"{VENDOR_ARCHIVE}; pack the bundle again")
    record = {
        "format": FORMAT,
        "bundle": str(Path(bundle).resolve()),
        "installed_at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "dest": str(dest),
        "cargo_config": str(cargo / "config.toml"),
        "vendor_dir": str(cargo / "vendor"),
        "cargo_home": str(cargo),
        "rust_dir": str(rust) if (rust / "bin" / "cargo").is_file() else None,
        "gpu_dir": str(Path(bundle).resolve() / "gpu"),
        "files": len(manifest["files"]),
        **{k: v for k, v in manifest.items() if k not in ("files", "format")},
    }
    if (cargo / "vendor").is_dir():
        # Source replacement: crates.io -> the vendored directory (JSON strings are valid TOML basic strings).
        (cargo / "config.toml").write_text(
            "# Written by the tileport offline install: cutile and its dependencies come from the vendored sources.\n"
            '[source.crates-io]\nreplace-with = "tileport-vendored"\n\n'
            f"[source.tileport-vendored]\ndirectory = {json.dumps(str(cargo / 'vendor'))}\n\n"
            "[net]\noffline = true\n", encoding="utf-8")
    path = record_path(prefix)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def installed() -> dict | None:
    """The record of the offline install this interpreter belongs to, or None (a connected install)."""
    path = record_path()
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("format") == FORMAT else None


def cargo_config() -> Path | None:
    """The cargo config with the vendored-source replacement, when tileport was installed from a bundle."""
    record = installed()
    if not record or not record.get("cargo_config"):
        return None
    path = Path(record["cargo_config"])
    return path if path.is_file() else None


def cargo_home() -> Path | None:
    """CARGO_HOME for builds of an offline install: DEST/.offline/cargo (nothing from ~/.cargo is read)."""
    record = installed()
    path = Path(record["cargo_home"]) if record and record.get("cargo_home") else None
    return path if path is not None and path.is_dir() else None


def rust_dir() -> Path | None:
    """The bundle's Rust toolchain (bin/cargo, bin/rustc), when the install extracted one."""
    record = installed()
    path = Path(record["rust_dir"]) if record and record.get("rust_dir") else None
    return path if path is not None and (path / "bin" / "cargo").is_file() else None


def vendor_dir() -> Path | None:
    record = installed()
    path = Path(record["vendor_dir"]) if record and record.get("vendor_dir") else None
    return path if path is not None and path.is_dir() else None


def locked_packages(lock_text: str) -> list[tuple[str, str]]:
    """(name, version) of every crates.io package in a Cargo.lock (the local root package has no source)."""
    out, name, version, registry = [], None, None, False
    for line in lock_text.splitlines() + ["[[package]]"]:
        line = line.strip()
        if line == "[[package]]":
            if name and version and registry:
                out.append((name, version))
            name, version, registry = None, None, False
        elif line.startswith("name = "):
            name = line.split('"')[1]
        elif line.startswith("version = ") and name:
            version = line.split('"')[1]
        elif line.startswith("source = ") and "registry+" in line:
            registry = True
    return out


def missing_vendored(lock_text: str, vendor: Path) -> list[str]:
    """Locked crates with no `<name>-<version>` directory (and checksum file) among the vendored sources."""
    return [f"{n}-{v}" for n, v in locked_packages(lock_text)
            if not (vendor / f"{n}-{v}" / ".cargo-checksum.json").is_file()]


def main(argv: list[str] | None = None) -> int:
    """`python3 verify.py BUNDLE` (check it) | `python3 verify.py record BUNDLE DEST` (write the install record)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if len(args) == 3 and args[0] == "record":
            print(write_record(args[1], args[2]))
            return 0
        if len(args) == 1:
            manifest = verify(args[0])
            print(f"bundle OK: {len(manifest['files'])} files match {MANIFEST} "
                  f"(tileport {manifest.get('tileport', {}).get('version', '?')}, "
                  f"Python {manifest.get('python', {}).get('version', '?')})")
            return 0
        print("usage: verify.py BUNDLE_DIR | verify.py record BUNDLE_DIR DEST", file=sys.stderr)
        return 2
    except BundleError as e:
        print(f"tileport offline: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"tileport offline: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
