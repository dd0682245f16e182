"""The output kinds the generated launcher takes beyond one view tile per block (issue 31 item 4): outputs every
tile dim of which is dynamic (written by ct.scatter, permuted (bid(1), bid(0)) stores, persistent loops over tiles)
are launched whole with the reference's grid; raw pointer parameters are passed as device pointers with their
extents read from the reference's tensor. The port in tests/data/ffi_kinds has one of each; on a GPU it is judged
by `tileport gate` against tests/data/ffi_kinds/kinds.py (docs/gpu-runs.md).
"""

from __future__ import annotations

import lzma
from types import SimpleNamespace

import pytest

from tests.conftest import REPO, run_cli
from tileport.validators.gpu.ffi import direct_layout, render_ffi
from tileport.validators.gpu.hostrun import PortLauncher, classify_message
from tileport.validators.gpu.signature import parse_entries
from tileport.validators.rust.spec import load_spec

KINDS = REPO / "tests" / "data" / "ffi_kinds"
HELDOUT = REPO / "tests" / "data" / "draft_heldout"


def _kinds():
    return render_ffi((KINDS / "kernel.rs").read_text(), load_spec(KINDS / "spec.json"), ["float32"])


def test_a_permuted_store_output_is_bound_whole_and_launched_on_the_callers_stream_without_a_sync():
    f = _kinds()
    entry = PortLauncher(SimpleNamespace(bindings=f.bindings)).select(
        "transpose_kernel", {"TILE": 64}, "float32")
    assert entry["entry"] == "permuted" and not entry["kernel_faults"] and not entry["undecided"]
    fn = f.rust[f.rust.index("fn tp_permuted__f32"):]
    fn = fn[:fn.index("\n}\n")]
    assert "let a_out = value(Out::<f32>::whole::<2>(&ts[1], &ctx, \"out\")?);" in fn
    assert "launch.async_on(&stream)" in fn and ".sync_on(" not in fn
    # every tensor is specialised on what cuTile Python's JIT assumes about it (prelude: reference_spec)
    assert "let a_x = value(In::<f32>::new(&ts[0], &ctx, \"x\", 2)?);" in fn
    assert "spec.shape_div[i].divisor = if d % 16 == 0 { 16 } else { 1 };" in f.rust
    # the prelude's binding accepts the reference's grid: no partition grid is imposed on a whole output
    assert "GridBound::AtMost((u32::MAX, u32::MAX, u32::MAX))" in f.rust


def test_a_pointer_parameter_serves_the_reference_tensor_and_its_extents_come_from_it():
    f = _kinds()
    e = next(e for e in f.bindings["entries"] if e["entry"] == "through_pointer")
    assert e["param_map"] == {"out_ptr": "out"} and not e["undecided"]
    params = {p["name"]: p for p in e["params"]}
    assert params["out_ptr"]["kind"] == "ptr"
    assert params["out_dim_0"]["of"] == {"param": "out_ptr", "what": "shape", "axis": 0}
    assert params["out_stride_0"]["of"] == {"param": "out_ptr", "what": "stride", "axis": 0}
    assert "let a_out_ptr = device_pointer::<f32>(&ts[1], \"out_ptr\")?;" in f.rust


def test_a_rank4_output_taken_as_a_shared_tensor_is_passed_whole_as_the_reference_launches_it():
    """cutile-compiler 0.5.0 refuses a `&mut Tensor` parameter above rank 3 (kernel_entry_generator.rs:132-139), so a
    rank-4 output is a `&Tensor` the kernel writes through an unsafe PartitionMut (`tileport draft`'s
    `shared_output`). cutile launches a `&Tensor` of any rank as its pointer, shape and strides (tensor.rs:2415-2431)
    on the grid it is given (tile_kernel.rs:1337-1341): the launcher binds the reference's output tensor there,
    every dim, with no partition and no grid bound from it."""
    f = _kinds()
    entry = PortLauncher(SimpleNamespace(bindings=f.bindings)).select("scale4_kernel", {"TILE": 32}, "float32")
    assert entry["entry"] == "shared4" and not entry["kernel_faults"] and not entry["undecided"]
    assert [(p["name"], p["kind"], len(p["dims"])) for p in entry["params"]] == [("x", "in", 4), ("out", "in", 4)]
    assert entry["generics"][1] == {"name": "TILE", "kind": "const", "from": "constant", "constant": "TILE"}
    fn = f.rust[f.rust.index("fn tp_shared4__f32"):]
    fn = fn[:fn.index("\n}\n")]
    assert "let a_out = value(In::<f32>::new(&ts[1], &ctx, \"out\", 4)?);" in fn and "Out::<" not in fn
    sigs = {s.name: s for s in parse_entries((KINDS / "kernel.rs").read_text())}
    assert direct_layout(sigs["shared4"]) == ([(0, 0), (1, 9)], 18)  # two &Tensor of rank 4: 1 + 2 x 4 each


