"""`tileport offline pack DIR`: one directory that installs and runs tileport on a machine with no network.

On a connected machine this writes (into a staging directory beside DIR, renamed to DIR only when complete):
the wheelhouse (`pip download --only-binary=:all:` of tileport's dependencies and dev extras for one Python
version and platform), the tileport tree, `cargo vendor` of the pinned Cargo.lock, the GPU host's
tileiras/ptxas/libnvvm (taken from the wheels just downloaded, tar.gz), the Rust toolchain tileport builds with
(tileport.offline.rust), bubblewrap's .deb when apt can fetch it, install.sh, verify.py and the manifest
(tileport.exec.offline) with versions and sha256 of everything.

Every part but the tileport tree comes from the pack cache when it was made before from the same inputs
(tileport.offline.cache: the requirements and platform; the Cargo.lock and cargo; the wheel files; the rustc
build; apt's bubblewrap version), so a second pack takes seconds; `--refresh` makes every part afresh.
"""

from __future__ import annotations

import hashlib
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
from tileport.offline import cache as pack_cache
from tileport.offline import rust as offline_rust
from tileport.exec.cutile import CUTILE_VERSION

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
    rust: bool = True  # the packing machine's Rust toolchain (cargo, rustc, the host's std)
    cache: bool = True  # reuse the pack cache (tileport.offline.cache); False: make every part afresh
    timeout: float = 1800.0


@dataclass
class PackResult:
    path: Path
    manifest: dict
    seconds: dict[str, float]
    cached: dict[str, bool] = field(default_factory=dict)  # which parts the pack cache served

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
    crate = work / "vendor-crate"
    (crate / "src").mkdir(parents=True)
    (crate / "src" / "lib.rs").write_text("", encoding="utf-8")
    (crate / "Cargo.toml").write_text(VENDOR_MANIFEST, encoding="utf-8")
    lock = _lock_text()
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


def _apt_candidate(package: str) -> str | None:
    """apt's candidate version of a package on this machine (local lists, no network), or None."""
    if not shutil.which("apt-cache"):
        return None
    res = run_command(["apt-cache", "policy", package], timeout=60)
    m = re.search(r"Candidate:\s*(\S+)", res.stdout or "")
    return m.group(1) if res.ok and m and m.group(1) != "(none)" else None


def _lock_text() -> str:
    from tileport.exec.cutile import pinned_lock

    return pinned_lock()


def _tool_version(path) -> str | None:
    return run_command([str(path), "--version"], timeout=30).stdout.strip() if path else None


