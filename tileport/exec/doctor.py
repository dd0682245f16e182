"""`tileport doctor`: is every part of the toolchain here, new enough, and wired together?

Each check yields OK / MISSING / TOO OLD with a one-line fix. A part the requested work needs
being absent makes the command fail, so a run stops on a broken environment instead of guessing.
"""

from __future__ import annotations

import ctypes.util
import importlib.metadata
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import httpx

from tileport.config import Config
from tileport.exec import offline, sandbox
from tileport.exec.proc import run_command
from tileport.exec.toolchain import Toolchain, c_builtin_include_dir, from_config

OK, MISSING, TOO_OLD = "OK", "MISSING", "TOO OLD"

# Which parts each kind of work needs. "analyze" is the default job; GPU and model are optional here.
NEEDS: dict[str, tuple[str, ...]] = {
    "analyze": ("python", "cuda-tile", "tileiras", "tileirdisasm", "analysis-python"),
    "build-rust": ("python", "tileiras", "tileirdisasm", "cargo", "rustc", "cuda-headers", "libclang", "sandbox",
                   "offline"),
    "gpu": ("gpu",),
    "model": ("model-endpoint",),
}
SETUP_HINT = "run `bash scripts/setup.sh` (README, first line)"
MIN_CUDA_VERSION = 13020
MIN_RUST = (1, 89)
MIN_TILEIRAS = (13, 3)  # sm_90 support
CUDA_TILE_PIN = "1.7.0"


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""
    facts: dict = field(default_factory=dict)


def _version_tuple(text: str) -> tuple[int, ...]:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(g) for g in m.groups() if g is not None) if m else ()


def check_python() -> Check:
    v = sys.version_info
    status = OK if v >= (3, 11) else TOO_OLD
    return Check("python", status, f"{sys.executable} {v.major}.{v.minor}.{v.micro}",
                 "" if status == OK else "install Python >= 3.11")


def check_cuda_tile() -> Check:
    try:
        version = importlib.metadata.version("cuda-tile")
    except importlib.metadata.PackageNotFoundError:
        return Check("cuda-tile", MISSING, "not installed", SETUP_HINT)
    status = OK if _version_tuple(version) >= _version_tuple(CUDA_TILE_PIN) else TOO_OLD
    return Check("cuda-tile", status, f"{version} (pinned {CUDA_TILE_PIN})",
                 "" if status == OK else f"pip install cuda-tile=={CUDA_TILE_PIN}", {"version": version})


_PROBE = ("import importlib.metadata as m, json, sys\n"
          "def v(n):\n"
          "    try:\n        return m.version(n)\n"
          "    except m.PackageNotFoundError:\n        return None\n"
          "print(json.dumps({'python': sys.version.split()[0], 'torch': v('torch'), 'cuda-tile': v('cuda-tile'),"
          " 'pydantic': v('pydantic')}))")
ANALYSIS_PYTHON_HINT = ("set [analysis] python = \"/path/to/python\" in tileport.toml or pass tileport analyze --python "
                        "PATH (an interpreter with torch, cuda-tile and pydantic; scripts/setup-torch-venv.sh makes one)")


def check_analysis_python(config: Config) -> Check:
    """The interpreter that imports ops in stage A: which one, and whether it has torch and cuda-tile."""
    import json

    py = config.analysis.python or sys.executable
    where = "[analysis] python" if config.analysis.python else "tileport's own"
    res = run_command([py, "-c", _PROBE], timeout=60)
    try:
        facts = json.loads(res.stdout.strip().splitlines()[-1]) if res.ok else None
    except (json.JSONDecodeError, IndexError):
        facts = None
    if facts is None:
        return Check("analysis-python", MISSING, f"{py} ({where}) does not run", ANALYSIS_PYTHON_HINT)
    facts["path"] = py
    detail = (f"{py} ({where}, Python {facts['python']}): torch {facts['torch'] or 'no'}, "
              f"cuda-tile {facts['cuda-tile'] or 'no'}, pydantic {facts['pydantic'] or 'no'}")
    if not facts["cuda-tile"] or not facts["pydantic"]:
        return Check("analysis-python", MISSING, detail, f"pip install cuda-tile=={CUDA_TILE_PIN} pydantic there, or "
                     + ANALYSIS_PYTHON_HINT, facts)
    if not facts["torch"]:
        return Check("analysis-python", OK, detail + " (ops that import torch at the top, and launch capture, need one "
                     "with torch)", ANALYSIS_PYTHON_HINT, facts)
    return Check("analysis-python", OK, detail, "", facts)