def test_the_direct_launch_path_is_recorded_only_after_a_warm_launch_through_cutile_succeeded():
    """Issue 34 item 3: a repeated launch goes straight to cuLaunchKernel with the parameters cutile marshalled.
    The generated entry takes the direct path only from a record `fast_capture` keeps, which it makes only after
    cutile's own launcher succeeded on a signature launched before (rc 0 and warm) that no record serves; up to 16
    signatures per entry get one. A record is matched field by field (no hashing on the direct path); a direct
    launch the driver refuses is run through cutile instead, never captured again."""
    f = _kinds()
    fn = f.rust[f.rust.index("fn tp_permuted__f32"):]
    fn = fn[:fn.index("\n}\n")]
    # the direct path is tried first, and falls through to cutile's launcher when no record serves the launch
    assert fn.index("let direct = fast_launch(&FAST, stream, device, grid, generics,") < fn.index("guarded_warm(")
    assert "if let Direct::Launched = direct {" in fn and "exact_key" not in fn
    assert fn.count("fast_capture(") == 1
    capture = fn[fn.index("let (rc, warm) = guarded_warm("):]
    assert capture.index("if rc == 0 && warm && matches!(direct, Direct::NoRecord)") < capture.index(
        "fast_capture(&FAST, device, grid0, generics0, tensors0, ntensors, scalars0, nscalars, &[(0, 0), (1, 5)], 14, "
        "false, &body)")
    # the capture records cutile's launch into a graph without going through async_on (with it, the H200 run's
    # captures were invalidated) and without running it
    assert "if mode == CAPTURE {" in fn and "launch.execute(&ectx)" in fn and "std::mem::forget(ectx);" in fn
    assert "guarded_warm(err, errlen, key, || body(stream0, LAUNCH).map(|_| ()))" in fn
    assert "HINT_FREE {" not in fn  # no integer scalar: the captured function is the reference-faithful one
    # a record is published in one place, after the captured parameters matched the signature's layout
    assert f.rust.count(".recs[n].set(") == 1 and "pub const TP_FAST_RECORDS: usize = 16;" in f.rust
    record = f.rust[f.rust.index("unsafe fn fast_record"):f.rust.index("enum Direct")]
    assert record.index("count != nparams") < record.index("Ok(f)")
    direct = f.rust[f.rust.index("unsafe fn fast_launch"):]
    # the direct launch compares, fills and launches: no hash, no lock, no allocation; the context only when another
    assert "f.sig.matches(" in direct and "hash" not in direct and ".lock()" not in direct.split("if r != 0")[0]
    assert "if cu::cuCtxGetCurrent(&mut cur) != 0 || cur as usize != f.ctx {" in direct
    assert "return Direct::Refused;" in direct
    # x: &Tensor rank 2 (pointer, 2 dims, 2 strides); out: whole &mut Tensor rank 2 (+ partition dims and strides)
    sigs = {s.name: s for s in parse_entries((KINDS / "kernel.rs").read_text())}
    assert direct_layout(sigs["permuted"]) == ([(0, 0), (1, 5)], 14)
    # x: &Tensor rank 1 (3 values), out_ptr: one device pointer, then the two extent scalars
    assert direct_layout(sigs["through_pointer"]) == ([(0, 0), (1, 3)], 6)


