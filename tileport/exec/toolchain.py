"""Where the external tools live. One place decides, so doctor, analyze and the Rust builder agree.

Order for each tool: explicit path from `tileport.toml` [toolchain], then the environment
(`CUTILE_TILEIRAS_PATH`, `CUDA_TOOLKIT_PATH`, `LIBCLANG_PATH`), then the pip-installed
`nvidia/cu13` tree beside this interpreter, then `PATH`. cargo and rustc: the Rust toolchain of the offline
bundle this tileport was installed from (tileport.exec.offline), then `$CARGO_HOME/bin`, then `PATH`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tileport.exec import offline, settings

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
        # cutile's build scripts rerun on CUDA_TOOLKIT_PATH / LIBCLANG_PATH changes: give every checkout the same
        # content-keyed paths, so two venvs on one machine share one dependency build (see build_inputs)
        cuda, clang = self.build_inputs()
        if cuda:
            env["CUDA_TOOLKIT_PATH"] = str(cuda)
        if clang:
            env["LIBCLANG_PATH"] = str(clang)
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


    def build_inputs(self) -> tuple[Path | None, Path | None]:
        """(CUDA toolkit root, libclang dir) as cargo sees them: stable copies keyed by content (stable_cuda_root,
        stable_libclang_dir), or the found paths where no copy can be made."""
        return (stable_cuda_root(self.cuda_toolkit) if self.cuda_toolkit else None,
                stable_libclang_dir(self.libclang_dir) if self.libclang_dir else None)


# ------------------------------------------------------------------------- stable build inputs (one per content)
#
# cuda-bindings / cuda-core / cutile-compiler declare `rerun-if-env-changed=CUDA_TOOLKIT_PATH` and
# `rerun-if-changed=<toolkit>/include/cuda.h`; bindgen declares `rerun-if-env-changed=LIBCLANG_PATH`. Pointed at
# each checkout's own venv, two checkouts sharing the cargo target rebuild each other's cutile tree on every
# build. So cargo is given paths that depend only on what is in the files: a hard-linked (else copied) tree under
# the cache dir, named by the CUDA version and a hash of the headers bindgen reads, and a libclang dir named by
# the library's hash. Identical inputs -> identical paths and mtimes -> one dependency build per machine.

BUILD_INPUTS_DIR = "build-inputs"
_CUDA_KEY_HEADERS = ("cuda.h", "curand.h")


def build_inputs_root() -> Path:
    """Beside the shared cargo target (not under TILEPORT_CACHE_DIR): every clone and test must name the same
    paths, or the point is lost."""
    return settings.shared_cache_root() / BUILD_INPUTS_DIR


def _sha(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def _link_tree(src: Path, dst: Path) -> None:
    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)  # same inode: same content and mtime, no space
        except OSError:
            shutil.copy2(s, d)
    shutil.copytree(src, dst, symlinks=False, copy_function=link)


def _publish(key_dir: Path, make) -> Path | None:
    """Create `key_dir` once, atomically (staging dir + rename: a concurrent maker's result wins)."""
    if key_dir.is_dir():
        return key_dir
    tmp = key_dir.parent / f".{key_dir.name}.tmp-{os.getpid()}"
    try:
        key_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        make(tmp)
        os.rename(tmp, key_dir)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return key_dir if key_dir.is_dir() else None
    return key_dir


def _stat_key(*paths: Path) -> tuple:
    out = []
    for p in paths:
        try:
            st = p.stat()
            out.append((str(p), st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((str(p), None, None))
    return tuple(out)


def stable_cuda_root(cuda: Path) -> Path:
    """A toolkit root whose include/ holds the same headers as `cuda`/include, at a path named by their content."""
    return _stable_cuda_root(Path(cuda), _stat_key(*(Path(cuda) / "include" / h for h in _CUDA_KEY_HEADERS)),
                             str(build_inputs_root()))


@functools.lru_cache(maxsize=16)
def _stable_cuda_root(cuda: Path, _stat: tuple, root: str) -> Path:
    inc = cuda / "include"
    headers = [inc / h for h in _CUDA_KEY_HEADERS if (inc / h).is_file()]
    if not (inc / "cuda.h").is_file():
        return cuda
    m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", (inc / "cuda.h").read_text(encoding="utf-8", errors="replace"))
    key = f"cuda-{m.group(1) if m else 'unknown'}-{_sha(headers)}"
    made = _publish(Path(root) / key, lambda tmp: (tmp.mkdir(), _link_tree(inc, tmp / "include")))
    return made or cuda


def stable_libclang_dir(libclang_dir: Path) -> Path:
    """A directory holding the same libclang.so as `libclang_dir`, at a path named by its content."""
    lib = Path(libclang_dir) / "libclang.so"
    return _stable_libclang_dir(Path(libclang_dir), _stat_key(lib), str(build_inputs_root()))


@functools.lru_cache(maxsize=16)
def _stable_libclang_dir(libclang_dir: Path, _stat: tuple, root: str) -> Path:
    lib = libclang_dir / "libclang.so"
    if not lib.is_file():
        return libclang_dir
    key = f"libclang-{_sha([lib])}"

    def make(tmp: Path) -> None:
        tmp.mkdir()
        try:
            os.link(lib, tmp / lib.name)
        except OSError:
            shutil.copy2(lib, tmp / lib.name)
    return _publish(Path(root) / key, make) or libclang_dir


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
