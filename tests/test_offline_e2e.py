"""The offline bundle end to end, for real: `tileport offline pack`, then `bash install.sh`, `tileport doctor`,
`tileport analyze` and `tileport build-rust ports/vector_add` inside a network namespace with no network
(`unshare -n`), under strace: nothing may even try to reach an IPv4/IPv6 address off the machine (doctor's probe
of the local model endpoint on loopback is allowed).

Heavy (one test): pip wheels ~600 MB, a cold cargo build of the vendored crates (~3-5 min on 2 cores). The
install and the cargo target dir live at fixed paths outside the clone (~/.cache/tileport/offline-e2e), so a
rerun rebuilds only the conversion crate. cargo's own registry cache is hidden (an empty CARGO_HOME): the crates
can only come from the bundle.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


from tileport.exec import settings

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[1]
INET = re.compile(r"\b(connect|sendto|sendmsg|sendmmsg)\(.*sa_family=AF_INET6?\b")
# The machine itself is not the network: doctor probes the local model endpoint (127.0.0.1:8000 by default).
LOOPBACK = re.compile(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"')


def _can_isolate() -> str | None:
    if os.geteuid() != 0:
        return "needs root for unshare -n"
    for tool in ("unshare", "strace", "cargo", "bwrap"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return None if probe.returncode == 0 else "cannot create a network namespace here"


@pytest.mark.slow
def test_pack_install_analyze_and_build_rust_with_no_network(tmp_path):
    why = _can_isolate()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"offline end-to-end test cannot run in CI: {why}")
        pytest.skip(why)
    cache = settings.shared_cache_root() / "offline-e2e"
    dest = cache / "install"  # fixed, so a rerun's cargo target (keyed on these paths) stays warm
    target = cache / "cargo-target"
    shutil.rmtree(dest, ignore_errors=True)
    target.mkdir(parents=True, exist_ok=True)

    bundle = tmp_path / "bundle"
    packed = subprocess.run([sys.executable, "-m", "tileport", "offline", "pack", str(bundle), "--json"], cwd=REPO,
                            capture_output=True, text=True, timeout=1800)
    assert packed.returncode == 0, packed.stderr[-3000:]
    summary = json.loads(packed.stdout)
    assert summary["cutile"]["version"] == "0.5.0" and summary["cutile"]["crates"] > 50
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["versions"]["cuda-tile"] == "1.7.0"
    assert any(f.startswith("gpu/tileiras-") for f in manifest["files"])

    cargo = Path(shutil.which("cargo")).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "TILEPORT_", "CARGO", "PYTHONPATH"))}
    env.update(PATH=f"{cargo}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               CARGO_HOME=str(tmp_path / "empty-cargo-home"), RUSTUP_HOME=os.environ.get(
                   "RUSTUP_HOME", str(Path.home() / ".rustup")),
               TILEPORT_CARGO_TARGET=str(target), TILEPORT_CACHE_DIR=str(tmp_path / "tp-cache"),
               PYTHON=sys.executable, HF_HUB_OFFLINE="1")
    (tmp_path / "empty-cargo-home").mkdir()
    out = tmp_path / "out"
    tp = f"{dest}/.venv/bin/tileport"
    steps = {
        "install": f"bash {bundle}/install.sh {dest}",
        "doctor": f"{tp} doctor --json --for analyze --for build-rust",
        "analyze": f"cd {dest} && {tp} analyze examples/vector_add.py --out {out}",
        "build": f"cd {dest} && {tp} build-rust ports/vector_add --json --out {tmp_path / 'crate'}",
    }
    results = {}
    for name, script in steps.items():
        trace = tmp_path / f"{name}.strace"
        results[name] = subprocess.run(
            ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-e",
             "signal=none", "-o", str(trace), "unshare", "-n", "bash", "-c", script],
            env=env, capture_output=True, text=True, timeout=3000)
        attempts = [ln for ln in trace.read_text().splitlines() if INET.search(ln) and not LOOPBACK.search(ln)]
        assert not attempts, f"{name} tried to reach the network:\n" + "\n".join(attempts[:10])
        assert results[name].returncode == 0, f"{name}: {results[name].stderr[-3000:]}{results[name].stdout[-3000:]}"

    assert "tileport installed offline" in results["install"].stdout
    checks = {c["name"]: c for c in json.loads(results["doctor"].stdout)["checks"]}
    assert checks["offline"]["status"] == "OK" and "no network needed" in checks["offline"]["detail"]
    assert checks["offline"]["facts"]["bundle"] == str(bundle)
    assert checks["cutile-crates"]["status"] == "OK" and "vendored" in checks["cutile-crates"]["detail"]
    assert checks["cuda-tile"]["facts"]["version"] == "1.7.0"

    analysis = (out / "analysis.json").read_text()
    assert json.loads(analysis)["schema_version"] == 1 and "vector_add_kernel" in analysis
    assert list(out.rglob("*.tileirbc")) and list(out.rglob("*.cubin"))  # cuda-tile export and tileiras, offline

    build = json.loads(results["build"].stdout)
    assert build["ok"], build["diagnostics"][:3]
    assert build["jobs"] and all(j["ok"] and j["tileir_text"] for j in build["jobs"])
    cargo_cmd = next(c for c in build["commands"] if "build" in c["argv"] and "--message-format=json" in c["argv"])
    assert "--config" in cargo_cmd["argv"] and f"{dest}/.offline/cargo/config.toml" in cargo_cmd["argv"]
    assert not any("fetch" in c["argv"] for c in build["commands"])
    assert cargo_cmd["sandbox"]["backend"] != "none"
    # nothing was taken from cargo's registry cache: it stayed empty
    assert not (tmp_path / "empty-cargo-home" / "registry").exists()
