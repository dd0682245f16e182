"""`tileport offline pack DIR` (connected machine) / `tileport offline verify DIR` (either side).

pack writes one directory that installs and runs tileport with no network: `bash DIR/install.sh` there.
"""

from __future__ import annotations

import argparse
import json
import sys

from tileport.service.environment import bundle as offline


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("offline", help="make / check a bundle that installs tileport on an air-gapped machine",
                       description=__doc__.split("\n\n")[0] if __doc__ else None)
    osub = p.add_subparsers(dest="offline_command", metavar="ACTION", required=True)
    pk = osub.add_parser("pack", help="write the bundle (wheels, tileport tree, vendored crates, GPU files, install.sh)")
    pk.add_argument("dir", metavar="DIR", help="a new or empty directory for the bundle")
    pk.add_argument("--python-version", default="3.11", metavar="X.Y",
                    help="the air-gapped machine's Python (default 3.11)")
    pk.add_argument("--platform", dest="platforms", action="append", metavar="TAG",
                    help="wheel platform tag (repeatable; default manylinux_2_28_x86_64, older glibc tags included)")
    pk.add_argument("--no-gpu", action="store_true", help="leave out the GPU host's tileiras/ptxas/libnvvm archive")
    pk.add_argument("--no-system", action="store_true", help="leave out bubblewrap's .deb")
    pk.add_argument("--no-rust", action="store_true",
                    help="leave out this machine's Rust toolchain (the air-gapped machine then needs Rust >= 1.89)")
    pk.add_argument("--refresh", action="store_true",
                    help="make every part afresh instead of taking it from the pack cache (~/.cache/tileport/offline)")
    pk.add_argument("--json", action="store_true", help="print the manifest summary and timings as JSON")
    pk.set_defaults(func=run_pack)
    vf = osub.add_parser("verify", help="check every file of a bundle against its manifest (sha256)")
    vf.add_argument("dir", metavar="DIR")
    vf.set_defaults(func=run_verify)


def run_pack(args: argparse.Namespace) -> int:
    from tileport.service.environment import DEFAULT_PLATFORM, PackOptions, pack_bundle as pack

    opts = PackOptions(python_version=args.python_version, platforms=args.platforms or [DEFAULT_PLATFORM],
                       gpu=not args.no_gpu, system=not args.no_system, rust=not args.no_rust,
                       cache=not args.refresh)
    log = (lambda m: print(m, file=sys.stderr)) if args.json else print
    res = pack(args.dir, opts, log=log)
    m = res.manifest
    summary = {"path": str(res.path), "bytes": res.size, "files": len(m["files"]), "seconds": res.seconds,
               "python": m["python"], "tileport": m["tileport"], "cutile": m["cutile"], "gpu": m["gpu"],
               "system": m["system"], "rust": m["rust"], "cached": res.cached}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    v = m["versions"]
    hits = [k for k, v in res.cached.items() if v]
    print(f"bundle {res.path}: {res.size / 1e6:.0f} MB in {len(m['files'])} files, "
          f"packed in {res.seconds['total']:.0f} s" + (f" (from the pack cache: {', '.join(hits)})" if hits else ""))
    print(f"  Python {m['python']['version']} on {', '.join(m['python']['platforms'])}: {len(v)} wheels "
          f"(cuda-tile {v.get('cuda-tile', '?')}, tileiras {v.get('nvidia-cuda-tileiras', '?')})")
    print(f"  cutile {m['cutile']['version']}: {m['cutile']['crates']} crates vendored")
    print(f"  GPU host: {m['gpu']['archive'] or 'not packed'}; bubblewrap .deb: {m['system']['bubblewrap'] or 'not packed'}")
    rust = m["rust"]
    print(f"  Rust: {rust['version'] + ' (' + rust['archive'] + ')' if rust else 'not packed: ' + m['needs']['rust']}")
    print(f"on the air-gapped machine: bash {res.path}/install.sh [DEST]  (needs Python {m['python']['version']}"
          f"{', a C compiler (cc)' if rust else ', Rust >= 1.89'}; bring your own vLLM + weights)")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    m = offline.verify(args.dir)
    print(f"bundle OK: {len(m['files'])} files match {offline.MANIFEST} (tileport {m['tileport']['version']}, "
          f"Python {m['python']['version']})")
    return 0