@pytest.mark.parametrize("op", ["transpose", "embedding", "masked_axpby"])
def test_held_out_drafts_with_scatter_or_permuted_outputs_have_a_launchable_entry(op, tmp_path):
    r = run_cli("draft", str(HELDOUT / f"{op}.py"), "--out", str(tmp_path / op), timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    f = render_ffi((tmp_path / op / "kernel.rs").read_text(), load_spec(tmp_path / op / "spec.json"), ["float32"])
    assert f.bindings["entries"] and all(not e["kernel_faults"] for e in f.bindings["entries"])
    assert "Out::<" in f.rust and "::whole::<" in f.rust


@pytest.mark.slow
def test_the_kinds_launcher_builds_and_refuses_a_wrong_call_in_one_line_without_a_gpu(tmp_path):
    gate = tmp_path / "gate-kinds"
    r = run_cli("gate", "pack", str(KINDS), "--op", str(KINDS / "kinds.py"), "--out", str(gate), timeout=1500)
    assert r.returncode == 0, r.stderr + r.stdout
    so = tmp_path / "libport.so"
    with lzma.open(gate / "lib" / "libport.so.xz") as f:
        so.write_bytes(f.read())
    from tileport.validators.gpu.hostrun import PortLibrary
    lib = PortLibrary(so)
    x = {"ptr": 4096, "shape": [1000, 300], "strides": [300, 1]}
    out = {"ptr": 8192, "shape": [300, 1000], "strides": [1000, 1], "part": [64, 64]}
    assert lib.fast_stats() == {"direct": 0, "recorded": 0, "refused": 0, "driver_refused": 0, "hint_free": 0,
                               "hint_free_failed": 0, "note": ""}
    rc, msg = lib.call("tp_permuted__f32", stream=0, device=0, grid=(16, 5, 1), generics=["f32", "64"], tensors=[x],
                       scalars=[])
    assert rc == 1 and msg == "permuted: 1 tensors and 0 scalars given, the entry takes 2 and 0", msg
    rc, msg = lib.call("tp_permuted__f32", stream=0, device=0, grid=(16, 5, 1), generics=["f32", "64"],
                       tensors=[x, out], scalars=[])
    if rc != 0:  # no driver here: the launch stops at the context, as an environment fault
        assert rc == 1 and classify_message(msg, "host") == "env", msg
        # a launch that failed is never recorded for the direct path, however often it is repeated
        for _ in range(2):
            assert lib.call("tp_permuted__f32", stream=0, device=0, grid=(16, 5, 1), generics=["f32", "64"],
                            tensors=[x, out], scalars=[])[0] == 1
        assert lib.fast_stats() == {"direct": 0, "recorded": 0, "refused": 0, "driver_refused": 0, "hint_free": 0,
                                    "hint_free_failed": 0, "note": ""}


def test_an_entry_with_integer_scalars_launches_directly_what_compiles_without_their_value_hints(tmp_path):
    """Issue 34: cutile's launcher assumes of every integer scalar the divisibility of its value (`n` = 11008:
    div_by<16>), cuTile Python of none; under that hint tileiras 13.5 built silu_and_mul with 101 registers and no
    shared memory where the reference's IR gives 57 and 9 KB (H200: 118 / none against 55 / 8 KB, 1.18x). The
    direct path's record of such an entry launches the function compiled from the same key with those hints
    replaced by what the reference assumes: nothing for a plain scalar; for an extent of a tensor the port takes
    by pointer, what the reference assumes of that tensor (16 | dim, a stride's 16 bytes)."""
    r = run_cli("draft", str(REPO / "examples" / "silu_and_mul.py"), "--out", str(tmp_path / "d"), timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    f = render_ffi((tmp_path / "d" / "kernel.rs").read_text(), load_spec(tmp_path / "d" / "spec.json"), ["float16"])
    fn = f.rust[f.rust.index("fn tp_silu_and_mul__f16"):]
    fn = fn[:fn.index("\n}\n")]
    hint_free = fn[fn.index("if mode == HINT_FREE {"):fn.index("unsafe { launch.async_on(&stream) }")]
    assert ".filter(|(n, _)| ![\"n\"].contains(&n.as_str()))" in hint_free and "hints.push" not in hint_free
    assert "compile_from_context(&ectx, crate::kernel::silu_and_mul::__module_ast_self" in hint_free
    assert "key.spec_args, hints, key.grid, key.compile_options" in hint_free
    assert fn.count("true, &body);") == 1  # fast_capture(..., hint_free: true, &body)
    kinds = _kinds().rust
    ptr = kinds[kinds.index("fn tp_through_pointer__f32"):]
    ptr = ptr[:ptr.index("\n}\n")]
    assert 'hints.push(("out_dim_0".to_string(), DivHint { divisor: if a_out_dim_0 % 16 == 0 { 16 } else { 1 }' in ptr
    assert "size_of::<f32>()" in ptr and 'hints.push(("out_stride_0"' in ptr
    # the record takes that function only where its parameters sit as the captured function's did
    direct = kinds[kinds.index("unsafe fn fast_hint_free"):kinds.index("enum Direct")]
    assert "cuFuncGetParamInfo(func as cu::CUfunction" in direct and direct.index("off == f.offsets[i]") < \
        direct.index("f.func = func;")
