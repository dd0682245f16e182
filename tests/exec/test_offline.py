"""Offline bundle, fast parts: the manifest and its sha256 check (in tileport and as the bundle's standalone
verify.py), install.sh's refusals, pack's refusals, and doctor's report of an offline install.

The real pack -> install -> analyze / build-rust with no network is tests/e2e/test_offline_e2e.py (slow)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from tileport.exec import doctor, offline
from tileport.offline.pack import expand_platforms, install_script


def make_bundle(root: Path, python_version: str = "%d.%d" % sys.version_info[:2]) -> Path:
    """A small bundle made by the real manifest writer and install.sh template (the wheels are not real)."""
    (root / "wheels").mkdir(parents=True)
    (root / "wheels" / "demo-1.0-py3-none-any.whl").write_bytes(b"PK-not-really-a-wheel" * 100)
    (root / "wheels" / "other-2.0-py3-none-any.whl").write_bytes(b"other" * 50)
    (root / "src").mkdir()
    (root / "src" / "tileport-src.tar.gz").write_bytes(b"\x1f\x8b fake")
    (root / "install.sh").write_text(install_script(python_version))
    shutil.copyfile(offline.__file__, root / "verify.py")
    offline.write_manifest(root, {"tileport": {"version": "0.1.0"}, "python": {"version": python_version}})
    return root


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_manifest_lists_every_file_with_its_sha256_and_verify_passes(tmp_path, cli):
    b = make_bundle(tmp_path / "b")
    m = json.loads((b / "manifest.json").read_text())
    assert set(m["files"]) == {"wheels/demo-1.0-py3-none-any.whl", "wheels/other-2.0-py3-none-any.whl",
                               "src/tileport-src.tar.gz", "install.sh", "verify.py"}
    assert m["files"]["wheels/other-2.0-py3-none-any.whl"] == {
        "sha256": hashlib.sha256(b"other" * 50).hexdigest(), "size": 250}
    r = cli("offline", "verify", str(b))
    assert r.returncode == 0, r.stderr
    assert "bundle OK: 5 files" in r.stdout


@pytest.mark.parametrize("damage, named, words", [
    ("missing", "wheels/demo-1.0-py3-none-any.whl", "missing"),
    ("flip", "wheels/demo-1.0-py3-none-any.whl", "sha256"),
    ("truncate", "src/tileport-src.tar.gz", "bytes"),
    ("extra", "wheels/evil-9.9-py3-none-any.whl", "not listed"),
])
def test_damaged_bundle_fails_with_one_line_naming_the_file(tmp_path, cli, damage, named, words):
    b = make_bundle(tmp_path / "b")
    target = b / named
    if damage == "missing":
        target.unlink()
    elif damage == "flip":  # same size, one byte changed: only the sha256 can tell
        data = bytearray(target.read_bytes())
        data[7] ^= 0xFF
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:-3])
    else:
        target.write_bytes(b"not in the manifest")
    r = cli("offline", "verify", str(b))
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert named in line and words in line


def test_standalone_verify_py_needs_nothing_installed(tmp_path):
    """install.sh runs verify.py with a bare python3 (-I: no tileport, no site-packages) before any install."""
    b = make_bundle(tmp_path / "b")
    bare = [sys.executable, "-I", "-S", str(b / "verify.py")]
    ok = subprocess.run([*bare, str(b)], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0 and "bundle OK" in ok.stdout, ok.stderr
    (b / "wheels" / "other-2.0-py3-none-any.whl").write_bytes(b"x" * 250)
    bad = subprocess.run([*bare, str(b)], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert "wheels/other-2.0-py3-none-any.whl" in one_line(bad.stderr)
    (b / "manifest.json").unlink()
    gone = subprocess.run([*bare, str(b)], capture_output=True, text=True, cwd=tmp_path)
    assert gone.returncode == 2 and "manifest.json" in one_line(gone.stderr)


def run_install(bundle: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(bundle / "install.sh"), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable, **(env or {})})


def test_install_refuses_a_corrupted_bundle_before_touching_dest(tmp_path):
    b = make_bundle(tmp_path / "b")
    (b / "wheels" / "demo-1.0-py3-none-any.whl").write_bytes(b"PK-not-really-a-whe3l" * 100)
    dest = tmp_path / "dest"
    r = run_install(b, str(dest))
    assert r.returncode == 2
    assert "wheels/demo-1.0-py3-none-any.whl" in one_line(r.stderr) and "sha256" in r.stderr
    assert not dest.exists()


def test_install_refuses_a_missing_wheel(tmp_path):
    b = make_bundle(tmp_path / "b")
    (b / "wheels" / "other-2.0-py3-none-any.whl").unlink()
    r = run_install(b, str(tmp_path / "dest"))
    assert r.returncode == 2
    assert "wheels/other-2.0-py3-none-any.whl: missing" in one_line(r.stderr)


def test_install_refuses_another_python_than_the_wheels_are_for(tmp_path):
    b = make_bundle(tmp_path / "b", python_version="3.99")
    r = run_install(b, str(tmp_path / "dest"))
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "Python 3.99" in line and "PYTHON=" in line
    assert not (tmp_path / "dest").exists()


def test_install_never_writes_into_a_users_directory(tmp_path):
    b = make_bundle(tmp_path / "b")
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    r = run_install(b, str(dest))
    assert r.returncode == 2 and "not empty" in one_line(r.stderr)
    assert sorted(os.listdir(dest)) == ["notes.txt"] and (dest / "notes.txt").read_text() == "mine"
    r = run_install(b, str(dest), "extra")
    assert r.returncode == 2 and "usage" in one_line(r.stderr)


def test_pack_refusals_are_one_line_and_write_nothing(tmp_path, cli):
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep").write_text("x")
    r = cli("offline", "pack", str(full))
    assert r.returncode == 2 and "not empty" in one_line(r.stderr)
    assert os.listdir(full) == ["keep"]
    r = cli("offline", "pack", str(tmp_path / "b"), "--python-version", "three")
    assert r.returncode == 2 and "MAJOR.MINOR" in one_line(r.stderr)
    r = cli("offline", "pack", str(tmp_path / "b"), "--platform", "any")
    assert r.returncode == 2 and "platform tag" in one_line(r.stderr)
    r = cli("offline", "pack", str(tmp_path / "no" / "such" / "b"))
    assert r.returncode == 2 and "does not exist" in one_line(r.stderr)
    assert sorted(os.listdir(tmp_path)) == ["full"]


def test_manylinux_platform_includes_older_glibc_tags():
    tags = expand_platforms(["manylinux_2_28_x86_64"])
    assert tags[0] == "manylinux_2_28_x86_64"
    # cuda-tile 1.7.0 ships only manylinux2014 (= 2_17) wheels: pip must be allowed to take them
    assert {"manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"} <= set(tags)
    assert "manylinux_2_29_x86_64" not in tags and "linux_x86_64" not in tags
    assert expand_platforms(["macosx_11_0_arm64"]) == ["macosx_11_0_arm64"]


def _lock() -> str:
    return resources.files("tileport.validators.rust.crate_template").joinpath("cargo-lock.toml").read_text()


def test_doctor_reports_the_bundle_and_names_a_crate_that_would_need_the_network(tmp_path, monkeypatch):
    b = make_bundle(tmp_path / "b")
    m = json.loads((b / "manifest.json").read_text())
    m.update(versions={"cuda-tile": "1.7.0"}, cutile={"version": "0.5.0", "crates": 112}, created="2026-11-30T00:00:00Z")
    (b / "manifest.json").write_text(json.dumps(m))
    dest = tmp_path / "dest"
    vendor = dest / ".offline" / "cargo" / "vendor"
    packages = offline.locked_packages(_lock())
    assert ("cutile", "0.5.0") in packages and len(packages) > 50
    for name, version in packages:
        (vendor / f"{name}-{version}").mkdir(parents=True)
        (vendor / f"{name}-{version}" / ".cargo-checksum.json").write_text("{}")
    prefix = tmp_path / "venv"
    prefix.mkdir()
    offline.write_record(b, dest, prefix=prefix)
    config = (dest / ".offline" / "cargo" / "config.toml").read_text()
    assert 'replace-with = "tileport-vendored"' in config and json.dumps(str(vendor)) in config

    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(doctor.importlib.metadata, "version", lambda d: {"cuda-tile": "1.7.0"}.get(d, "0"))
    c = doctor.check_offline()
    assert c.status == doctor.OK, c.detail
    assert "no network needed" in c.detail and str(b) in c.detail and "cuda-tile 1.7.0" in c.detail
    assert "air-gapped: bring a vLLM install" in doctor.check_model(
        doctor.Config.model_validate({"model": {"base_url": "http://127.0.0.1:9/v1"}})).fix

    shutil.rmtree(vendor / "cutile-macro-0.5.0")
    c = doctor.check_offline()
    assert c.status == doctor.MISSING and "cutile-macro-0.5.0" in c.detail and "install.sh" in c.fix


def test_doctor_on_a_connected_install_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    c = doctor.check_offline()
    assert c.status == doctor.OK and "connected install" in c.detail and c.facts["bundle"] is None


def test_an_offline_install_builds_from_the_vendored_crates_inside_the_sandbox(tmp_path, monkeypatch):
    """With the install record, builds need no registry cache and the sandbox can read the vendored sources
    even where they sit under the hidden $HOME."""
    from types import SimpleNamespace

    from tileport.exec.toolchain import resolve
    from tileport.validators.rust import build as rb

    b = make_bundle(tmp_path / "b")
    dest = tmp_path / "dest"
    (dest / ".offline" / "cargo" / "vendor").mkdir(parents=True)
    prefix = tmp_path / "venv"
    prefix.mkdir()
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "empty-cargo-home"))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    assert not rb.dependencies_cached()  # a connected install with an empty registry cache would fetch
    offline.write_record(b, dest, prefix=prefix)
    assert rb.dependencies_cached()
    opts = rb.BuildOptions(target_dir=tmp_path / "target")
    profile = rb.build_profile(SimpleNamespace(root=tmp_path / "crate"), resolve(), opts)
    assert (dest / ".offline" / "cargo").resolve() in profile.readable
    assert not profile.network


# ------------------------------------------------------------------------------------- vendored crates, Rust, cache


def _tar(path: Path, members: dict[str, bytes]) -> None:
    import io
    import tarfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def make_bundle_with_crates(root: Path, drop: str | None = None) -> Path:
    """A bundle whose src/ holds the real pinned Cargo.lock and whose cargo/vendor.tar.gz holds a (contentless)
    directory per locked crate, less `drop`: what verify reads to decide whether cargo would need the network."""
    make_bundle(root)
    _tar(root / offline.SRC_ARCHIVE, {offline.LOCK_IN_SRC: _lock().encode()})
    _tar(root / offline.VENDOR_ARCHIVE, {f"vendor/{n}-{v}/.cargo-checksum.json": b'{"files":{},"package":""}'
                                         for n, v in offline.locked_packages(_lock()) if f"{n}-{v}" != drop})
    offline.write_manifest(root, {"tileport": {"version": "0.1.0"}, "python": {"version": "%d.%d" % sys.version_info[:2]}})
    return root


def test_a_bundle_whose_vendored_crates_miss_a_locked_crate_is_refused_naming_it(tmp_path, cli):
    ok = make_bundle_with_crates(tmp_path / "ok")
    r = cli("offline", "verify", str(ok))
    assert r.returncode == 0, r.stderr
    bad = make_bundle_with_crates(tmp_path / "bad", drop="cutile-macro-0.5.0")  # sha256s all match: a bad pack
    r = cli("offline", "verify", str(bad))
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "cargo/vendor.tar.gz" in line and "cutile-macro-0.5.0" in line and "pack the bundle again" in line
    r = run_install(bad, str(tmp_path / "dest"))
    assert r.returncode == 2 and "cutile-macro-0.5.0" in one_line(r.stderr)
    assert not (tmp_path / "dest").exists()


def test_the_pack_cache_serves_a_part_made_from_the_same_inputs_and_remakes_a_damaged_one(tmp_path):
    from tileport.offline import cache

    root, made, logged = tmp_path / "cache", [], []

    def make(out: Path):
        made.append(out)
        (out / "wheels").mkdir(parents=True, exist_ok=True)
        (out / "wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"wheel bytes " * 1000)
        return ["wheels/a-1.0-py3-none-any.whl"], {"count": 1}

    inputs = {"requirements": ["a==1.0"], "python": "3.11"}
    files, meta, hit = cache.cached_part("wheels", inputs, tmp_path / "b1", make, root=root)
    assert (files, meta, hit, len(made)) == (["wheels/a-1.0-py3-none-any.whl"], {"count": 1}, False, 1)
    files, meta, hit = cache.cached_part("wheels", inputs, tmp_path / "b2", make, root=root)
    assert hit and meta == {"count": 1} and len(made) == 1
    assert (tmp_path / "b2" / files[0]).read_bytes() == b"wheel bytes " * 1000
    # another input is another key: made afresh
    _, _, hit = cache.cached_part("wheels", {**inputs, "python": "3.12"}, tmp_path / "b3", make, root=root)
    assert not hit and len(made) == 2
    # a damaged cache file (same size) is caught while copying: the part is made again and the entry replaced
    entry = cache.lookup("wheels", inputs, root)
    cached_file = entry / "wheels" / "a-1.0-py3-none-any.whl"
    cached_file.write_bytes(b"W" + cached_file.read_bytes()[1:])
    files, _, hit = cache.cached_part("wheels", inputs, tmp_path / "b4", make, root=root, log=logged.append)
    assert not hit and len(made) == 3 and "damaged" in logged[0]
    assert (tmp_path / "b4" / files[0]).read_bytes() == b"wheel bytes " * 1000
    assert cache.cached_part("wheels", inputs, tmp_path / "b5", make, root=root)[2]
    # --refresh: made afresh even though the entry is good
    assert not cache.cached_part("wheels", inputs, tmp_path / "b6", make, root=root, refresh=True)[2]
    assert len(made) == 4
    assert not list(root.glob(".*"))  # no staging or dropped entries left behind
    # only the most recently used entries of a kind are kept: a third key evicts the least recently used one
    assert cache.lookup("wheels", inputs, root) is not None  # used now
    cache.cached_part("wheels", {**inputs, "python": "3.13"}, tmp_path / "b7", make, root=root)
    assert len(list(root.glob("wheels-*"))) == cache.KEEP
    assert cache.lookup("wheels", {**inputs, "python": "3.12"}, root) is None
    assert cache.lookup("wheels", inputs, root) is not None


def test_the_bundled_rust_is_the_packing_machines_toolchain_without_docs_or_tools():
    from tileport.exec.toolchain import resolve
    from tileport.offline import rust

    assert rust.find(None)[0] is None and "no rustc" in rust.find(None)[1]
    rustc = resolve().rustc
    if rustc is None:
        pytest.skip("no rustc on this machine")
    tc, why = rust.find(rustc)
    if tc is None:
        pytest.skip(why)
    version = subprocess.run([str(rustc), "-V"], capture_output=True, text=True).stdout
    assert tc.version in version and tc.archive == f"rust/rust-{tc.version}-{tc.host}.tar.gz"
    names = [p.relative_to(tc.sysroot).as_posix() for p in rust.members(tc)]
    assert {"bin/cargo", "bin/rustc", f"lib/rustlib/{tc.host}"} <= set(names)
    assert any(n.startswith("lib/librustc_driver-") for n in names)
    assert not any(n.startswith(("share", "bin/rustdoc", "bin/cargo-clippy", "lib/rustlib/src")) for n in names)


def _install_record(tmp_path: Path, monkeypatch, *, rust: bool, vendor_all: bool = True) -> Path:
    b = make_bundle(tmp_path / "b")
    m = json.loads((b / "manifest.json").read_text())
    m["rust"] = {"version": "1.95.0", "host": "x86_64-unknown-linux-gnu"} if rust else None
    (b / "manifest.json").write_text(json.dumps(m))
    dest = tmp_path / "dest"
    vendor = dest / ".offline" / "cargo" / "vendor"
    vendor.mkdir(parents=True)
    for name, version in offline.locked_packages(_lock()):
        if vendor_all or name != "cutile":
            (vendor / f"{name}-{version}").mkdir()
            (vendor / f"{name}-{version}" / ".cargo-checksum.json").write_text("{}")
    if rust:  # a fake toolchain (two scripts): only where tileport looks for cargo/rustc is under test here
        bin_dir = dest / ".offline" / "rust" / "bin"
        bin_dir.mkdir(parents=True)
        for tool in ("cargo", "rustc"):
            (bin_dir / tool).write_text("#!/bin/sh\necho fake\n")
            (bin_dir / tool).chmod(0o755)
    prefix = tmp_path / "venv"
    prefix.mkdir()
    offline.write_record(b, dest, prefix=prefix)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    return dest


def test_an_offline_install_builds_with_the_bundled_rust_and_its_own_cargo_home(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from tileport.exec.toolchain import resolve
    from tileport.validators.rust import build as rb

    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "users-cargo-home"))
    dest = _install_record(tmp_path, monkeypatch, rust=True)
    rust_bin = dest.resolve() / ".offline" / "rust" / "bin"
    tc = resolve()
    assert (tc.cargo, tc.rustc) == (rust_bin / "cargo", rust_bin / "rustc")  # before ~/.cargo/bin and PATH
    env = tc.cargo_env()
    assert env["CARGO_HOME"] == str(dest.resolve() / ".offline" / "cargo")  # never the user's ~/.cargo
    assert env["RUSTC"] == str(rust_bin / "rustc") and env["PATH"].split(os.pathsep)[0] == str(rust_bin)
    profile = rb.build_profile(SimpleNamespace(root=tmp_path / "crate"), tc, rb.BuildOptions(target_dir=tmp_path / "t"))
    assert (dest.resolve() / ".offline" / "rust") in profile.readable  # rustc's lib/ too, not only bin/
    c = doctor.check_offline()
    assert c.status == doctor.OK and "Rust 1.95.0 bundled" in c.detail

    shutil.rmtree(dest / ".offline" / "rust")
    c = doctor.check_offline()
    assert c.status == doctor.MISSING and "bundled Rust is not installed" in c.detail and "install.sh" in c.fix


def test_a_build_in_an_install_missing_a_vendored_crate_names_it_without_running_cargo(tmp_path, monkeypatch):
    from tileport.exec.toolchain import resolve
    from tileport.validators.rust import build as rb
    from tileport.validators.rust import diagnostics as dg

    _install_record(tmp_path, monkeypatch, rust=False, vendor_all=False)
    crate = tmp_path / "crate"
    crate.mkdir()
    (crate / "Cargo.lock").write_text(_lock())
    result = rb.RustBuildResult(crate=str(crate), ok=False, stage="cargo")
    layout = type("Layout", (), {"root": crate})()
    bins = rb.run_cargo_build(layout, resolve(), rb.BuildOptions(target_dir=tmp_path / "t"), result)
    assert bins == {} and result.commands == []
    d = result.diagnostics[0]
    assert d.code == "TP-DEPS-MISSING" and "cutile-0.5.0" in d.message and "install.sh" in d.notes[0]
    assert isinstance(d, dg.Diagnostic)


def test_pack_carries_no_rust_older_than_tileport_needs_and_says_why(tmp_path):
    from tileport.offline import rust

    fake = tmp_path / "rustc"  # a fake rustc (a script): what an old rustup toolchain prints
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --print ]; then echo /opt/old-rust; else\n"
                    "printf 'rustc 1.80.0\\nhost: x86_64-unknown-linux-gnu\\nrelease: 1.80.0\\n'; fi\n")
    fake.chmod(0o755)
    tc, why = rust.find(fake)
    assert tc is None and "1.80.0 is older than 1.89" in why
