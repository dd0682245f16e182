"""The second layer on its own: a hostile port the policy refuses is built anyway, bypassing the policy, and
its load-time constructor (`.init_array`, runs before main) tries to write a file and to connect to a socket on
the host. Unconfined, the IR-dump binary does both; through tileport's builder (cargo and the IR dump in the
sandbox) it does neither, and the build itself still works. Slow: real cargo against the cutile crates."""

from __future__ import annotations

import shutil
import socket
import threading
from pathlib import Path

import pytest

from tileport.errors import EnvironmentBlocked
from tileport.exec import sandbox
from tileport.exec.proc import run_command
from tileport.validators.rust import build as rb
from tileport.validators.rust.crate import crate_cache_root, write_crate
from tileport.validators.rust.policy import check_crate
from tileport.validators.rust.spec import DumpSpec

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

if shutil.which("cargo") is None:
    pytest.skip("cargo is not installed", allow_module_level=True)

SPEC = DumpSpec.model_validate({"module": "vector_add", "targets": ["sm_90"],
                                "entries": [{"name": "add", "variants": [{"name": "b1024", "generics": ["1024"],
                                                                        "strides": {"z": [1], "x": [1], "y": [1]}}]}]})

HOSTILE = """\
#[used]
#[link_section = ".init_array"]
static CTOR: extern "C" fn() = ctor;

extern "C" fn ctor() {
    let _ = std::fs::write("@MARK@", b"constructor ran");
    if std::net::TcpStream::connect("127.0.0.1:@PORT@").is_ok() {
        let _ = std::fs::write("@MARK@.net", b"connected");
    }
}

#[cutile::module]
pub mod vector_add {
    use cutile::core::*;

    #[cutile::entry()]
    fn add<const B: i32>(z: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>, y: &Tensor<f32, { [-1] }>) {
        let tx = x.load_like(z);
        let ty = y.load_like(z);
        z.store(tx + ty);
    }
}
"""


@pytest.fixture
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                srv.accept()[0].close()
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    srv.close()


def test_a_load_time_constructor_runs_unconfined_but_not_in_the_sandbox(tmp_path, listener):
    if not sandbox.status().ok:
        pytest.skip(sandbox.status().detail)
    mark = tmp_path / "escaped"
    src = HOSTILE.replace("@MARK@", str(mark)).replace("@PORT@", str(listener))
    layout = write_crate(crate_cache_root() / "test-hostile-ctor", SPEC, src)
    assert {"TP-ATTRIBUTE", "TP-ITEM"} <= {d.code for d in check_crate(layout)}  # layer 1 refuses it ...
    opts = rb.BuildOptions(cubins=False, disasm=False)
    try:
        tc = rb.resolve_toolchain(opts)
    except EnvironmentBlocked as e:
        pytest.skip(str(e))
    result = rb.RustBuildResult(crate=str(layout.root), ok=False, stage="cargo")
    opts.target_dir.mkdir(parents=True, exist_ok=True)
    bins = rb.run_cargo_build(layout, tc, opts, result)  # ... layer 2 alone from here on
    assert not [d.short() for d in result.diagnostics if d.is_error]
    assert result.commands[-1].sandbox and result.commands[-1].sandbox["profile"] == "cargo-build"
    exe = bins[layout.irdump_bin]
    out = tmp_path / "artifacts"
    out.mkdir()

    jobs = rb.run_ir_dump(layout, exe, out, tc, opts, result)  # in the sandbox
    assert [j.ok for j in jobs] == [True], [d.rendered for d in result.diagnostics]  # the kernel compiled: the sandbox does not get in the way
    assert not mark.exists() and not Path(f"{mark}.net").exists()
    assert result.commands[-1].sandbox["profile"] == "run-model-binary"

    unconfined = run_command([exe, str(out)], cwd=layout.root, env=rb.build_env(tc, opts), timeout=300)
    assert unconfined.ok
    assert mark.read_text() == "constructor ran" and Path(f"{mark}.net").read_text() == "connected"
