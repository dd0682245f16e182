"""Run model-written code in a sandbox: every cargo build of a conversion crate and every binary built from it.

The untrusted-code policy (tileport.validators.rust.policy) is the first layer; this is the second, so the next
gap in the first is not an escape. A sandboxed command runs under bubblewrap (`bwrap`, Debian `bubblewrap`):

- no network: private network namespace (loopback only, down); `/run` and `/var/run` (daemon sockets) hidden;
- the file system read-only (`--ro-bind / /`), except the profile's writable directories (the crate, the target
  dir, an artifacts dir) and a private `/tmp`; `$HOME` hidden except what the profile lists as readable
  (the Rust toolchain: CARGO_HOME, RUSTUP_HOME);
- private PID, IPC and UTS namespaces, a new session, killed with its parent: when the command ends or is
  killed, everything it started dies with it;
- resource limits (prlimit): CPU seconds, address space, file size, process count, no core dumps. The kernel
  does not enforce RLIMIT_NPROC for root, so where a pids cgroup can be made (cgroup v1 `pids` or v2 with the
  pids controller, writable) each command also gets its own cgroup with `pids.max` = the process limit.

The exact argv (bwrap + prlimit) and the profile land in the command's `CommandRecord.sandbox`.
With no usable sandbox, building model-written code is BLOCKED (EnvironmentBlocked, one-line fix) unless the
caller passes `require=False` (config `[sandbox] require = false`); then the command runs unconfined and the
record says so (`sandbox.backend = "none"`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from tileport.errors import EnvironmentBlocked
from tileport.exec.proc import DEFAULT_OUTPUT_CAP, CommandResult, run_command

GiB = 1 << 30
MiB = 1 << 20
FIX = ("install bubblewrap (apt-get install bubblewrap; scripts/setup.sh does it), or set `[sandbox] require = "
       "false` in tileport.toml to build model-written code unconfined")


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int  # RLIMIT_CPU per process (SIGXCPU/SIGKILL)
    address_space: int  # RLIMIT_AS bytes per process
    file_size: int  # RLIMIT_FSIZE bytes per written file (SIGXFSZ)
    processes: int  # RLIMIT_NPROC (per user; not enforced for root)

    def prlimit_args(self) -> list[str]:
        return [f"--cpu={self.cpu_seconds}", f"--as={self.address_space}", f"--fsize={self.file_size}",
                f"--nproc={self.processes}", "--core=0"]


# rustc + the linker on the cutile tree: a few GB per process; a debug build writes rlibs of ~100 MB.
BUILD_LIMITS = Limits(cpu_seconds=1800, address_space=16 * GiB, file_size=4 * GiB, processes=4096)
# The IR-dump binary compiles kernels on the CPU: threads with 8 MB stacks, small outputs.
RUN_LIMITS = Limits(cpu_seconds=600, address_space=16 * GiB, file_size=512 * MiB, processes=1024)


@dataclass(frozen=True)
class Profile:
    """What one sandboxed command may touch."""

    name: str  # "build" | "run" | a caller's name
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # re-exposed read-only under the hidden $HOME and the private /tmp
    limits: Limits = RUN_LIMITS
    network: bool = False

    def describe(self, backend: str) -> dict:
        return {"backend": backend, "profile": self.name, "network": self.network,
                "writable": [str(p) for p in self.writable], "readable": [str(p) for p in self.readable],
                "limits": asdict(self.limits)}


@dataclass(frozen=True)
class SandboxStatus:
    ok: bool
    backend: str  # "bwrap 0.8.0" | "none"
    detail: str = ""  # why not, with the fix
    path: str | None = None


@lru_cache(maxsize=1)
def status() -> SandboxStatus:
    """Whether a sandbox can be made here: bwrap on PATH and able to create the namespaces (probed once)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxStatus(False, "none", f"bubblewrap (bwrap) is not installed: {FIX}")
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return SandboxStatus(False, "none", "prlimit (util-linux) is not installed: apt-get install util-linux")
    try:
        ver = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        probe = subprocess.run([bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
                                "--proc", "/proc", "--", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return SandboxStatus(False, "none", f"bwrap does not run here ({e}): {FIX}")
    if probe.returncode != 0:
        why = (probe.stderr.strip().splitlines() or ["exit status %d" % probe.returncode])[-1]
        return SandboxStatus(False, "none", f"bwrap cannot create namespaces here ({why}): allow unprivileged user "
                             "namespaces (sysctl kernel.unprivileged_userns_clone=1) or run in a container that "
                             "permits them, or set `[sandbox] require = false`")
    return SandboxStatus(True, ver.replace("bubblewrap", "bwrap").strip() or "bwrap", path=bwrap)


PIDS_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))  # cgroup v1 pids hierarchy, or v2


