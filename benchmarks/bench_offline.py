"""What an offline bundle costs: its size (per part), the pack time cold (`--refresh`: every part made afresh,
pip's and cargo's own download caches still apply) and warm (every part but the tileport tree from the pack
cache), the offline install time, and (with --build) the first `tileport build-rust ports/vector_add` from the
vendored crates with the bundled Rust, all without network on the install side.

    .venv/bin/python benchmarks/bench_offline.py [--keep DIR] [--build] [--json]

The install runs `bash install.sh` inside `unshare -n` (a network namespace with no network) when run as root,
else plainly (pip --no-index, cargo --offline: it needs none either way). --build uses a fresh cargo target dir,
so it measures the cold build of the vendored cutile tree (~3-5 min on 2 idle cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> float:
    t0 = time.monotonic()
    res = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv[:4])} failed ({res.returncode}): {(res.stderr or res.stdout)[-800:]}")
    return time.monotonic() - t0


def isolated(argv: list[str]) -> list[str]:
    if os.geteuid() == 0 and shutil.which("unshare"):
        return ["unshare", "-n", *argv]
    return argv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", metavar="DIR", help="work here and keep the bundle and install (default: a temp dir)")
    ap.add_argument("--build", action="store_true", help="also time the first build-rust of ports/vector_add")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tileport-bench-offline-"))
    work.mkdir(parents=True, exist_ok=True)
    bundle, warm, dest = work / "bundle", work / "bundle-warm", work / "install"
    for p in (bundle, warm, dest):
        shutil.rmtree(p, ignore_errors=True)
    figures: dict = {"cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}

    pack = [sys.executable, "-m", "tileport", "offline", "pack"]
    figures["pack_cold_s"] = round(run([*pack, str(bundle), "--refresh"], cwd=ROOT), 1)
    figures["pack_warm_s"] = round(run([*pack, str(warm)], cwd=ROOT), 1)
    shutil.rmtree(warm, ignore_errors=True)
    manifest = json.loads((bundle / "manifest.json").read_text())
    parts: dict[str, int] = {}
    for rel, info in manifest["files"].items():
        part = rel.split("/", 1)[0] if "/" in rel else "scripts"  # wheels src cargo gpu rust system
        parts[part] = parts.get(part, 0) + int(info["size"])
    figures["bundle_mb"] = round(sum(parts.values()) / 1e6, 1)
    figures["parts_mb"] = {k: round(v / 1e6, 1) for k, v in sorted(parts.items())}
    figures["files"] = len(manifest["files"])

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHONPATH", "CARGO", "RUSTUP"))}
    # no Rust on PATH: the install (and --build) have only the bundle's
    env.update(PYTHON=sys.executable, PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    figures["isolated"] = os.geteuid() == 0
    figures["install_s"] = round(run(isolated(["bash", str(bundle / "install.sh"), str(dest)]), env=env), 1)

    if args.build:
        tp = str(dest / ".venv" / "bin" / "tileport")
        benv = {**env, "TILEPORT_CARGO_TARGET": str(work / "cargo-target"), "TILEPORT_CACHE_DIR": str(work / "cache"),
                "CARGO_HOME": str(work / "empty-cargo-home"), "RUSTUP_HOME": str(work / "empty-cargo-home")}
        (work / "empty-cargo-home").mkdir(exist_ok=True)
        build = isolated([tp, "build-rust", "ports/vector_add", "--out", str(work / "crate")])
        figures["first_build_rust_s"] = round(run(build, env=benv, cwd=dest), 1)
        figures["warm_build_rust_s"] = round(run(build, env=benv, cwd=dest), 1)

    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"bundle: {figures['bundle_mb']} MB in {figures['files']} files "
              f"({', '.join(f'{k} {v} MB' for k, v in figures['parts_mb'].items())})")
        print(f"pack: cold {figures['pack_cold_s']} s, warm {figures['pack_warm_s']} s (pack cache)   "
              f"offline install: {figures['install_s']} s "
              f"({'unshare -n' if figures['isolated'] else 'not isolated'}; {figures['cores']} cores, "
              f"load {figures['load_avg_1m']})")
        if args.build:
            print(f"build-rust ports/vector_add from the vendored crates: first {figures['first_build_rust_s']} s, "
                  f"warm {figures['warm_build_rust_s']} s")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
