"""The Rust toolchain a bundle carries: the packing machine's own rustc + cargo + the host's standard library.

`scripts/setup.sh` relies on a Rust >= 1.89 being present (rustup on a connected machine); an air-gapped machine
has no rustup to fetch one, so pack carries the toolchain tileport itself builds with. Only what `cargo build`
needs is taken from its sysroot (`rustc --print sysroot`): bin/cargo, bin/rustc, the compiler's shared libraries
(lib/*.so*, found by rustc through its `$ORIGIN/../lib` rpath) and lib/rustlib/<host>/ (the standard library
and the linker wrappers) -- no docs, clippy, rustfmt or rust-src. A C compiler and linker (`cc`)
stay the machine's: every Linux build host has one, and cargo links with it.

A sysroot that is not a self-contained toolchain (a distribution's rustc in /usr, with cargo elsewhere) is not
carried; pack says so and the manifest tells the user to bring Rust.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from tileport.exec.doctor import MIN_RUST
from tileport.exec.proc import run_command

ARCHIVE_DIR = "rust"


@dataclass(frozen=True)
class RustToolchain:
    sysroot: Path
    version: str  # 1.95.0
    host: str  # x86_64-unknown-linux-gnu
    verbose: str  # `rustc -vV`: the build's identity (commit hash, LLVM), the cache key

    @property
    def archive(self) -> str:
        return f"{ARCHIVE_DIR}/rust-{self.version}-{self.host}.tar.gz"


def find(rustc: Path | None) -> tuple[RustToolchain | None, str]:
    """The self-contained toolchain behind `rustc` (through a rustup proxy too), or None and why not."""
    if rustc is None:
        return None, "no rustc found"
    vv = run_command([str(rustc), "-vV"], timeout=60)
    root = run_command([str(rustc), "--print", "sysroot"], timeout=60)
    if not vv.ok or not root.ok:
        return None, f"{rustc} -vV failed"
    version = re.search(r"^release: (\S+)", vv.stdout, re.M)
    host = re.search(r"^host: (\S+)", vv.stdout, re.M)
    if not version or not host:
        return None, f"{rustc} -vV printed no release/host"
    numbers = tuple(int(x) for x in re.findall(r"\d+", version.group(1))[:2])
    if numbers < MIN_RUST:
        return None, f"this machine's Rust {version.group(1)} is older than {'.'.join(map(str, MIN_RUST))}; " \
                     "update it (rustup update) or bring Rust >= 1.89 to the air-gapped machine"
    sysroot = Path(root.stdout.strip())
    need = [sysroot / "bin" / "cargo", sysroot / "bin" / "rustc", sysroot / "lib" / "rustlib" / host.group(1) / "lib"]
    missing = [str(p) for p in need if not p.exists()]
    if missing or not list((sysroot / "lib").glob("librustc_driver-*.so")):
        return None, (f"{sysroot} is not a self-contained Rust toolchain (no {missing[0] if missing else 'librustc_driver'}"
                      "); bring Rust >= 1.89 to the air-gapped machine")
    return RustToolchain(sysroot, version.group(1), host.group(1), vv.stdout.strip()), ""


def members(tc: RustToolchain) -> list[Path]:
    """The sysroot paths (files, symlinks, directories taken whole) a build needs."""
    lib = tc.sysroot / "lib"
    out = [tc.sysroot / "bin" / "cargo", tc.sysroot / "bin" / "rustc"]
    out += sorted(p for p in lib.iterdir() if p.name.startswith("lib") and ".so" in p.name)
    out.append(lib / "rustlib" / tc.host)
    return out


def pack(tc: RustToolchain, bundle: Path) -> str:
    """Write the toolchain archive into the bundle (paths under `rust/`, extracted by install.sh into
    DEST/.offline/rust). Returns its path relative to the bundle."""
    out = bundle / tc.archive
    out.parent.mkdir(parents=True, exist_ok=True)

    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if "__pycache__" in info.name:
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(out, "w:gz", compresslevel=6) as tar:
        for p in members(tc):
            tar.add(str(p), arcname=f"rust/{p.relative_to(tc.sysroot).as_posix()}", filter=plain)
    return tc.archive
