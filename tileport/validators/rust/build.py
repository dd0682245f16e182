"""Build one conversion crate and turn it into evidence: cargo build -> IR dump -> tileirdisasm -> tileiras.

Every step runs through `tileport.exec.proc.run_command` (time limit, process-group kill, capped output) inside the
crate directory, with `Toolchain.cargo_env()` (pip CUDA headers, pip libclang, pip tileiras, CUDA_HOME unset) and
one CARGO_TARGET_DIR shared by all conversions (TILEPORT_CARGO_TARGET, default ~/.cache/tileport/cargo-target):
the cutile dependency tree is compiled once, a changed kernel recompiles only the conversion crate.

The result is a `RustBuildResult`: one diagnostics list (rustc, cutile JIT, tileiras, policy), the job outcomes,
artifact hashes and the exact commands with exit codes.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, Field

from tileport.exec import settings, tileir
from tileport.exec import offline, sandbox
from tileport.exec import toolchain as toolchain_mod
from tileport.errors import EnvironmentBlocked, UserError
from tileport.exec.cutile import dependencies_cached
from tileport.exec.proc import CommandResult, in_scope, run_command
from tileport.records import ArtifactRecord, CommandRecord
from tileport.validators.rust import diagnostics as dg
from tileport.validators.rust.crate import (CUTILE_VERSION, HOST_FILE, KERNEL_FILE, CrateLayout, default_crate_dir, open_crate,
                                 write_crate)
from tileport.validators.rust.policy import check_crate, check_port_dir, read_plain
from tileport.validators.rust.spec import SPEC_FILENAME, job_stem, load_spec

TARGET_DIR_ENV = settings.CARGO_TARGET


def shared_target_dir() -> Path:
    """The CARGO_TARGET_DIR every conversion shares (outside any clone)."""
    return settings.cargo_target_dir()


@dataclass
class BuildOptions:
    target_dir: Path = field(default_factory=shared_target_dir)
    offline: bool | None = None  # None: --offline once the pinned crates are in the cargo registry cache
    cargo_timeout: float = 1200.0  # a cold dependency build takes ~3-5 min on 2 cores
    dump_timeout: float = 300.0
    tool_timeout: float = 300.0  # per tileiras / tileirdisasm call
    disasm: bool = True
    cubins: bool = True
    opt_level: int = 3
    deny_unsafe: bool = False  # refuse `unsafe` in kernel.rs (allowed by default; see tileport.validators.rust.policy)
    output_cap: int = 1 << 20
    sandbox_required: bool = True  # config [sandbox] require: False lets model-written code run unconfined
    artifacts_dir: Path | None = None  # default: <crate>/artifacts
    bytecode_version: str | None = None  # CUTILE_BYTECODE_VERSION when the spec names none (config: 13.4)
    toolchain: toolchain_mod.Toolchain | None = None  # default: toolchain.resolve()
    # Held around `cargo build` only (not the IR dump or tileiras), e.g. the runner's cargo semaphore; a wait on
    # it is logged as a wait and timed (timings["cargo_lock_wait"]).
    cargo_slot: Any = None
    cargo_jobs: int | None = None  # cargo -j; None: the process's CPU budget (settings.cpu_budget())
    log: Callable[[str], None] | None = None  # progress lines (the stage's ctx.log): waits, steps, k/n

    def say(self, msg: str) -> None:
        if self.log is not None:
            try:
                self.log(msg)
            except Exception:  # a progress line never fails a build
                pass

    @classmethod
    def of(cls, config, **overrides) -> "BuildOptions":
        """The options a config implies (its toolchain, bytecode version and sandbox rule): the one place they are
        assembled; `overrides` for what a caller decides itself (cubins, disasm, timeouts, artifacts_dir)."""
        base = dict(toolchain=toolchain_mod.from_config(config), bytecode_version=config.toolchain.bytecode_version,
                    sandbox_required=config.sandbox.require)
        return cls(**{**base, **overrides})


class JobResult(BaseModel):
    entry: str
    variant: str
    target: str
    ok: bool
    seconds: float = 0.0
    bytecode: str | None = None  # .tileirbc from cutile's KernelCompiler
    cutile_ir: str | None = None  # cutile's own IR printer (value names differ from tileirdisasm)
    tileir_text: str | None = None  # tileirdisasm of the bytecode: compare this with the reference's
    cubin: str | None = None


class RustBuildResult(BaseModel):
    crate: str
    ok: bool
    stage: str  # the last stage that ran: policy | cargo | ir-dump | tileiras | done
    diagnostics: list[dg.Diagnostic] = Field(default_factory=list)
    jobs: list[JobResult] = Field(default_factory=list)
    artifacts: list[ArtifactRecord] = Field(default_factory=list)
    commands: list[CommandRecord] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    rebuilt: list[str] = Field(default_factory=list)  # crates cargo recompiled (not fresh): shows the cache worked
    cutile_version: str = CUTILE_VERSION

    @property
    def errors(self) -> list[dg.Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


# ------------------------------------------------------------------------------------------------------- inputs


class PortRefused(UserError):
    """The port directory holds links or special files: refused before anything in it is read."""

    def __init__(self, message: str, diagnostics: list[dg.Diagnostic] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


def prepare_crate(source: str | Path, *, spec_path: str | Path | None = None,
                  out: str | Path | None = None) -> CrateLayout:
    """Resolve what the user pointed at into a conversion crate.

    - a crate dir tileport generated (has tileport-spec.json): used in place;
    - a dir with kernel.rs and spec.json / spec.toml (and host.rs when the spec says host = true), or a kernel.rs
      file with --spec: a crate is generated at `out` (default ~/.cache/tileport/crates/<name>-<hash>).
    """
    src = Path(source)
    if not src.exists() and not src.is_symlink():
        raise UserError(f"{src} does not exist")
    if src.is_symlink():
        raise PortRefused(f"{src} is a symbolic link; pass the port directory itself (links are not followed)")
    if src.is_dir():
        refused = check_port_dir(src)
        if refused:
            raise PortRefused(f"{src}: " + "; ".join(d.message for d in refused), refused)
    if src.is_dir() and (src / SPEC_FILENAME).is_file() and spec_path is None:
        return open_crate(src)
    if src.is_dir():
        kernel = src / "kernel.rs"
        if spec_path is None:
            spec_path = next((src / n for n in ("spec.json", "spec.toml") if (src / n).is_file()), None)
        base = src
    else:
        kernel, base = src, src.parent
    if not kernel.is_file():
        raise UserError(f"{src}: expected a tileport crate ({SPEC_FILENAME}) or a kernel.rs with a spec")
    if spec_path is None:
        raise UserError(f"{src}: no spec.json / spec.toml next to {kernel.name}; pass --spec")
    spec = load_spec(spec_path)
    host = base / "host.rs"
    try:
        kernel_src = read_plain(kernel).decode("utf-8")
        host_src = read_plain(host).decode("utf-8") if spec.host and host.is_file() else None
    except UnicodeDecodeError as e:
        raise UserError(f"cannot read {kernel} / {host.name}: not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise UserError(f"cannot read {kernel} / {host.name}: {e.strerror or e}") from None
    if spec.host and host_src is None:
        raise UserError(f"spec has host = true but {base / 'host.rs'} is missing")
    return write_crate(out or default_crate_dir(base), spec, kernel_src, host_src)


# -------------------------------------------------------------------------------------------------------- build


def resolve_toolchain(opts: BuildOptions) -> toolchain_mod.Toolchain:
    """The tools this build needs, or EnvironmentBlocked naming what is missing (a BLOCKED verdict, not a guess)."""
    tc = opts.toolchain or toolchain_mod.resolve()
    missing = []
    if tc.cargo is None:
        missing.append("cargo (install Rust >= 1.89)")
    if tc.cuda_toolkit is None or not (tc.cuda_toolkit / "include" / "cuda.h").is_file():
        missing.append("CUDA >= 13.2 headers (pip install nvidia-cuda-runtime nvidia-curand, or CUDA_TOOLKIT_PATH)")
    elif not (tc.cuda_toolkit / "include" / "curand.h").is_file():
        missing.append(f"curand.h under {tc.cuda_toolkit}/include (pip install nvidia-curand)")
    if tc.libclang_dir is None:
        missing.append("libclang (pip install libclang, or LIBCLANG_PATH)")
    if opts.cubins and tc.tileiras is None:
        missing.append("tileiras (pip install nvidia-cuda-tileiras, or CUTILE_TILEIRAS_PATH)")
    if opts.disasm and tc.tileirdisasm is None:
        missing.append("tileirdisasm (ships with tileiras >= 13.4)")
    if missing:
        raise EnvironmentBlocked("cannot build Rust ports, missing: " + "; ".join(missing))
    return tc


def build_env(tc: toolchain_mod.Toolchain, opts: BuildOptions, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = tc.cargo_env()
    env["CARGO_TARGET_DIR"] = str(opts.target_dir)
    env["CARGO_TERM_COLOR"] = "never"
    env.update(extra or {})
    return env


def _record(result: RustBuildResult, cmd: CommandResult) -> CommandResult:
    result.commands.append(cmd.record)
    return cmd


def _timeout_diag(what: str, cmd: CommandResult, limit: float) -> dg.Diagnostic:
    return dg.Diagnostic(source=dg.DiagnosticSource.TILEPORT, level="error", code="TP-TIMEOUT",
                         message=f"{what} did not finish within {limit:g} s and was killed",
                         rendered=(cmd.stderr or "")[-2000:])


def build_profile(layout: CrateLayout, tc: toolchain_mod.Toolchain, opts: BuildOptions) -> sandbox.Profile:
    """cargo on model-written code: writes only the crate and the shared target dir; no network."""
    return sandbox.Profile("cargo-build", writable=(layout.root, opts.target_dir.resolve()),
                           readable=_toolchain_paths(tc), limits=sandbox.BUILD_LIMITS)


def run_profile(layout: CrateLayout, exe: str | Path, out_dir: Path, tc: toolchain_mod.Toolchain) -> sandbox.Profile:
    """A binary built from model-written code: writes only its artifacts dir; reads its crate, itself and the
    toolchain (the rest of $HOME hidden); no network."""
    return sandbox.Profile("run-model-binary", writable=(out_dir,),
                           readable=(layout.root, Path(exe), *_toolchain_paths(tc)), limits=sandbox.RUN_LIMITS)


def _toolchain_paths(tc: toolchain_mod.Toolchain) -> tuple[Path, ...]:
    parts = [tc.cuda_toolkit, tc.libclang_dir, *tc.build_inputs(), tc.tileiras.parent if tc.tileiras else None,
             Path(tc.cargo).parent if tc.cargo else None]
    vendored = offline.cargo_config()
    if vendored is not None:  # the bundle's vendored crates and cargo config (may live under the hidden $HOME)
        parts.append(vendored.parent)
    parts.append(offline.rust_dir())  # the bundle's Rust toolchain: bin/ and the lib/ rustc loads
    return sandbox.toolchain_readable(*parts)


def fetch_dependencies(layout: CrateLayout, tc: toolchain_mod.Toolchain, opts: BuildOptions,
                       result: RustBuildResult) -> bool:
    """`cargo fetch --locked` outside the sandbox (it needs the network): it reads only tileport's own manifest
    and lock (checked by the policy), downloads the pinned crates and runs nothing from them."""
    cmd = _record(result, run_command([str(tc.cargo), "fetch", "--locked"], cwd=layout.root,
                                      env=build_env(tc, opts), timeout=opts.cargo_timeout,
                                      output_cap=opts.output_cap))
    if not cmd.ok:
        result.diagnostics.append(dg.cargo_failure(cmd.stderr, cmd.returncode))
    return cmd.ok


def run_cargo_build(layout: CrateLayout, tc: toolchain_mod.Toolchain, opts: BuildOptions,
                    result: RustBuildResult) -> dict[str, str]:
    """cargo build in the sandbox (offline: dependencies are fetched first, outside it); fills diagnostics;
    returns {binary name: executable path} of the crate's binaries."""
    argv = [str(tc.cargo), "build", "--message-format=json", "--locked", "--offline"]
    online = not (opts.offline if opts.offline is not None else dependencies_cached())
    vendored = offline.cargo_config()
    if vendored is not None:  # an offline install: crates.io replaced by the bundle's vendored sources
        argv[1:1] = ["--config", str(vendored)]
        online = False
        missing = offline.missing_vendored((layout.root / "Cargo.lock").read_text(encoding="utf-8"),
                                           offline.vendor_dir() or vendored.parent / "vendor")
        if missing:  # cargo would say "no matching package" after resolving; name the crate and the fix first
            result.diagnostics.append(dg.Diagnostic(
                source=dg.DiagnosticSource.TILEPORT, level="error", code="TP-DEPS-MISSING",
                message=f"the locked crate {missing[0]} is not among the offline install's vendored crates "
                        f"({vendored.parent / 'vendor'})" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                notes=["help: run the bundle's install.sh again (it restores DEST/.offline/cargo)"]))
            return {}
    if online and not fetch_dependencies(layout, tc, opts, result):
        return {}
    argv += ["-j", str(opts.cargo_jobs or settings.cpu_budget())]
    stamp = deps_stamp(tc, opts)
    with _held(opts.cargo_slot, opts, result):
        if not stamp.is_file():
            opts.say("compiling the cutile dependency tree (first build with these inputs: minutes; "
                     "scripts/setup.sh does it ahead)")
        opts.say(f"cargo build of the port crate ({opts.cargo_jobs or settings.cpu_budget()} jobs)")
        t0 = time.monotonic()
        cmd = _record(result, sandbox.run_sandboxed(argv, build_profile(layout, tc, opts), cwd=layout.root,
                                                    env=build_env(tc, opts), timeout=opts.cargo_timeout,
                                                    output_cap=opts.output_cap, require=opts.sandbox_required))
        if (vendored is None and not cmd.ok and "--offline was specified" in (cmd.stderr or "")
                and fetch_dependencies(layout, tc, opts, result)):
            # the registry cache had the pinned roots but not every locked crate (a fetch of another lock or
            # one in progress): fetch this lock's crates, then build once more (both builds stay recorded)
            cmd = _record(result, sandbox.run_sandboxed(argv, build_profile(layout, tc, opts), cwd=layout.root,
                                                        env=build_env(tc, opts), timeout=opts.cargo_timeout,
                                                        output_cap=opts.output_cap, require=opts.sandbox_required))
        result.timings["cargo_build"] = round(time.monotonic() - t0, 3)
    if "Blocking waiting for file lock" in (cmd.stderr or ""):
        opts.say("cargo waited for the shared target dir's lock (another process was building)")
        result.timings["cargo_waited_for_target_lock"] = 1.0
    diags, artifacts = dg.parse_cargo_json(cmd.stdout, layout.root)
    result.diagnostics.extend(diags)
    if cmd.timed_out:
        result.diagnostics.append(_timeout_diag("cargo build", cmd, opts.cargo_timeout))
    elif cmd.returncode != 0 and not dg.has_errors(diags):
        result.diagnostics.append(dg.cargo_failure(cmd.stderr, cmd.returncode))
    if cmd.ok:
        _touch(stamp)
    bins = {}
    for art in artifacts:
        if art.get("fresh") is False:
            pkg = art.get("package_id", "")
            name = pkg.split("#", 1)[1].split("@", 1)[0] if "#" in pkg else pkg.split(" ", 1)[0]
            if name and name not in result.rebuilt:
                result.rebuilt.append(name)
        if "bin" in (art.get("target") or {}).get("kind", []) and art.get("executable"):
            bins[art["target"]["name"]] = art["executable"]
    return bins