_TRITON_PROBE = ("import importlib.util, json, os\n"
                 "try:\n import triton; v = triton.__version__\nexcept Exception: v = None\n"
                 "b = False\nif v:\n try: b = importlib.util.find_spec('triton.backends.cutile') is not None\n"
                 " except Exception: b = False\n"
                 "print(json.dumps({'triton': v, 'backend': b, 'enabled': os.environ.get('ENABLE_TILE') == '1'}))")
TRITON_BACKEND_FIX = ("install the Triton-to-Tile-IR backend (github.com/triton-lang/Triton-to-tile-IR, "
                      "triton.backends.cutile) in the analysis interpreter and set ENABLE_TILE=1")


def check_triton_backend(config: Config) -> Check:
    """Triton in the analysis interpreter, and whether a Triton-to-Tile-IR backend gives a Triton reference Tile IR
    (without one the IR gate records the gap "no Tile IR for the Triton reference"). Optional: no work needs it."""
    import json

    py = config.analysis.python or sys.executable
    res = run_command([py, "-c", _TRITON_PROBE], timeout=60)
    try:
        facts = json.loads(res.stdout.strip().splitlines()[-1]) if res.ok else None
    except (json.JSONDecodeError, IndexError):
        facts = None
    if not facts or not facts.get("triton"):
        return Check("triton-tileir", MISSING, f"no triton in {py} (Triton ops cannot be analysed)",
                     "bash scripts/setup-torch-venv.sh and set [analysis] python to its interpreter", facts or {})
    if not facts["backend"]:
        return Check("triton-tileir", MISSING, f"triton {facts['triton']}, no Tile IR backend: a Triton reference "
                     "has no Tile IR (the IR gate records the gap)", TRITON_BACKEND_FIX, facts)
    if not facts["enabled"]:
        return Check("triton-tileir", MISSING, f"triton {facts['triton']} with triton.backends.cutile, but "
                     "ENABLE_TILE is not 1", "export ENABLE_TILE=1", facts)
    return Check("triton-tileir", OK, f"triton {facts['triton']} with triton.backends.cutile (ENABLE_TILE=1)", "", facts)


def check_tileiras(tc: Toolchain, targets: list[str]) -> Check:
    if tc.tileiras is None:
        return Check("tileiras", MISSING, "not found", 'pip install "cuda-tile[tileiras]" or set [toolchain] tileiras')
    ver = run_command([tc.tileiras, "--version"], timeout=30)
    versions = run_command([tc.tileiras, "--list-versions"], timeout=30)
    helptext = run_command([tc.tileiras, "--help"], timeout=30)
    if not ver.ok:
        return Check("tileiras", MISSING, f"{tc.tileiras} does not run (exit {ver.returncode})",
                     "reinstall nvidia-cuda-tileiras, nvidia-nvvm and nvidia-cuda-nvcc of one release")
    m = re.search(r"release (\d+\.\d+)", ver.stdout)
    release = m.group(1) if m else "?"
    bytecode = versions.stdout.split()
    gpus = set(re.findall(r"=(sm_\d+)\b", helptext.stdout))
    accepted = {t: t in gpus for t in targets}
    facts = {"path": str(tc.tileiras), "release": release, "bytecode_versions": bytecode, "targets": accepted}
    detail = (f"{tc.tileiras} release {release}; bytecode {', '.join(bytecode) or '?'}; "
              + ", ".join(f"{t} {'yes' if ok else 'NO'}" for t, ok in accepted.items()))
    if _version_tuple(release) < MIN_TILEIRAS or not all(accepted.values()):
        return Check("tileiras", TOO_OLD, detail, 'pip install -U "cuda-tile[tileiras]" (sm_90 needs tileiras >= 13.3)', facts)
    return Check("tileiras", OK, detail, "", facts)


