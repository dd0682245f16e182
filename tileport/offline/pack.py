"""`tileport offline pack DIR`: one directory that installs and runs tileport on a machine with no network.

On a connected machine this writes (into a staging directory beside DIR, renamed to DIR only when complete):
the wheelhouse (`pip download --only-binary=:all:` of tileport's dependencies and dev extras for one Python
version and platform), the tileport tree, `cargo vendor` of the pinned Cargo.lock, the GPU host's
tileiras/ptxas/libnvvm (taken from the wheels just downloaded, tar.gz), bubblewrap's .deb when apt can fetch it,
install.sh, verify.py and the manifest (tileport.exec.offline) with versions and sha256 of everything.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from tileport import __version__
from tileport.errors import UserError
from tileport.exec import offline
from tileport.exec.proc import run_command
from tileport.exec.toolchain import resolve as resolve_toolchain
from tileport.validators.rust.crate import CUTILE_VERSION

DEFAULT_PYTHON = "3.11"
DEFAULT_PLATFORM = "manylinux_2_28_x86_64"
# The GPU host's part (as scripts in /work/shared make it): the assembler backend and the compiler library.
GPU_FILES = {"nvidia_cuda_tileiras": ("bin/tileiras", "bin/tileirdisasm"), "nvidia_cuda_nvcc": ("bin/ptxas",),
             "nvidia_nvvm": ("lib/libnvvm.so.4",)}
SRC_ARCHIVE = "src/tileport-src.tar.gz"
VENDOR_ARCHIVE = "cargo/vendor.tar.gz"
VENDOR_MANIFEST = f"""[package]
name = "tileport-port"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
path = "src/lib.rs"

[dependencies]
cutile = "={CUTILE_VERSION}"
cutile-compiler = "={CUTILE_VERSION}"

[workspace]
"""


@dataclass
class PackOptions:
    python_version: str = DEFAULT_PYTHON
    platforms: list[str] = field(default_factory=lambda: [DEFAULT_PLATFORM])
    gpu: bool = True  # the tileiras/ptxas/libnvvm archive for a GPU host
    system: bool = True  # bubblewrap's .deb, when apt-get can download it
    timeout: float = 1800.0


@dataclass
class PackResult:
    path: Path
    manifest: dict
    seconds: dict[str, float]

    @property
    def size(self) -> int:
        return sum(int(f["size"]) for f in self.manifest["files"].values())


def expand_platforms(platforms: list[str]) -> list[str]:
    """A manylinux_2_N tag also accepts wheels built for older glibc (2_N-1 ... 2_5 and the legacy aliases),
    which pip's --platform does not infer; other tags are passed unchanged."""
    out: list[str] = []
    for plat in platforms:
        m = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", plat)
        tags = [plat]
        if m:
            glibc, arch = int(m.group(1)), m.group(2)
            tags = [f"manylinux_2_{n}_{arch}" for n in range(glibc, 4, -1)]
            legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
            tags += [f"{name}_{arch}" for n, name in legacy.items() if glibc >= n]
        out += [t for t in tags if t not in out]
    return out


def repo_root() -> Path:
    """The tileport tree this package runs from (pack ships it: ports/, examples/, scripts/)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise UserError(f"{root} has no pyproject.toml: run `tileport offline pack` from a tileport checkout "
                        "(an editable install, as scripts/setup.sh makes)")
    return root


def requirements(root: Path) -> list[str]:
    """tileport's dependencies and dev extras (what `pip install -e .[dev]` installs), and the build backend."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    deps = list(project["project"].get("dependencies", []))
    for extra in project["project"].get("optional-dependencies", {}).values():
        deps += [d for d in extra if d not in deps]
    build = project.get("build-system", {}).get("requires", [])
    return deps + [d for d in build if d not in deps] + ["pip"]


def _check(cmd, what: str) -> None:
    if not cmd.ok:
        tail = [ln for ln in (cmd.stderr or cmd.stdout or "").strip().splitlines() if ln.strip()]
        why = tail[-1] if tail else f"exit status {cmd.returncode}"
        if cmd.timed_out:
            why = "timed out"
        raise UserError(f"{what} failed: {why[:300]}")


def download_wheels(dest: Path, reqs: list[str], opts: PackOptions) -> None:
    argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", str(dest),
            "--only-binary=:all:", "--python-version", opts.python_version, "--implementation", "cp"]
    for plat in expand_platforms(opts.platforms):
        argv += ["--platform", plat]
    _check(run_command(argv + reqs, timeout=opts.timeout, output_cap=1 << 20),
           f"pip download for Python {opts.python_version} on {', '.join(opts.platforms)}")


