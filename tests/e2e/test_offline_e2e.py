"""The offline bundle end to end, for real: `tileport offline pack`, then `bash install.sh`, `tileport doctor`,
`tileport analyze` and `tileport build-rust ports/vector_add` inside a network namespace with no network
(`unshare -n`), under strace: nothing may even try to reach an IPv4/IPv6 address off the machine (doctor's probe
of the local model endpoint on loopback is allowed).

The build has only the bundle to go by: PATH holds no Rust (the bundle's toolchain is used), CARGO_HOME and
RUSTUP_HOME are empty directories, and cargo gets CARGO_HOME = the install's .offline/cargo with crates.io
replaced by the vendored sources. A vendored crate whose checksum no longer matches the lock must then make cargo
itself refuse, which shows the crates really are resolved from the bundle on every build.

Part of the default suite (slow): one real pack whose parts come from the pack cache outside the clone
(~/.cache/tileport/offline, keyed by what each part is made from, so a change repacks), a real install, and a
cargo target dir kept at a fixed path beside a fixed install path (~/.cache/tileport/offline-e2e), so only the
first run on a machine compiles the vendored cutile tree. Runs of this test on one machine take turns (a lock).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tileport.exec import settings

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
INET = re.compile(r"\b(connect|sendto|sendmsg|sendmmsg)\(.*sa_family=AF_INET6?\b")
# The machine itself is not the network: doctor probes the local model endpoint (127.0.0.1:8000 by default).
LOOPBACK = re.compile(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"')
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def isolation() -> tuple[list[str] | None, str]:
    """The command prefix for a network namespace with no network, or None and the kernel's reason.

    Root: `unshare -n` (needs CAP_SYS_ADMIN, which a container may drop), else `unshare -r -n` (a user namespace
    first, where the kernel allows unprivileged ones: the only way for a non-root user)."""
    tried = []
    for prefix in ([["unshare", "-n"]] if os.geteuid() == 0 else []) + [["unshare", "-r", "-n"]]:
        probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
        if probe.returncode == 0:
            return prefix, ""
        tried.append(f"`{' '.join(prefix)}`: {probe.stderr.strip()[:160] or f'exit {probe.returncode}'}")
    return None, "the kernel refuses a network namespace here (" + "; ".join(tried) + ")"


def missing_tools() -> list[str]:
    return [t for t in ("unshare", "strace", "cargo", "bwrap", "cc") if shutil.which(t) is None]


@pytest.fixture()
def e2e_cache():
    """~/.cache/tileport/offline-e2e: the fixed install path and its cargo target, one test run at a time."""
    cache = settings.shared_cache_root() / "offline-e2e"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield cache


def test_pack_install_analyze_and_build_rust_with_no_network(tmp_path, e2e_cache):
    missing = missing_tools()
    if missing:  # setup.sh --test installs them: in CI their absence is a failure, elsewhere a skip
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"not installed: {', '.join(missing)}")
    netns, why = isolation()
    if netns is None:
        pytest.skip(why)
    dest = e2e_cache / "install"  # fixed, so the cargo target's fingerprints (they hash source paths) stay valid
    target = e2e_cache / "cargo-target"
    shutil.rmtree(dest, ignore_errors=True)
    target.mkdir(parents=True, exist_ok=True)

    bundle = tmp_path / "bundle"
    t0 = time.monotonic()
    packed = subprocess.run([sys.executable, "-m", "tileport", "offline", "pack", str(bundle), "--json"], cwd=REPO,
                            capture_output=True, text=True, timeout=1800)
    assert packed.returncode == 0, packed.stderr[-3000:]
    summary = json.loads(packed.stdout)
    print(f"offline e2e: pack {time.monotonic() - t0:.1f} s (cached parts: {summary['cached']})")
    assert summary["cutile"]["version"] == "0.5.0" and summary["cutile"]["crates"] > 50
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["versions"]["cuda-tile"] == "1.7.0"
    assert any(f.startswith("gpu/tileiras-") for f in manifest["files"])
    assert manifest["rust"] and manifest["rust"]["archive"] in manifest["files"]

    # A second pack from the same inputs is served by the pack cache, part for part, with the same bytes
    # (a volatile cache key would make every CI run pack cold without anyone noticing).
    again = subprocess.run([sys.executable, "-m", "tileport", "offline", "pack", str(tmp_path / "again"), "--json"],
                           cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert again.returncode == 0, again.stderr[-3000:]
    assert all(json.loads(again.stdout)["cached"].values()), again.stdout
    second = json.loads((tmp_path / "again" / "manifest.json").read_text())["files"]
    assert {k: v for k, v in second.items() if not k.startswith("src/")} == \
        {k: v for k, v in manifest["files"].items() if not k.startswith("src/")}
    shutil.rmtree(tmp_path / "again")

    homes = {name: tmp_path / name for name in ("empty-cargo-home", "empty-rustup-home")}
    for p in homes.values():
        p.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "TILEPORT_", "CARGO", "RUSTUP", "RUSTC", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update(PATH=SYSTEM_PATH, CARGO_HOME=str(homes["empty-cargo-home"]), RUSTUP_HOME=str(homes["empty-rustup-home"]),
               TILEPORT_CARGO_TARGET=str(target), TILEPORT_CACHE_DIR=str(tmp_path / "tp-cache"),
               PYTHON=sys.executable, HF_HUB_OFFLINE="1")
    out = tmp_path / "out"
    tp = f"{dest}/.venv/bin/tileport"
    build = f"cd {dest} && {tp} build-rust ports/vector_add --json --out {tmp_path / 'crate'}"
    steps = {
        "install": f"bash {bundle}/install.sh {dest}",
        "doctor": f"{tp} doctor --json --for analyze --for build-rust",
        "analyze": f"cd {dest} && {tp} analyze examples/vector_add.py --out {out}",
        "build": build,
    }

    seconds: dict[str, float] = {}

    def offline_run(name: str, script: str) -> subprocess.CompletedProcess:
        trace = tmp_path / f"{name}.strace"
        t0 = time.monotonic()
        res = subprocess.run(
            ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-e",
             "signal=none", "-o", str(trace), *netns, "bash", "-c", script],
            env=env, capture_output=True, text=True, timeout=3000)
        seconds[name] = round(time.monotonic() - t0, 1)
        (tmp_path / f"{name}.out").write_text(res.stdout + "\n--- stderr\n" + res.stderr)
        print(f"offline e2e: {name} {seconds[name]} s (rc {res.returncode})")
        attempts = [ln for ln in trace.read_text().splitlines() if INET.search(ln) and not LOOPBACK.search(ln)]
        assert not attempts, f"{name} tried to reach the network:\n" + "\n".join(attempts[:10])
        return res

    results = {}
    for name, script in steps.items():
        results[name] = offline_run(name, script)
        assert results[name].returncode == 0, f"{name}: {results[name].stderr[-3000:]}{results[name].stdout[-3000:]}"

    assert "tileport installed offline" in results["install"].stdout
    checks = {c["name"]: c for c in json.loads(results["doctor"].stdout)["checks"]}
    assert checks["offline"]["status"] == "OK" and "no network needed" in checks["offline"]["detail"]
    assert "Rust 1." in checks["offline"]["detail"] and "bundled" in checks["offline"]["detail"]
    assert checks["offline"]["facts"]["bundle"] == str(bundle)
    assert checks["cutile-crates"]["status"] == "OK" and "vendored" in checks["cutile-crates"]["detail"]
    assert checks["cuda-tile"]["facts"]["version"] == "1.7.0"
    rust_bin = f"{dest}/.offline/rust/bin/"
    assert checks["cargo"]["status"] == "OK" and rust_bin in checks["cargo"]["detail"]  # the bundle's, not ~/.cargo

    analysis = (out / "analysis.json").read_text()
    assert json.loads(analysis)["schema_version"] == 1 and "vector_add_kernel" in analysis
    assert list(out.rglob("*.tileirbc")) and list(out.rglob("*.cubin"))  # cuda-tile export and tileiras, offline

    built = json.loads(results["build"].stdout)
    assert built["ok"], built["diagnostics"][:3]
    assert built["jobs"] and all(j["ok"] and j["tileir_text"] for j in built["jobs"])
    cargo_cmd = next(c for c in built["commands"] if "build" in c["argv"] and "--message-format=json" in c["argv"])
    assert rust_bin + "cargo" in cargo_cmd["argv"]
    assert "--config" in cargo_cmd["argv"] and f"{dest}/.offline/cargo/config.toml" in cargo_cmd["argv"]
    assert not any("fetch" in c["argv"] for c in built["commands"])
    assert cargo_cmd["sandbox"]["backend"] != "none"
    # nothing went to a registry cache: cargo's home was the install's, with the vendored sources only
    for home in (*homes.values(), dest / ".offline" / "cargo"):
        assert not (home / "registry").exists() and not (home / "git").exists(), home

    # The crates are resolved from the bundle on every build: a vendored crate whose checksum no longer matches
    # the lock's (cargo compares them while resolving, before any freshness check) makes cargo itself refuse.
    sums = dest / ".offline" / "cargo" / "vendor" / "cutile-0.5.0" / ".cargo-checksum.json"
    recorded = json.loads(sums.read_text())
    sums.write_text(json.dumps({**recorded, "package": "0" * 64}))
    again = offline_run("tampered", build)
    assert again.returncode != 0, again.stdout[-2000:]
    diag = json.loads(again.stdout)["diagnostics"][0]
    assert "cutile" in diag["rendered"] and "checksum" in diag["rendered"], diag
    shutil.rmtree(dest, ignore_errors=True)  # ~1 GB; kept only when the test fails (to look into); the target stays