def check_tileirdisasm(tc: Toolchain) -> Check:
    if tc.tileirdisasm is None:
        return Check("tileirdisasm", MISSING, "not found", 'pip install "cuda-tile[tileiras]" (tileiras >= 13.4 ships it)')
    ver = run_command([tc.tileirdisasm, "--version"], timeout=30)
    if not ver.ok:
        return Check("tileirdisasm", MISSING, f"{tc.tileirdisasm} does not run", "reinstall nvidia-cuda-tileiras")
    m = re.search(r"release (\d+\.\d+)", ver.stdout)
    return Check("tileirdisasm", OK, f"{tc.tileirdisasm} release {m.group(1) if m else '?'}")


def _tool_version(name: str, path: Path | None, minimum: tuple[int, int]) -> Check:
    if path is None:
        return Check(name, MISSING, "not found", "install Rust >= 1.89 with rustup (https://rustup.rs)")
    out = run_command([path, "--version"], timeout=30)
    v = _version_tuple(out.stdout)
    if v[:2] < minimum:
        return Check(name, TOO_OLD, out.stdout.strip(), "rustup update stable (cutile needs Rust >= 1.89)")
    return Check(name, OK, f"{path} {out.stdout.strip()}")


def check_cuda_headers(tc: Toolchain) -> Check:
    if tc.cuda_toolkit is None:
        return Check("cuda-headers", MISSING, "no CUDA toolkit path", "pip install nvidia-cuda-runtime nvidia-curand, or set CUDA_TOOLKIT_PATH")
    inc = tc.cuda_toolkit / "include"
    cuda_h = inc / "cuda.h"
    if not cuda_h.is_file():
        return Check("cuda-headers", MISSING, f"{cuda_h} not found", "pip install nvidia-cuda-runtime (CUDA >= 13.2)")
    m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", cuda_h.read_text(errors="replace"))
    version = int(m.group(1)) if m else 0
    if not (inc / "curand.h").is_file():
        return Check("cuda-headers", MISSING, f"CUDA_VERSION {version}; {inc}/curand.h missing", "pip install nvidia-curand")
    if version < MIN_CUDA_VERSION:
        return Check("cuda-headers", TOO_OLD, f"CUDA_VERSION {version} < {MIN_CUDA_VERSION} in {cuda_h}",
                     "pip install -U nvidia-cuda-runtime nvidia-curand (CUDA >= 13.2)")
    return Check("cuda-headers", OK, f"{inc} CUDA_VERSION {version}, curand.h present", facts={"cuda_version": version})


def check_libclang(tc: Toolchain) -> Check:
    """bindgen needs libclang and the compiler's builtin headers (stddef.h), which the wheel lacks."""
    lib = None
    if tc.libclang_dir and any(tc.libclang_dir.glob("libclang*.so*")):
        lib = str(tc.libclang_dir)
    else:
        lib = ctypes.util.find_library("clang")
    if not lib:
        return Check("libclang", MISSING, "libclang not found", "pip install libclang, or apt-get install libclang-dev")
    builtin = c_builtin_include_dir()
    if builtin is None:
        return Check("libclang", MISSING, f"{lib}, but no builtin headers (stddef.h) for bindgen",
                     "apt-get install gcc (or libclang-dev)")
    return Check("libclang", OK, f"{lib}; builtin headers {builtin}")


