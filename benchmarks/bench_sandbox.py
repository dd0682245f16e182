"""What the sandbox costs (tileport.exec.sandbox): the same commands run confined and unconfined, alternating.

1. a trivial command (`true`): the fixed cost of prlimit + bwrap + namespaces;
2. a warm `cargo build` of a port's conversion crate where only the kernel changed (the writer's loop: the
   crate recompiles, the cutile tree is cached), confined (build profile) and unconfined;
3. the IR-dump binary (cutile's KernelCompiler on the CPU), confined (run profile) and unconfined.

    .venv/bin/python benchmarks/bench_sandbox.py [--port vector_add] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tileport.exec import sandbox  # noqa: E402
from tileport.exec.proc import run_command  # noqa: E402
from tileport.validators.rust import build as rb  # noqa: E402
from tileport.validators.rust.crate import crate_cache_root  # noqa: E402


def timed(fn) -> float:
    t0 = time.monotonic()
    res = fn()
    if not res.ok:
        raise SystemExit(f"bench: command failed ({res.returncode}): {res.stderr[-500:]}")
    return time.monotonic() - t0


def touch_kernel(layout) -> None:
    """Change the kernel (a comment with a counter) so cargo recompiles the conversion crate."""
    src = layout.kernel_rs.read_text()
    lines = [l for l in src.split("\n") if not l.startswith("// bench-sandbox ")]
    layout.kernel_rs.write_text("\n".join(lines) + f"\n// bench-sandbox {time.time_ns()}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", default="vector_add")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    st = sandbox.status()
    if not st.ok:
        print(f"bench: no sandbox here: {st.detail}", file=sys.stderr)
        return 2
    opts = rb.BuildOptions(cubins=False, disasm=False)
    tc = rb.resolve_toolchain(opts)
    layout = rb.prepare_crate(ROOT / "ports" / args.port, out=crate_cache_root() / f"bench-sandbox-{args.port}")
    env = rb.build_env(tc, opts)
    cargo = [str(tc.cargo), "build", "--message-format=json", "--locked", "--offline"]
    result = rb.RustBuildResult(crate=str(layout.root), ok=False, stage="cargo")
    exe = rb.run_cargo_build(layout, tc, opts, result)[layout.irdump_bin]  # warm once
    out = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    bprof, rprof = rb.build_profile(layout, tc, opts), rb.run_profile(layout, exe, out, tc)

    rows: dict[str, dict[str, list[float]]] = {k: {"confined": [], "unconfined": []}
                                               for k in ("true", "cargo_build", "ir_dump")}
    for _ in range(max(10, args.repeat)):
        rows["true"]["confined"].append(timed(lambda: sandbox.run_sandboxed(["true"], rprof, cwd=out)))
        rows["true"]["unconfined"].append(timed(lambda: run_command(["true"], cwd=out)))
    for _ in range(args.repeat):
        touch_kernel(layout)
        rows["cargo_build"]["confined"].append(timed(lambda: sandbox.run_sandboxed(
            cargo, bprof, cwd=layout.root, env=env, timeout=1200)))
        touch_kernel(layout)
        rows["cargo_build"]["unconfined"].append(timed(lambda: run_command(cargo, cwd=layout.root, env=env,
                                                                          timeout=1200)))
        rows["ir_dump"]["confined"].append(timed(lambda: sandbox.run_sandboxed(
            [exe, str(out)], rprof, cwd=layout.root, env=env, timeout=300)))
        rows["ir_dump"]["unconfined"].append(timed(lambda: run_command([exe, str(out)], cwd=layout.root, env=env,
                                                                       timeout=300)))
    summary = {}
    for name, r in rows.items():
        c, u = statistics.median(r["confined"]), statistics.median(r["unconfined"])
        summary[name] = {"confined_median_s": round(c, 3), "unconfined_median_s": round(u, 3),
                         "overhead_s": round(c - u, 3), "n": len(r["confined"])}
    if args.json:
        print(json.dumps({"port": args.port, "sandbox": st.backend, "results": summary}, indent=2))
    else:
        print(f"sandbox overhead ({st.backend}, port {args.port}, medians):")
        for name, s in summary.items():
            print(f"  {name:12s} confined {s['confined_median_s']:7.3f} s  unconfined {s['unconfined_median_s']:7.3f} s"
                  f"  overhead {s['overhead_s']:+.3f} s  (n={s['n']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
