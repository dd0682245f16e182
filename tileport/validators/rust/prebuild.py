"""Compile the cutile dependency tree ahead of time (scripts/setup.sh), with a progress line per crate.

Only the pinned dependencies are built (`cargo build -p cutile -p cutile-compiler` in a tileport-generated
crate, with the same lock, environment, features and target dir as every conversion build), so no port code
runs and the first conversion starts warm: its cargo build then recompiles only its own crate. Both profiles:
the dev one stage B's IR dumps build in, and the release one of the port's host library (`gpu/cdylib.py`), which
stages D and E load and time.

    python -m tileport.validators.rust.prebuild [--quiet]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from tileport.errors import UserError
from tileport.exec import offline, settings
from tileport.exec.cutile import dependencies_cached
from tileport.validators.rust.build import BuildOptions, build_env, deps_stamp, resolve_toolchain
from tileport.validators.rust.crate import crate_cache_root, write_crate
from tileport.validators.rust.spec import DumpSpec

# A minimal conversion crate: the dependency graph is the lock's, whatever the kernel.
KERNEL = """#[cutile::module]
pub mod prebuild {
    use cutile::core::*;
}
"""


def _crate():
    # no entries (a real spec needs one): this crate is never compiled itself, only its dependencies
    spec = DumpSpec.model_construct(module="prebuild", entries=[], targets=["sm_90"], bytecode_version=None,
                                    host=False)
    return write_crate(crate_cache_root() / "prebuild", spec, KERNEL)


def _count(cargo: str, root: Path, env: dict, argv_extra: list[str]) -> int:
    """How many packages the build compiles (cargo tree over the two roots, deduplicated)."""
    p = subprocess.run([cargo, "tree", *argv_extra, "-e", "normal,build", "--prefix", "none", "-p", "cutile",
                        "-p", "cutile-compiler"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    names = {line.split(" (")[0].strip() for line in p.stdout.splitlines() if line.strip()}
    return len(names)


def prebuild(progress: Callable[[str], None] = print, opts: BuildOptions | None = None) -> float:
    """Build the dependency tree into the shared target dir; returns seconds. Raises UserError on failure."""
    opts = opts or BuildOptions(cubins=False, disasm=False)
    tc = resolve_toolchain(opts)
    layout = _crate()
    env = build_env(tc, opts)
    extra = ["--locked"]
    vendored = offline.cargo_config()
    if vendored is not None:
        extra = ["--config", str(vendored), "--locked", "--offline"]
    elif not dependencies_cached():
        progress("prebuild: fetching the pinned cutile crates (cargo fetch --locked)")
        f = subprocess.run([str(tc.cargo), "fetch", "--locked"], cwd=layout.root, env=env, capture_output=True,
                           text=True, timeout=opts.cargo_timeout)
        if f.returncode != 0:
            raise UserError("prebuild: cargo fetch failed: " + (f.stderr.strip().splitlines() or ["?"])[-1])
    else:
        extra.append("--offline")
    opts.target_dir.mkdir(parents=True, exist_ok=True)
    total = _count(str(tc.cargo), layout.root, env, extra)
    jobs = opts.cargo_jobs or settings.cpu_budget()
    t0 = time.monotonic()
    built = fresh = 0
    for profile in PROFILES:
        n, f = _build_profile([str(tc.cargo), "build", *extra, *profile, "-p", "cutile", "-p", "cutile-compiler",
                               "--message-format=json", "-j", str(jobs)], layout.root, env, total, t0, progress)
        built, fresh = built + n, fresh + f
    secs = time.monotonic() - t0
    deps_stamp(tc, opts).touch()
    progress(f"prebuild: cutile dependency tree ready in {opts.target_dir} ({built} crates in {len(PROFILES)} "
             f"profiles, {fresh} already built, {secs:.0f} s)")
    return secs


PROFILES = ([], ["--release"])  # dev (stage B's builds), release (the port's host library)


def _build_profile(argv: list[str], root: Path, env: dict, total: int, t0: float,
                   progress: Callable[[str], None]) -> tuple[int, int]:
    """One profile's build of the tree, a line per crate compiled; (crates, of them already built)."""
    profile = "release" if "--release" in argv else "dev"
    seen: set[str] = set()
    fresh = 0
    proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact":
            continue
        pkg = msg.get("package_id", "")
        name = pkg.split("#", 1)[1] if "#" in pkg else pkg.split(" ", 1)[0]  # name@version
        if pkg in seen:
            continue
        seen.add(pkg)
        fresh += bool(msg.get("fresh"))
        if not msg.get("fresh"):
            progress(f"prebuild: compiled crate {len(seen)}/{max(total, len(seen))} ({profile}): {name} "
                     f"({time.monotonic() - t0:.0f} s)")
    err = proc.stderr.read() if proc.stderr else ""
    rc = proc.wait()
    if rc != 0:
        tail = [ln for ln in err.strip().splitlines() if ln.strip()][-3:]
        raise UserError(f"prebuild: cargo build ({profile}) of the cutile tree failed (rc {rc}): " + " | ".join(tail))
    return len(seen), fresh


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quiet", action="store_true", help="only the final line")
    args = ap.parse_args(argv)
    last = [""]

    def say(line: str) -> None:
        last[0] = line
        if not args.quiet or "ready" in line:
            print(line, flush=True)
    try:
        prebuild(say)
    except UserError as e:
        print(f"tileport: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