@lru_cache(maxsize=1)
def pids_cgroup_root() -> Path | None:
    """A cgroup hierarchy with the pids controller that this process may create children in (root usually can;
    the kernel ignores RLIMIT_NPROC for root, so this is how a fork bomb is stopped there)."""
    for root in PIDS_CGROUP_ROOTS:
        if not (root / "cgroup.procs").is_file() or not os.access(root, os.W_OK):
            continue
        probe = root / f"tileport-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if (probe / "pids.max").is_file():
                return root
        finally:
            try:
                probe.rmdir()
            except OSError:
                pass
    return None


def _pids_cgroup(limit: int) -> Path | None:
    root = pids_cgroup_root()
    if root is None:
        return None
    cg = Path(tempfile.mkdtemp(prefix="tileport-sandbox-", dir=root))  # a fresh, uniquely named child cgroup
    try:
        (cg / "pids.max").write_text(str(limit))
    except OSError:
        _drop_cgroup(cg)
        return None
    return cg


def _drop_cgroup(cg: Path) -> None:
    for _ in range(50):  # processes leave a cgroup a moment after they die
        try:
            cg.rmdir()
            return
        except OSError:
            time.sleep(0.02)


def _home_hidden_binds() -> list[str]:
    """Hide $HOME (keys, tokens, other projects); the profile's readable and writable paths are bound back."""
    home = Path(os.environ.get("HOME") or Path.home())
    if str(home) in ("", "/") or not home.is_dir():
        return []
    return ["--tmpfs", str(home)]


def wrap(argv: Sequence[str | os.PathLike], profile: Profile, *, cwd: str | os.PathLike | None,
         tmpdir: str | os.PathLike) -> list[str]:
    """The bwrap + prlimit argv that runs `argv` confined to `profile` (status().ok must be true)."""
    st = status()
    if not st.ok or st.path is None:
        raise EnvironmentBlocked(f"cannot sandbox model-written code: {st.detail}")
    args = [st.path, "--die-with-parent", "--new-session", "--unshare-user-try", "--unshare-ipc", "--unshare-pid",
            "--unshare-uts", "--unshare-cgroup-try"]
    if not profile.network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for hidden in ("/run", "/var/run"):
        if Path(hidden).is_dir() and not Path(hidden).is_symlink():
            args += ["--tmpfs", hidden, "--remount-ro", hidden]
    args += ["--bind", str(tmpdir), "/tmp"]
    home_binds = _home_hidden_binds()
    args += home_binds
    for p in profile.readable:  # re-exposed where $HOME or the private /tmp hide them
        if Path(p).exists():
            args += ["--ro-bind", str(p), str(p)]
    for p in profile.writable:
        if Path(p).exists():
            args += ["--bind", str(p), str(p)]
    if home_binds:  # after the writable binds (their mount points are made in the tmpfs)
        args += ["--remount-ro", home_binds[1]]
    if cwd is not None:
        args += ["--chdir", str(cwd)]
    args += ["--setenv", "TMPDIR", "/tmp", "--"]
    prlimit = shutil.which("prlimit") or "prlimit"
    return [prlimit, *profile.limits.prlimit_args(), "--", *args, *(str(a) for a in argv)]