def git_files(root: Path) -> tuple[list[str], str | None, bool]:
    """Tracked and untracked-but-not-ignored files of the tileport tree, its commit, and whether it is dirty."""
    ls = run_command(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"], timeout=60)
    if not ls.ok:
        raise UserError(f"{root} is not a git checkout (git ls-files failed): pack from a tileport clone")
    files = sorted({f for f in ls.stdout.split("\0") if f and (root / f).is_file() and not (root / f).is_symlink()})
    head = run_command(["git", "-C", str(root), "rev-parse", "HEAD"], timeout=30)
    status = run_command(["git", "-C", str(root), "status", "--porcelain"], timeout=60)
    return files, (head.stdout.strip() if head.ok else None), bool(status.stdout.strip())


def _add_tree(tar: tarfile.TarFile, root: Path, files: list[str], prefix: str) -> None:
    for rel in files:
        info = tar.gettarinfo(str(root / rel), arcname=f"{prefix}/{rel}")
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        with open(root / rel, "rb") as f:
            tar.addfile(info, f)


def pack_source(root: Path, out: Path) -> tuple[str | None, bool, int]:
    files, commit, dirty = git_files(root)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:gz", compresslevel=6) as tar:
        _add_tree(tar, root, files, "tileport")
    return commit, dirty, len(files)


def vendor_crates(out: Path, work: Path, opts: PackOptions) -> int:
    """`cargo vendor --locked` of tileport's pinned lock (the one every conversion crate builds with)."""
    tc = resolve_toolchain()
    if tc.cargo is None:
        raise UserError("cargo not found: packing vendors the cutile crates, install Rust >= 1.89 (https://rustup.rs)")
    crate = work / "vendor-crate"
    (crate / "src").mkdir(parents=True)
    (crate / "src" / "lib.rs").write_text("", encoding="utf-8")
    (crate / "Cargo.toml").write_text(VENDOR_MANIFEST, encoding="utf-8")
    lock = resources.files("tileport.validators.rust.crate_template").joinpath("cargo-lock.toml").read_text("utf-8")
    (crate / "Cargo.lock").write_text(lock, encoding="utf-8")
    vendor = work / "vendor"
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"}
    _check(run_command([str(tc.cargo), "vendor", "--locked", "--versioned-dirs", str(vendor)], cwd=crate, env=env,
                       timeout=opts.timeout, output_cap=1 << 20), "cargo vendor of the pinned cutile crates")
    missing = offline.missing_vendored(lock, vendor)
    if missing:
        raise UserError(f"cargo vendor left out {', '.join(missing[:5])}; the pinned Cargo.lock cannot be vendored")
    out.parent.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in vendor.iterdir())
    with tarfile.open(out, "w:gz", compresslevel=6) as tar:
        for name in names:
            tar.add(str(vendor / name), arcname=f"vendor/{name}")
    return len(names)


def wheel_versions(wheels: Path) -> dict[str, str]:
    """{distribution name: version} from the wheel file names (PEP 427: name-version-...)."""
    out = {}
    for w in sorted(wheels.glob("*.whl")):
        name, version = w.name.split("-")[:2]
        out[name.lower().replace("_", "-")] = version
    return out


def pack_gpu(wheels: Path, out_dir: Path) -> str | None:
    """bin/tileiras, bin/tileirdisasm, bin/ptxas and lib/libnvvm.so.4 of the wheelhouse's release, tar.gz."""
    members: list[tuple[str, bytes]] = []
    release = None
    for dist, files in GPU_FILES.items():
        found = sorted(wheels.glob(f"{dist}-*.whl"))
        if not found:
            return None
        if dist == "nvidia_cuda_tileiras":
            release = found[0].name.split("-")[1]
        with zipfile.ZipFile(found[0]) as z:
            for rel in files:
                try:
                    members.append((rel, z.read(f"nvidia/cu13/{rel}")))
                except KeyError:
                    raise UserError(f"{found[0].name} has no nvidia/cu13/{rel}; the GPU host part cannot be made") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"tileiras-{release}.tar.gz"  # gzip: xz -6 of these 227 MB takes minutes on 2 busy cores
    with tarfile.open(out, "w:gz", compresslevel=6) as tar:
        for rel, data in members:
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.mtime = len(data), 0o755 if rel.startswith("bin/") else 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return release