@contextlib.contextmanager
def _held(slot: Any, opts: BuildOptions, result: RustBuildResult):
    """Hold `slot` (a semaphore or lock; None: nothing) for the block; a wait is logged and timed."""
    if slot is None:
        yield
        return
    t0 = time.monotonic()
    if not slot.acquire(blocking=False):
        opts.say("waiting for the cargo lock (another conversion is building)")
        slot.acquire()
        waited = time.monotonic() - t0
        result.timings["cargo_lock_wait"] = round(waited, 3)
        opts.say(f"got the cargo lock after {waited:.1f} s")
    try:
        yield
    finally:
        slot.release()


def deps_key(tc: toolchain_mod.Toolchain) -> str:
    """What the cutile dependency build depends on besides the lock: the cutile release, the header and
    libclang inputs as cargo sees them (content-keyed paths) and the Rust toolchain."""
    cuda, clang = tc.build_inputs()
    parts = [CUTILE_VERSION, str(cuda), str(clang), str(tc.cargo), str(tc.rustc)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def deps_stamp(tc: toolchain_mod.Toolchain, opts: BuildOptions) -> Path:
    """A file in the target dir saying a build with these dependency inputs finished there."""
    return opts.target_dir / f".tileport-deps-{deps_key(tc)}"


def _touch(path: Path) -> None:
    try:
        path.touch()
    except OSError:
        pass


def run_ir_dump(layout: CrateLayout, exe: str, out_dir: Path, tc: toolchain_mod.Toolchain, opts: BuildOptions,
                result: RustBuildResult) -> list[JobResult]:
    version = layout.spec.bytecode_version or opts.bytecode_version
    extra = {"CUTILE_BYTECODE_VERSION": version} if version else {}
    opts.say(f"IR dump ({len(layout.spec.jobs())} job(s))")
    t0 = time.monotonic()
    cmd = _record(result, sandbox.run_sandboxed([exe, str(out_dir)], run_profile(layout, exe, out_dir, tc),
                                                cwd=layout.root, env=build_env(tc, opts, extra),
                                                timeout=opts.dump_timeout, output_cap=opts.output_cap,
                                                require=opts.sandbox_required))
    result.timings["ir_dump"] = round(time.monotonic() - t0, 3)
    jobs = []
    reported = set()
    for raw in dg.parse_ir_dump_output(cmd.stdout):
        reported.add((raw.get("entry"), raw.get("variant"), raw.get("target")))
        job = JobResult(entry=raw["entry"], variant=raw["variant"], target=raw["target"], ok=bool(raw.get("ok")),
                        seconds=float(raw.get("seconds") or 0.0), bytecode=raw.get("bytecode"),
                        cutile_ir=raw.get("cutile_ir"))
        if not job.ok:
            result.diagnostics.append(dg.cutile_job_diagnostic(raw, layout.root))
        jobs.append(job)
    if cmd.timed_out:
        result.diagnostics.append(_timeout_diag("the IR dump", cmd, opts.dump_timeout))
    missing = [(e.name, v.name, t) for e, v, t in layout.spec.jobs() if (e.name, v.name, t) not in reported]
    if missing and not cmd.timed_out:
        # The dump process died (stack overflow, abort): no JSON line for these jobs.
        text = (cmd.stderr or "").strip()
        located = dg.parse_cutile_text(text, layout.root)
        for entry, variant, target in missing:
            if located:
                for d in located:
                    result.diagnostics.append(d.model_copy(update={"entry": entry, "variant": variant, "target": target}))
            else:
                result.diagnostics.append(dg.Diagnostic(
                    source=dg.DiagnosticSource.CUTILE, level="error", code="JIT-CRASH",
                    message=f"the IR dump exited with status {cmd.returncode} before compiling this job",
                    rendered=text[-3000:], entry=entry, variant=variant, target=target))
            jobs.append(JobResult(entry=entry, variant=variant, target=target, ok=False))
    return jobs


_ACTIVE = [0]  # builds of this process in their tileiras step: they share the CPU budget
_ACTIVE_LOCK = threading.Lock()


@contextlib.contextmanager
def _active_build():
    with _ACTIVE_LOCK:
        _ACTIVE[0] += 1
    try:
        yield
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE[0] -= 1


def _tool_outputs(job: JobResult, layout: CrateLayout, tc: toolchain_mod.Toolchain, opts: BuildOptions,
                  env: dict[str, str]) -> tuple[JobResult, list[CommandResult], list[dg.Diagnostic], dict[str, float]]:
    """tileirdisasm (text for the IR diff) and tileiras (sm_XX cubin) for one compiled job."""
    cmds, diags, times = [], [], {}
    bc = Path(job.bytecode or "")
    ctx = {"entry": job.entry, "variant": job.variant, "target": job.target}
    if opts.cubins and tc.tileiras is not None:
        cubin = tileir.cubin_path(bc)
        t0 = time.monotonic()
        cmd = tileir.assemble(bc, job.target, tileiras=tc.tileiras, cubin_out=cubin, opt_level=opts.opt_level,
                              cwd=layout.root, env=env, timeout=opts.tool_timeout, output_cap=opts.output_cap)
        times["tileiras"] = time.monotonic() - t0
        cmds.append(cmd)
        if cmd.timed_out:
            diags.append(_timeout_diag(f"tileiras for {job.entry}/{job.variant}/{job.target}", cmd, opts.tool_timeout)
                         .model_copy(update=ctx))
        elif cmd.returncode != 0 or not cubin.is_file():
            diags.extend(dg.parse_tileiras(cmd.stderr + cmd.stdout, cmd.returncode or 1, layout.root, **ctx))
        else:
            job = job.model_copy(update={"cubin": str(cubin)})
    if opts.disasm and tc.tileirdisasm is not None:
        t0 = time.monotonic()
        text_path = tileir.text_path(bc)
        cmd = tileir.disassemble(bc, tileirdisasm=tc.tileirdisasm, text_out=text_path, cwd=layout.root, env=env,
                                 timeout=opts.tool_timeout, output_cap=opts.output_cap)
        times["disasm"] = time.monotonic() - t0
        cmds.append(cmd)
        if cmd.ok and not cmd.truncated:
            job = job.model_copy(update={"tileir_text": str(text_path)})
        else:
            seen = {d.message for d in diags}  # the same reader fails the same way: say it once
            diags.extend(d for d in dg.parse_tileiras(cmd.stderr, cmd.returncode or 1, layout.root,
                                                      tool="tileirdisasm", **ctx) if d.message not in seen)
    if any(d.is_error for d in diags):
        job = job.model_copy(update={"ok": False})
    return job, cmds, diags, times


def _clean_artifacts(out_dir: Path) -> None:
    """Old outputs must not pass for new ones: empty the artifacts dir (only files tileport writes there)."""
    if out_dir.is_symlink():
        raise UserError(f"{out_dir} is a symbolic link; refusing to write artifacts through it")
    out_dir.mkdir(parents=True, exist_ok=True)
    for p in out_dir.iterdir():
        if p.is_file() and p.suffix in (tileir.BYTECODE_SUFFIX, tileir.TEXT_SUFFIX, ".mlir", tileir.CUBIN_SUFFIX):
            p.unlink()


def build_crate(layout: CrateLayout, opts: BuildOptions | None = None) -> RustBuildResult:
    """Policy -> cargo build -> IR dump -> tileirdisasm + tileiras. Stops at the first stage with errors."""
    opts = opts or BuildOptions()
    start = time.monotonic()
    result = RustBuildResult(crate=str(layout.root), ok=False, stage="policy")
    tc = resolve_toolchain(opts)
    if opts.sandbox_required and not sandbox.status().ok:  # before any work: nothing model-written runs unconfined
        raise EnvironmentBlocked(f"cannot sandbox model-written code: {sandbox.status().detail}")

    t0 = time.monotonic()
    result.diagnostics.extend(check_crate(layout, deny_unsafe=opts.deny_unsafe))
    result.timings["policy"] = round(time.monotonic() - t0, 3)
    if dg.has_errors(result.diagnostics):
        return _finish(result, start)

    result.stage = "cargo"
    opts.target_dir.mkdir(parents=True, exist_ok=True)
    bins = run_cargo_build(layout, tc, opts, result)
    if dg.has_errors(result.diagnostics):
        return _finish(result, start)
    exe = bins.get(layout.irdump_bin) or str(opts.target_dir / "debug" / layout.irdump_bin)
    if not Path(exe).is_file():
        result.diagnostics.append(dg.Diagnostic(source=dg.DiagnosticSource.TILEPORT, level="error", code="TP-CARGO",
                                                message=f"cargo reported success but {exe} does not exist"))
        return _finish(result, start)

    result.stage = "ir-dump"
    out_dir = (opts.artifacts_dir or layout.artifacts).resolve()
    _clean_artifacts(out_dir)
    jobs = run_ir_dump(layout, exe, out_dir, tc, opts, result)

    result.stage = "tileiras"
    env = build_env(tc, opts)
    done = [j for j in jobs if not j.ok]
    todo = [j for j in jobs if j.ok]
    totals = {"disasm": 0.0, "tileiras": 0.0}
    t0 = time.monotonic()
    with _active_build():
        workers = max(1, min(len(todo), settings.cpu_budget() // max(1, _ACTIVE[0])))
        if todo and opts.cubins:
            opts.say(f"tileiras {len(todo)} job(s) on {workers} worker(s)")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(in_scope(lambda j: _tool_outputs(j, layout, tc, opts, env)), todo))
    for job, cmds, diags, times in results:
        done.append(job)
        result.commands.extend(c.record for c in cmds)
        result.diagnostics.extend(diags)
        for k, v in times.items():
            totals[k] += v
    result.timings["tileirdisasm_and_tileiras_wall"] = round(time.monotonic() - t0, 3)
    result.timings.update({f"{k}_sum": round(v, 3) for k, v in totals.items()})
    order = {(e.name, v.name, t): i for i, (e, v, t) in enumerate(layout.spec.jobs())}
    result.jobs = sorted(done, key=lambda j: order.get((j.entry, j.variant, j.target), 1 << 30))
    for job in result.jobs:
        for kind, path in (("tileir_bytecode", job.bytecode), ("tileir_text", job.tileir_text),
                           ("cubin", job.cubin), ("cutile_ir_text", job.cutile_ir)):
            if path and Path(path).is_file():
                result.artifacts.append(ArtifactRecord.of(kind, path))
    if not dg.has_errors(result.diagnostics) and all(j.ok for j in result.jobs) and result.jobs:
        result.stage = "done"
    return _finish(result, start)


def _finish(result: RustBuildResult, start: float) -> RustBuildResult:
    result.timings["total"] = round(time.monotonic() - start, 3)
    result.ok = result.stage == "done" and not dg.has_errors(result.diagnostics)
    return result


def build_source(source: str | Path, *, spec_path: str | Path | None = None, out: str | Path | None = None,
                 opts: BuildOptions | None = None) -> RustBuildResult:
    """prepare_crate + build_crate: what `tileport build-rust` does."""
    return build_crate(prepare_crate(source, spec_path=spec_path, out=out), opts)


__all__ = ["BuildOptions", "JobResult", "RustBuildResult", "build_crate", "build_source", "prepare_crate",
           "shared_target_dir", "KERNEL_FILE", "HOST_FILE", "job_stem"]
