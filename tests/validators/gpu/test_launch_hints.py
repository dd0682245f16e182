"""A kernel an op re-wraps per launch with other compiler hints is served by the port entry drafted for those
hints, not by the first entry of its name.

Found on an H200 (docs/gpu-runs.md, eighth session): the cutile-rs paper's persistent GEMM launches
`ct.kernel(gemm_persistent._pyfunc, num_ctas=N, occupancy=1)` with N = 4 for its 1024 size and N = 2 above. The draft
wrote one entry per hint value, but the launcher chose between them by constants only, which were equal (the tile
sizes are generics of both), so every launch ran the num_ctas=4 entry. The port's tests passed, and stage E timed it at
0.12-0.27x the reference: the bytecode both sides compiled, diffed, said `hints.num_cta_in_cga ... 2 in the reference
but 4 in the port`."""

from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import cuda.tile as ct

from tileport.validators.gpu.ffi import render_ffi
from tileport.validators.gpu.hostrun import PortLauncher, _plan_key, _signature, kernel_hints
from tileport.validators.rust.spec import load_spec

KERNEL_RS = textwrap.dedent('''
    #[cutile::module]
    pub mod hinted {
        use cutile::core::*;

        #[cutile::entry(optimization_hints = (default = (num_cta_in_cga = 4, occupancy = 1,),))]
        fn scale_hint_num_ctas_4<E: ElementType, const TILE: i32>(x: &Tensor<E, { [-1] }>, out: &mut Tensor<E, { [TILE] }>) {
            let xs: Partition<E, { [TILE] }> = x.partition(shape![TILE]);
            let t: Tile<E, { [TILE] }> = xs.load([program_id(0)]);
            out.store(t);
        }

        #[cutile::entry(optimization_hints = (default = (num_cta_in_cga = 2, occupancy = 1,),))]
        fn scale_hint_num_ctas_2<E: ElementType, const TILE: i32>(x: &Tensor<E, { [-1] }>, out: &mut Tensor<E, { [TILE] }>) {
            let xs: Partition<E, { [TILE] }> = x.partition(shape![TILE]);
            let t: Tile<E, { [TILE] }> = xs.load([program_id(0)]);
            out.store(t);
        }
    }
''')


def _spec(path):
    def entry(name, tile, ctas):
        return {"name": name, "variants": [{
            "name": f"f32_{tile}", "generics": ["f32", str(tile)],
            "reference": {"kernel": "scale_kernel", "constants": {"TILE": tile}, "dtype": "float32", "params": {},
                          "hints": {"num_ctas": ctas, "occupancy": 1}},
            "strides": {"x": [1], "out": [1]}}]}
    path.write_text(json.dumps({"module": "hinted", "entries": [entry("scale_hint_num_ctas_4", 128, 4),
                                                                 entry("scale_hint_num_ctas_2", 256, 2)]}))
    return load_spec(path)


def scale_kernel(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(out, index=(ct.bid(0),), tile=t)


def test_each_launch_is_served_by_the_entry_drafted_for_its_kernel_objects_hints(tmp_path):
    bindings = render_ffi(KERNEL_RS, _spec(tmp_path / "spec.json"), ["float32"]).bindings
    launcher = PortLauncher(SimpleNamespace(bindings=bindings))
    for ctas, tile in ((2, 256), (4, 128), (2, 128), (4, 256)):  # the tile is a generic of both entries
        k = ct.kernel(scale_kernel, num_ctas=ctas, occupancy=1)
        assert kernel_hints(k) == {"hint:num_ctas": ctas, "hint:occupancy": 1}
        entry = launcher.select("scale_kernel", {"TILE": tile, **kernel_hints(k)}, "float32")
        assert entry["entry"] == f"scale_hint_num_ctas_{ctas}"
    # a launch whose kernel object says nothing of its hints is not refused (either entry serves it)
    plain = ct.kernel(scale_kernel)
    assert kernel_hints(plain) == {}
    assert launcher.select("scale_kernel", {"TILE": 64}, "float32")["entry"].startswith("scale_hint_num_ctas_")


def test_one_function_wrapped_with_two_hint_values_gets_two_launch_plans():
    two, four = ct.kernel(scale_kernel, num_ctas=2), ct.kernel(scale_kernel, num_ctas=4)
    args = (None, None, 64)
    assert _plan_key(_signature(two), args, two) != _plan_key(_signature(four), args, four)
    assert _plan_key(_signature(two), args, two) == _plan_key(_signature(two), args, ct.kernel(scale_kernel, num_ctas=2))


def test_the_reference_bytecode_of_a_row_is_the_one_its_launch_compiled_not_the_first_of_its_name(tmp_path):
    """The same H200 run: the persistent GEMM's reference compiled `gemm_persistent` twice (num_ctas=4 for its
    1024 size, 2 above), and the evidence took the first dump file holding that symbol for every row, so the
    1024 row was diffed against the other specialisation. The replay now passes the files a configuration's
    first reference launch wrote (or an earlier launch of the same specialisation did); only with none does the
    evidence fall back to the name, and says so."""
    from tileport.validators.gpu.hostrun import BytecodeDumps, bytecode_evidence

    dumps = BytecodeDumps(tmp_path)
    (dumps.ref_dir / "gemm_persistent.op.ln43.aaaa.tileirbc").write_bytes(b"TileIR gemm_persistent num_ctas=4")
    before = dumps.reference_files()
    (dumps.ref_dir / "gemm_persistent.op.ln43.zzzz.tileirbc").write_bytes(b"TileIR gemm_persistent num_ctas=2")
    compiled = dumps.compiled_since(before, ("two",))
    assert compiled == ["gemm_persistent.op.ln43.zzzz.tileirbc"]
    # a later launch of the same specialisation hits the JIT cache and writes nothing: it gets the same files
    assert dumps.compiled_since(dumps.reference_files(), ("two",)) == compiled
    assert dumps.compiled_since(dumps.reference_files(), ("never compiled here",)) == []
    lib = SimpleNamespace(compiled={})
    store: dict = {}
    seen = bytecode_evidence(dumps, lib, ["gemm_persistent"], [], store, compiled)
    import base64
    assert base64.b64decode(store[seen["ref"][0]]).endswith(b"num_ctas=2") and "ref_by" not in seen
    by_name = bytecode_evidence(dumps, lib, ["gemm_persistent"], [], store)
    assert base64.b64decode(store[by_name["ref"][0]]).endswith(b"num_ctas=4")
    assert by_name["ref_by"].startswith("kernel name")