def check_cutile_crates() -> Check:
    """The pinned cutile crates in cargo's cache (offline builds) and the shared dependency build (fast builds)."""
    from tileport.exec import settings
    from tileport.exec.cutile import CUTILE_VERSION, dependencies_cached

    target = settings.cargo_target_dir()
    built = any((target / "debug" / "deps").glob("libcutile_compiler-*.rlib"))
    vendor = offline.vendor_dir()
    if vendor is not None and dependencies_cached():
        detail = (f"cutile {CUTILE_VERSION} vendored in {vendor} (offline bundle); dependency build in {target} "
                  + ("ready" if built else "not built yet"))
        return Check("cutile-crates", OK, detail, "" if built else "first build-rust compiles the crates (~3-5 min)",
                     {"target_dir": str(target), "built": built, "vendored": str(vendor)})
    if not dependencies_cached():
        return Check("cutile-crates", MISSING, f"cutile {CUTILE_VERSION} not in cargo's cache (air-gapped builds fail)",
                     "run `tileport build-rust --fetch ports/vector_add` once with network (~3-5 min)")
    detail = f"cutile {CUTILE_VERSION} cached; dependency build in {target} " + ("ready" if built else "not built yet")
    return Check("cutile-crates", OK, detail, "" if built else "first build-rust compiles the crates (~3-5 min)",
                 {"target_dir": str(target), "built": built})


def check_sandbox(config: Config) -> Check:
    """bubblewrap, probed for real: model-written code is built and run only inside it."""
    st = sandbox.status()
    if st.ok:
        return Check("sandbox", OK, f"{st.backend} at {st.path}: no network, read-only fs, limits",
                     facts={"backend": st.backend})
    if not config.sandbox.require:
        return Check("sandbox", OK, f"NONE: model-written code runs UNCONFINED ([sandbox] require = false); {st.detail}",
                     "install bubblewrap and remove `[sandbox] require = false`", {"backend": "none"})
    return Check("sandbox", MISSING, st.detail.split(":")[0], st.detail.split(": ", 1)[-1])


OFFLINE_MODEL_HINT = ("air-gapped: bring a vLLM install and the model weights, then `tileport model serve --model "
                      "PATH` (HF_HUB_OFFLINE=1) and verify with `tileport model status`")


def check_offline() -> Check:
    """An install from an offline bundle: its versions, that they are what is installed, and that nothing needs
    the network (pip had no index; every locked crate is vendored and cargo is pointed at it)."""
    record = offline.installed()
    if record is None:
        return Check("offline", OK, "connected install (not from an offline bundle); `tileport offline pack DIR` "
                     "makes one for an air-gapped machine", facts={"bundle": None})
    versions = record.get("versions") or {}
    drift = []
    for dist in ("cuda-tile", "nvidia-cuda-tileiras", "nvidia-cuda-runtime", "libclang"):
        want = versions.get(dist)
        try:
            have = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if want and have != want:
            drift.append(f"{dist} {have or 'missing'} (bundle {want})")
    from tileport.exec.cutile import pinned_lock

    lock = pinned_lock()
    config, vendor = offline.cargo_config(), offline.vendor_dir()
    missing = offline.missing_vendored(lock, vendor) if vendor else ["(vendor dir)"]
    tp = record.get("tileport") or {}
    rust, rust_dir = record.get("rust") or None, offline.rust_dir()
    facts = {"bundle": record.get("bundle"), "installed_at": record.get("installed_at"), "tileport": tp,
             "python": record.get("python"), "versions": versions, "cutile": record.get("cutile"),
             "gpu": record.get("gpu"), "cargo_config": str(config) if config else None,
             "rust": rust, "rust_dir": str(rust_dir) if rust_dir else None,
             "missing_crates": missing, "drift": drift, "network_needed": bool(missing or config is None)}
    where = (f"bundle {record.get('bundle')} (tileport {tp.get('version', '?')} {str(tp.get('commit') or '?')[:10]}, "
             f"packed {record.get('created', '?')}, installed {record.get('installed_at', '?')}): cuda-tile "
             f"{versions.get('cuda-tile', '?')}, tileiras {versions.get('nvidia-cuda-tileiras', '?')}, cutile "
             f"{(record.get('cutile') or {}).get('version', '?')}, "
             + (f"Rust {rust.get('version', '?')} bundled" if rust else "Rust not bundled (bring Rust >= 1.89)"))
    if rust and rust_dir is None:
        return Check("offline", MISSING, f"{where}; the bundled Rust is not installed (no {record.get('dest')}"
                     "/.offline/rust/bin/cargo)", "run the bundle's install.sh again (it extracts rust/)", facts)
    if config is None or missing:
        return Check("offline", MISSING, f"{where}; cargo would need the network: "
                     + (f"{len(missing)} locked crate(s) not vendored ({', '.join(missing[:3])})" if missing
                        else "no cargo config with the vendored sources"),
                     "run the bundle's install.sh again (it restores DEST/.offline/cargo)", facts)
    if drift:
        return Check("offline", TOO_OLD, f"{where}; installed differs from the bundle: {'; '.join(drift)}",
                     "run the bundle's install.sh again", facts)
    return Check("offline", OK, f"{where}; no network needed (wheels installed with --no-index, "
                 f"{(record.get('cutile') or {}).get('crates', '?')} crates vendored, cargo --config {config})",
                 facts=facts)