def fetch_bubblewrap(out_dir: Path, opts: PackOptions) -> str | None:
    """bubblewrap's .deb for this machine's distribution (the sandbox for model-written code), when apt can get it."""
    if not shutil.which("apt-get"):
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    res = run_command(["apt-get", "download", "-q", "bubblewrap"], cwd=out_dir, timeout=300)
    debs = sorted(out_dir.glob("bubblewrap_*.deb"))
    if not res.ok or not debs:
        shutil.rmtree(out_dir, ignore_errors=True)
        return None
    return debs[0].name


def install_script(python_version: str) -> str:
    text = resources.files("tileport.offline").joinpath("install.sh").read_text(encoding="utf-8")
    return text.replace("@PYTHON_VERSION@", python_version)


def check_destination(dest: Path) -> None:
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise UserError(f"{dest} exists and is not a directory; pass a new directory for the bundle")
    if dest.is_dir() and any(dest.iterdir()):
        raise UserError(f"{dest} is not empty; pass a new or empty directory for the bundle (nothing was written)")
    if not dest.parent.is_dir():
        raise UserError(f"{dest.parent} does not exist; create it first")


def check_options(opts: PackOptions) -> None:
    if not re.fullmatch(r"3\.\d{1,2}", opts.python_version):
        raise UserError(f"--python-version {opts.python_version[:20]!r}: give MAJOR.MINOR, e.g. 3.11")
    if tuple(int(x) for x in opts.python_version.split(".")) < (3, 11):
        raise UserError(f"--python-version {opts.python_version}: tileport needs Python >= 3.11")
    for plat in opts.platforms:
        if not re.fullmatch(r"[a-z0-9_]+", plat) or plat in ("any", "linux_x86_64"):
            raise UserError(f"--platform {plat[:40]!r}: give a wheel platform tag such as {DEFAULT_PLATFORM}")


def pack(dest: str | os.PathLike, opts: PackOptions | None = None, log=print) -> PackResult:
    opts = opts or PackOptions()
    check_options(opts)
    dest = Path(dest).absolute()
    check_destination(dest)
    root = repo_root()
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-{os.getpid()}-", dir=dest.parent))
    times: dict[str, float] = {}
    start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="tileport-pack-") as work_s:
            work = Path(work_s)
            t0 = time.monotonic()
            log(f"wheels for Python {opts.python_version} on {', '.join(opts.platforms)} ...")
            download_wheels(staging / "wheels", requirements(root), opts)
            times["wheels"] = time.monotonic() - t0
            t0 = time.monotonic()
            commit, dirty, nfiles = pack_source(root, staging / SRC_ARCHIVE)
            times["source"] = time.monotonic() - t0
            t0 = time.monotonic()
            log(f"cargo vendor (cutile {CUTILE_VERSION}) ...")
            crates = vendor_crates(staging / VENDOR_ARCHIVE, work, opts)
            times["crates"] = time.monotonic() - t0
            t0 = time.monotonic()
            release = pack_gpu(staging / "wheels", staging / "gpu") if opts.gpu else None
            times["gpu"] = time.monotonic() - t0
            bwrap_deb = fetch_bubblewrap(staging / "system", opts) if opts.system else None
        (staging / "install.sh").write_text(install_script(opts.python_version), encoding="utf-8")
        (staging / "install.sh").chmod(0o755)
        shutil.copyfile(offline.__file__, staging / "verify.py")
        cargo = resolve_toolchain().cargo
        cargo_v = run_command([str(cargo), "--version"], timeout=30).stdout.strip() if cargo else None
        t0 = time.monotonic()
        manifest = offline.write_manifest(staging, {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "tileport": {"version": __version__, "commit": commit, "dirty": dirty, "files": nfiles},
            "python": {"version": opts.python_version, "implementation": "cp", "platforms": opts.platforms},
            "versions": wheel_versions(staging / "wheels"),
            "cutile": {"version": CUTILE_VERSION, "crates": crates, "packed_with": cargo_v},
            "gpu": {"tileiras_release": release, "archive": f"gpu/tileiras-{release}.tar.gz" if release else None},
            "system": {"bubblewrap": bwrap_deb},
            "needs": {"rust": ">= 1.89 (cargo, rustc)", "bubblewrap": "bwrap + prlimit (util-linux)",
                      "model": "a vLLM install and model weights of your own"},
        })
        times["manifest"] = time.monotonic() - t0
        times["total"] = time.monotonic() - start
        try:
            if dest.is_dir():
                dest.rmdir()  # empty when we started; fails if something was written there meanwhile
            staging.rename(dest)
        except OSError as e:
            raise UserError(f"{dest}: {e.strerror or e} (something else wrote there while packing); "
                            "nothing was written, pack again into a new directory") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return PackResult(dest, manifest, times)