def pack(dest: str | os.PathLike, opts: PackOptions | None = None, log=print) -> PackResult:
    opts = opts or PackOptions()
    check_options(opts)
    dest = Path(dest).absolute()
    check_destination(dest)
    root = repo_root()
    tc = resolve_toolchain()
    if tc.cargo is None:
        raise UserError("cargo not found: packing vendors the cutile crates, install Rust >= 1.89 (https://rustup.rs)")
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-{os.getpid()}-", dir=dest.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's 0700 would keep others from reading the bundle once renamed
    times: dict[str, float] = {}
    cached: dict[str, bool] = {}
    start = time.monotonic()
    refresh = not opts.cache

    def part(name: str, inputs: dict, make) -> tuple[list[str], dict]:
        t0 = time.monotonic()
        files, meta, hit = pack_cache.cached_part(name, inputs, staging, make, refresh=refresh, log=log)
        times[name], cached[name] = time.monotonic() - t0, hit
        if hit:
            log(f"  {name}: from the pack cache ({pack_cache.cache_root()})")
        return files, meta

    try:
        with tempfile.TemporaryDirectory(prefix="tileport-pack-") as work_s:
            work = Path(work_s)
            reqs = requirements(root)
            log(f"wheels for Python {opts.python_version} on {', '.join(opts.platforms)} ...")

            def make_wheels(out: Path) -> tuple[list[str], dict]:
                download_wheels(out / "wheels", reqs, opts)
                return [f"wheels/{w.name}" for w in sorted((out / "wheels").iterdir())], {}

            part("wheels", {"requirements": sorted(reqs), "python": opts.python_version, "implementation": "cp",
                            "platforms": expand_platforms(opts.platforms)}, make_wheels)
            t0 = time.monotonic()
            commit, dirty, nfiles = pack_source(root, staging / SRC_ARCHIVE)
            times["source"] = time.monotonic() - t0
            log(f"cargo vendor (cutile {CUTILE_VERSION}) ...")
            lock = _lock_text()
            cargo_v = _tool_version(tc.cargo)

            def make_vendor(out: Path) -> tuple[list[str], dict]:
                return [VENDOR_ARCHIVE], {"crates": vendor_crates(out / VENDOR_ARCHIVE, work, opts)}

            _, vmeta = part("crates", {"lock_sha256": hashlib.sha256(lock.encode()).hexdigest(),
                                       "manifest": VENDOR_MANIFEST, "cargo": cargo_v}, make_vendor)
            release = None
            if opts.gpu:
                gpu_wheels = sorted(w.name for dist in GPU_FILES for w in (staging / "wheels").glob(f"{dist}-*.whl"))

                def make_gpu(out: Path) -> tuple[list[str], dict]:
                    rel = pack_gpu(out / "wheels", out / "gpu")
                    return ([f"gpu/tileiras-{rel}.tar.gz"] if rel else []), {"release": rel}

                _, gmeta = part("gpu", {"wheels": gpu_wheels, "files": GPU_FILES}, make_gpu)
                release = gmeta.get("release")
            rust_tc, rust_why = (offline_rust.find(tc.rustc) if opts.rust else (None, "left out (--no-rust)"))
            if rust_tc is not None:
                log(f"Rust {rust_tc.version} ({rust_tc.host}) from {rust_tc.sysroot} ...")
                part("rust", {"rustc": rust_tc.verbose, "sysroot": str(rust_tc.sysroot), "cargo": cargo_v,
                              "members": [p.relative_to(rust_tc.sysroot).as_posix() for p in offline_rust.members(rust_tc)]},
                     lambda out: ([offline_rust.pack(rust_tc, out)], {}))
            elif opts.rust:
                log(f"Rust not packed: {rust_why}")
            bwrap_deb = None
            if opts.system:
                candidate = _apt_candidate("bubblewrap")

                def make_deb(out: Path) -> tuple[list[str], dict]:
                    name = fetch_bubblewrap(out / "system", opts)
                    return ([f"system/{name}"] if name else []), {"deb": name}

                if candidate:
                    _, dmeta = part("system", {"bubblewrap": candidate, "arch": os.uname().machine}, make_deb)
                    bwrap_deb = dmeta.get("deb")
        (staging / "install.sh").write_text(install_script(opts.python_version), encoding="utf-8")
        (staging / "install.sh").chmod(0o755)
        shutil.copyfile(offline.__file__, staging / "verify.py")
        t0 = time.monotonic()
        rust_meta = ({"version": rust_tc.version, "host": rust_tc.host, "archive": rust_tc.archive,
                      "packed_from": str(rust_tc.sysroot)} if rust_tc is not None else None)
        manifest = offline.write_manifest(staging, {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "tileport": {"version": __version__, "commit": commit, "dirty": dirty, "files": nfiles},
            "python": {"version": opts.python_version, "implementation": "cp", "platforms": opts.platforms},
            "versions": wheel_versions(staging / "wheels"),
            "cutile": {"version": CUTILE_VERSION, "crates": vmeta.get("crates"), "packed_with": cargo_v,
                       "lock_sha256": hashlib.sha256(lock.encode()).hexdigest()},
            "gpu": {"tileiras_release": release, "archive": f"gpu/tileiras-{release}.tar.gz" if release else None},
            "system": {"bubblewrap": bwrap_deb},
            "rust": rust_meta,
            "needs": {"rust": (f"bundled: Rust {rust_tc.version} for {rust_tc.host} (a C compiler/linker `cc` "
                               "stays the machine's)") if rust_tc else f">= 1.89 (cargo, rustc): {rust_why}",
                      "bubblewrap": "bwrap + prlimit (util-linux)",
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
    return PackResult(dest, manifest, times, cached)