def check_gpu() -> Check:
    smi = shutil.which("nvidia-smi")
    if smi:
        out = run_command([smi, "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"], timeout=30)
        if out.ok and out.stdout.strip():
            return Check("gpu", OK, out.stdout.strip().replace("\n", "; "))
    if ctypes.util.find_library("cuda"):
        return Check("gpu", OK, "libcuda present (nvidia-smi unavailable)")
    return Check("gpu", MISSING, "no NVIDIA driver or GPU", "only the correctness and performance gates need one; run them on a GPU machine")


def check_model(config: Config, client: httpx.Client | None = None) -> Check:
    url = config.model.base_url
    try:
        with (client or httpx.Client(timeout=3)) as c:
            r = c.get(f"{url}/models", headers={"Authorization": f"Bearer {config.model.api_key}"})
        r.raise_for_status()
        ids = [m.get("id") for m in r.json().get("data", [])]
        return Check("model-endpoint", OK, f"{url} serves {', '.join(map(str, ids)) or 'no models'}")
    except (httpx.HTTPError, ValueError) as e:
        fix = "start one with `tileport model serve --model PATH` or set [model] base_url"
        return Check("model-endpoint", MISSING, f"{url} not reachable ({type(e).__name__})",
                     OFFLINE_MODEL_HINT + ", or set [model] base_url" if offline.installed() else fix)


def run_checks(config: Config, tc: Toolchain | None = None) -> list[Check]:
    tc = tc or from_config(config)
    steps: list[Callable[[], Check]] = [
        check_python,
        check_cuda_tile,
        lambda: check_analysis_python(config),
        lambda: check_triton_backend(config),
        lambda: check_tileiras(tc, config.targets),
        lambda: check_tileirdisasm(tc),
        lambda: _tool_version("cargo", tc.cargo, MIN_RUST),
        lambda: _tool_version("rustc", tc.rustc, MIN_RUST),
        lambda: check_cuda_headers(tc),
        lambda: check_libclang(tc),
        check_cutile_crates,
        lambda: check_sandbox(config),
        check_offline,
        check_gpu,
        lambda: check_model(config),
    ]
    return [step() for step in steps]


def failing(checks: list[Check], work: list[str]) -> list[Check]:
    """The checks that are not OK among the parts `work` needs."""
    needed = {part for w in work for part in NEEDS[w]}
    return [c for c in checks if c.name in needed and c.status != OK]


def as_json(checks: list[Check]) -> list[dict]:
    return [asdict(c) for c in checks]