def run_sandboxed(argv: Sequence[str | os.PathLike], profile: Profile, *, cwd: str | os.PathLike | None = None,
                  env: Mapping[str, str] | None = None, timeout: float | None = None,
                  input: bytes | None = None, output_cap: int = DEFAULT_OUTPUT_CAP,
                  require: bool = True) -> CommandResult:
    """Run model-written code confined to `profile`; the CommandRecord keeps the full argv and the profile.

    No usable sandbox: EnvironmentBlocked (a BLOCKED verdict with the fix) when `require`, else the command runs
    unconfined with a warning on stderr and `sandbox.backend = "none"` in the record."""
    st = status()
    if not st.ok:
        if require:
            raise EnvironmentBlocked(f"cannot sandbox model-written code: {st.detail}")
        print(f"tileport: WARNING: running model-written code WITHOUT a sandbox ([sandbox] require = false): "
              f"{st.detail}", file=sys.stderr)
        result = run_command(argv, cwd=cwd, env=env, timeout=timeout, input=input, output_cap=output_cap)
        result.record.sandbox = {**profile.describe("none"), "unconfined": True, "why": st.detail}
        return result
    cg = _pids_cgroup(profile.limits.processes)
    try:
        with tempfile.TemporaryDirectory(prefix="tileport-sandbox-") as tmp:
            wrapped = wrap(argv, profile, cwd=cwd, tmpdir=tmp)
            if cg is not None:  # join the pids cgroup, then become the sandbox (fails closed if joining fails)
                wrapped = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cg / "cgroup.procs"), *wrapped]
            result = run_command(wrapped, cwd=cwd, env=env, timeout=timeout, input=input, output_cap=output_cap)
    finally:
        if cg is not None:
            _drop_cgroup(cg)
    result.record.sandbox = {**profile.describe(st.backend), "pids_cgroup": cg is not None}
    return result


def read_only(argv: Sequence[str | os.PathLike], readonly: Sequence[Path], writable: Sequence[Path] = ()) -> list[str]:
    """`argv` with `readonly` mounted read-only for it (and `writable`, inside them, left writable): how the op's own
    code (its tests, its `__main__` block) runs against a user's checkout, so that a results file or a cache it
    writes beside itself cannot overwrite what the user keeps there; the write fails instead. Nothing else is
    confined. With no usable bwrap, `argv` as it is."""
    st = status()
    if not st.ok or st.path is None or not readonly:
        return [str(a) for a in argv]
    args = [st.path, "--die-with-parent", "--dev-bind", "/", "/"]
    for p in readonly:
        args += ["--ro-bind", str(p), str(p)]
    for p in writable:
        args += ["--bind", str(p), str(p)]
    return [*args, "--", *(str(a) for a in argv)]


def tool_argv(argv: Sequence[str]) -> list[str]:
    """The tool's own argv inside a `run_sandboxed` wrapper (the pids-cgroup `sh -c`, prlimit, bwrap), for display;
    any other argv is returned as it is."""
    args = [str(a) for a in argv]
    if len(args) > 3 and Path(args[0]).name == "sh" and args[1] == "-c" and 'exec "$@"' in args[2]:
        args = args[4:]
    for wrapper in ("prlimit", "bwrap"):
        if args and Path(args[0]).name == wrapper and "--" in args:
            args = args[args.index("--") + 1:]
    return args


def toolchain_readable(*paths: str | os.PathLike | None) -> tuple[Path, ...]:
    """CARGO_HOME, RUSTUP_HOME and the given paths (those that exist), for `Profile.readable`."""
    home = Path.home()
    found = [Path(os.environ.get("CARGO_HOME", home / ".cargo")), Path(os.environ.get("RUSTUP_HOME", home / ".rustup"))]
    found += [Path(p) for p in paths if p]
    out: list[Path] = []
    for p in found:
        p = p.resolve() if p.exists() else p
        if p.exists() and p not in out:
            out.append(p)
    return tuple(out)


__all__ = ["BUILD_LIMITS", "RUN_LIMITS", "Limits", "Profile", "SandboxStatus", "read_only", "run_sandboxed", "status",
           "toolchain_readable", "wrap"]
