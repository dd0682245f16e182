"""Where the external tools live. One place decides, so doctor, analyze and the Rust builder agree.

Order for each tool: explicit path from `tileport.toml` [toolchain], then the environment
(`CUTILE_TILEIRAS_PATH`, `CUDA_TOOLKIT_PATH`, `LIBCLANG_PATH`), then the pip-installed
`nvidia/cu13` tree beside this interpreter, then `PATH`. cargo and rustc: the Rust toolchain of the offline
bundle this tileport was installed from (tileport.exec.offline), then `$CARGO_HOME/bin`, then `PATH`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tileport.exec import offline

if TYPE_CHECKING:
    from tileport.config import Config


def pip_cuda_root() -> Path | None:
    """The `nvidia/cu13` directory that the nvidia-* wheels install into this environment, if any."""
    for entry in sys.path:
        cand = Path(entry) / "nvidia" / "cu13"
        if (cand / "include" / "cuda.h").is_file() or (cand / "bin").is_dir():
            return cand
    return None


def pip_libclang_dir() -> Path | None:
    """The directory holding libclang.so from the `libclang` wheel, if installed."""
    for entry in sys.path:
        cand = Path(entry) / "clang" / "native"
        if (cand / "libclang.so").is_file():
            return cand
    return None


@dataclass(frozen=True)
class Toolchain:
    """Resolved paths; a None means "not found" and doctor says how to fix it."""

    tileiras: Path | None
    tileirdisasm: Path | None
    cuda_toolkit: Path | None
    libclang_dir: Path | None
    cargo: Path | None
    rustc: Path | None

    def cargo_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for building the cutile crates: headers, libclang and tileiras wired in; in an offline
        install also the bundle's Rust (RUSTC, PATH) and CARGO_HOME = DEST/.offline/cargo (never ~/.cargo)."""
        env = dict(os.environ if base is None else base)
        rust = offline.rust_dir()
        if rust is not None and self.cargo is not None and Path(self.cargo).parent == rust / "bin":
            env["RUSTC"] = str(rust / "bin" / "rustc")
            env["PATH"] = os.pathsep.join([str(rust / "bin"), *filter(None, [env.get("PATH")])])
            env.pop("RUSTUP_TOOLCHAIN", None)
        home = offline.cargo_home()
        if home is not None:
            env["CARGO_HOME"] = str(home)
        if self.cuda_toolkit:
            env["CUDA_TOOLKIT_PATH"] = str(self.cuda_toolkit)
        if self.libclang_dir:
            env["LIBCLANG_PATH"] = str(self.libclang_dir)
        if self.tileiras:
            env["CUTILE_TILEIRAS_PATH"] = str(self.tileiras)
        # A system CUDA's ptxas/nvvm next to CUDA_HOME makes tileiras fail (rc 5): keep it out.
        env.pop("CUDA_HOME", None)
        env.pop("CUDA_PATH", None)
        # libclang from the pip wheel lacks clang's builtin headers: point bindgen at the C compiler's.
        if "BINDGEN_EXTRA_CLANG_ARGS" not in env:
            builtin = c_builtin_include_dir()
            if builtin:
                env["BINDGEN_EXTRA_CLANG_ARGS"] = f"-I{builtin}"
        return env


def c_builtin_include_dir() -> Path | None:
    """A directory holding the compiler builtin headers (stddef.h, stdarg.h) for bindgen.

    The `libclang` wheel ships libclang.so without clang's resource headers, so bindgen fails on
    `/usr/include/stdlib.h` with "'stddef.h' file not found". The C compiler cargo links with
    (gcc) has them; `cc -print-file-name=include` names the directory.
    """
    for cc in ("cc", "gcc", "clang"):
        exe = shutil.which(cc)
        if not exe:
            continue
        try:
            out = subprocess.run([exe, "-print-file-name=include"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            continue
        cand = Path(out.stdout.strip())
        if out.returncode == 0 and (cand / "stddef.h").is_file():
            return cand
    return None


def _which(name: str, *dirs: Path | None) -> Path | None:
    for d in dirs:
        if d is not None and (d / name).is_file() and os.access(d / name, os.X_OK):
            return d / name
    found = shutil.which(name)
    return Path(found) if found else None


def _path_or_none(value: str | os.PathLike | None) -> Path | None:
    return Path(value) if value else None


def resolve(
    tileiras: str | os.PathLike | None = None,
    tileirdisasm: str | os.PathLike | None = None,
    cuda_toolkit: str | os.PathLike | None = None,
    libclang_dir: str | os.PathLike | None = None,
) -> Toolchain:
    """Find every tool; explicit arguments (from the config) win over the environment and defaults."""
    pip_root = pip_cuda_root()
    cuda = _path_or_none(cuda_toolkit) or _path_or_none(os.environ.get("CUDA_TOOLKIT_PATH")) or pip_root
    bin_dirs = [cuda / "bin" if cuda else None, pip_root / "bin" if pip_root else None]
    ti = _path_or_none(tileiras) or _path_or_none(os.environ.get("CUTILE_TILEIRAS_PATH")) or _which("tileiras", *bin_dirs)
    dis = _path_or_none(tileirdisasm) or (
        ti.parent / "tileirdisasm" if ti and (ti.parent / "tileirdisasm").is_file() else _which("tileirdisasm", *bin_dirs)
    )
    clang = _path_or_none(libclang_dir) or _path_or_none(os.environ.get("LIBCLANG_PATH")) or pip_libclang_dir()
    bundled = offline.rust_dir()
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin"
    rust_dirs = [bundled / "bin" if bundled else None, cargo_home]
    return Toolchain(
        tileiras=ti,
        tileirdisasm=dis,
        cuda_toolkit=cuda,
        libclang_dir=clang,
        cargo=_which("cargo", *rust_dirs),
        rustc=_which("rustc", *rust_dirs),
    )


def _env_key() -> tuple[str | None, ...]:
    return tuple(os.environ.get(k) for k in ("CUTILE_TILEIRAS_PATH", "CUDA_TOOLKIT_PATH", "LIBCLANG_PATH", "PATH",
                                             "CARGO_HOME"))


@functools.lru_cache(maxsize=16)
def _resolve_cached(paths: tuple[str | None, ...], env_key: tuple[str | None, ...]) -> Toolchain:
    return resolve(*paths)


def from_config(config: "Config | None" = None) -> Toolchain:
    """The toolchain a config names: the one function every command and stage uses (resolved once per
    configuration and environment, then cached)."""
    from tileport.config import Config

    tc = (config or Config()).toolchain
    return _resolve_cached((tc.tileiras, tc.tileirdisasm, tc.cuda_toolkit, tc.libclang_dir), _env_key())
