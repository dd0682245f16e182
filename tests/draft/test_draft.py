"""The deterministic draft translator on real analyses (real cuda-tile exports, sm_90, no cubins; no cargo).

What a user notices: which entries and variants a draft has, that branches fold into entries, that modes
(padding, flush-to-zero, approximate rounding, accumulator dtype, occupancy) survive, and that anything outside
the subset is a precise hole (`unsupported: ct.X at op.py:L:C`), never silently wrong code.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tileport.draft import draft_port
from tileport.analysis import analyze_op

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    root = tmp_path_factory.mktemp("draft-ref")
    cache = {}

    def get(op: str, path: Path | None = None):
        if op not in cache:
            cache[op] = analyze_op(path or REPO / "examples" / f"{op}.py", targets=["sm_90"], out_dir=root / op,
                                   run_tileiras=False, warm=True)
        return cache[op]
    return get


def test_vector_add_is_complete_with_one_variant_per_dtype(analyses):
    d = draft_port(analyses("vector_add"))
    assert d.holes == []
    assert "fn vector_add<E: ElementType, const TILE: i32>(" in d.kernel_rs
    assert "x.partition(shape![TILE])" in d.kernel_rs  # a view load with zero padding, as the reference
    # one store per block at bid(0): the output is declared with its static tile, as cutile launches outputs
    assert "out: &mut Tensor<E, { [TILE] }>" in d.kernel_rs
    # ... and stored at the reference's own index, through a view of the whole output (not cutile's block-relative
    # `out.store`, which indexes every axis by its block id)
    assert "unsafe { out.partition_full_mut(shape![TILE]) };" in d.kernel_rs
    assert "out_tiles.store(a + b, [block]);" in d.kernel_rs and "out.store(" not in d.kernel_rs
    [entry] = d.spec.entries
    assert sorted((v.reference.dtype, tuple(v.generics)) for v in entry.variants) == [
        ("bfloat16", ("bf16", "1024")), ("float16", ("f16", "1024")), ("float32", ("f32", "1024"))]
    assert entry.variants[0].tensors["x"].base_align == 16  # the reference's alignment assumptions travel
    [host] = d.host_contract.entries
    assert host.generics == ["E", "TILE"]
    assert [(p.name, p.output) for p in host.params] == [("x", False), ("y", False), ("out", True)]
    assert host.params[2].partition == ["TILE"]


def test_constant_branch_becomes_its_own_entry(analyses):
    d = draft_port(analyses("softmax"))
    assert d.holes == []
    names = [e.name for e in d.spec.entries]
    assert names == ["softmax_row", "softmax_row_fuse_scale", "softmax_chunked", "softmax_chunked_fuse_scale"]
    entries = d.kernel_rs.split("#[cutile::entry")
    plain = next(e for e in entries if "fn softmax_row<" in e)
    fused = next(e for e in entries if "fn softmax_row_fuse_scale<" in e)
    assert "scale.broadcast" not in plain and "scale.broadcast" in fused
    assert "padding::NegInf" in plain  # tiled_view(..., padding_mode=NEG_INF) keeps its padding
    for e in d.spec.entries:
        fuse = e.name.endswith("fuse_scale")
        assert all(v.reference.constants["FUSE_SCALE"] is fuse for v in e.variants)


def test_integer_branch_folds_and_keeps_the_constant_it_still_uses(analyses):
    d = draft_port(analyses("rms_norm"))
    assert d.holes == []
    single, chunked = d.host_contract.entries
    assert single.generics == ["E", "TILE_N"]  # CHUNKS == 1 folded away
    # range(CHUNKS) still needs CHUNKS; the output is one row slab per block, its extent bound at launch
    assert chunked.generics == ["E", "TILE_N", "CHUNKS", "OUT_DIM1"]
    assert "for c in 0i32..CHUNKS {" in d.kernel_rs
    assert "rsqrt(" in d.kernel_rs and "ftz::Disabled" in d.kernel_rs


def test_attention_keeps_fast_math_permuted_load_and_accumulator(analyses):
    d = draft_port(analyses("attention"))
    assert d.holes == []
    rs = d.kernel_rs
    assert "exp2(scores - m_new.broadcast(shape![TILE_M, TILE_N]), ftz::Enabled)" in rs
    assert "rounding::Approx" in rs
    assert "partition_permuted(shape![1, HEAD_DIM, TILE_N], const_array![0, 2, 1])" in rs
    assert "let mut acc: Tile<f32, { [TILE_M, HEAD_DIM] }>" in rs
    causal = rs.split("fn attention_fwd_causal")[1]
    assert "ge_tile(" in causal and "ge_tile(" not in rs.split("fn attention_fwd_causal")[0]


def test_persistent_loop_floor_division_and_occupancy(analyses):
    d = draft_port(analyses("persistent_matmul"))
    assert d.holes == []
    rs = d.kernel_rs
    assert "optimization_hints = (default = (occupancy = 1,),)" in rs
    assert ".step_by(num_programs(0) as usize)" in rs
    assert "rounding::NegativeInf" in rs  # Python's // rounds toward -inf
    assert "remi(" in rs and "select(" in rs  # Python's % is a floor modulo


def test_gather_and_scatter_become_pointer_tiles_with_bounds_masks_and_padding(analyses):
    d = draft_port(analyses("gather_softmax"))
    assert d.holes == []
    rs = d.kernel_rs
    assert "fn tensor_strides_2<" in rs and "let x_strides: Array<{ [-1, 1] }> = tensor_strides_2(x);" in rs
    assert rs.count("load_ptr_tko(") == 8 and rs.count("store_ptr_tko(") == 4  # row id + row, per entry
    # an op-dtype literal (the -inf padding of masked lanes) has no generic spelling: one entry per dtype
    assert [e.name for e in d.spec.entries] == ["gather_softmax_f16", "gather_softmax_f32",
                                                "gather_softmax_log_softmax_f16", "gather_softmax_log_softmax_f32"]
    assert "constant(f16::NEG_INFINITY, shape![])" in rs and "constant(f32::NEG_INFINITY, shape![])" in rs
    assert "Some(x_g_pad_" in rs  # ... passed to load_ptr_tko as the padding scalar
    assert {v.reference.dtype for v in d.spec.entries[0].variants} == {"float16"}
    assert "Tile<u64, { [TILE_N] }> = exti(cols)" in rs  # i64 offsets; unsigned bounds checks
    assert "x_strides.dims[0]" in rs
    assert "& in_row" in rs  # the user's mask and-ed after the bounds checks


def test_slices_become_tensor_views_over_an_offset_base(analyses):
    d = draft_port(analyses("silu_and_mul"))
    assert d.holes == []
    rs = d.kernel_rs
    # x.slice(axis=1, start=n, stop=2 * n): base + n * stride[1], shape [M, 2n - n], x's strides
    assert "let up_half_shape: Shape<{ [-1, -1] }> = Shape::<{ [-1, -1] }> { dims: &[x.shape()[0], (2i32 * n) - n] };" in rs
    assert "scalar_to_tile(n * 1i32)" in rs
    assert "make_tensor_view(up_half_base, up_half_shape, x_strides, x.token())" in rs
    assert "assume_div_by::<_, 16>" in rs  # the slice at offset 0 keeps the base alignment
    assert "let up_half_tiles: Partition<E, { [TILE_M, TILE_N] }> = up_half.partition(" in rs
    # a view built in the kernel is read with the plain view load cuTile Python's ct.load is: cutile cannot
    # discharge Partition::load's bounds check for it, and the check would stay in the kernel as asserts
    assert ("load_view_tko(&up_half_tiles, [row_block, col_block], ordering::Weak, scope::TileBlock, None, "
            "tma::Enabled)") in rs
    assert "_tiles.load(" not in rs


RUNTIME_IF_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def clamp_kernel(x, out, n, TILE: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        if n > 4:
            t = t * t
        p = ct.cumprod(t, axis=0)
        ct.store(out, index=(b,), tile=p)

    def clamp_op(x, out, n):
        import torch
        ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.shape[0], 128), 1, 1), clamp_kernel, (x, out, n, 128))
    ''')


@pytest.fixture
def clamp_op(tmp_path):
    op = tmp_path / "clamp_op.py"
    op.write_text(RUNTIME_IF_OP, encoding="utf-8")
    return op


def test_runtime_branch_is_a_rust_if_and_a_hole_does_not_poison_what_follows(analyses, clamp_op):
    d = draft_port(analyses("clamp_op", clamp_op))
    rs = d.kernel_rs
    # `if` on a run-time scalar: a Rust `if` on the scalar test; the value it reassigns is carried (a `let mut` copy)
    assert "if n > 4i32 {" in rs
    carried = re.search(r"let mut (t_\d+): Tile<E, \{ \[TILE\] \}> = t;", rs)
    assert carried and f"{carried.group(1)} = {carried.group(1)} * {carried.group(1)};" in rs
    # one construct the draft does not write: one hole; its output is a typed placeholder the store still reads
    assert [str(h) for h in d.holes] == [
        "unsupported: ct.cumprod at clamp_op.py:10:9 (cutile-rs has scan(x, axis, reverse, 1, mul); the draft does "
        "not write it yet)"]
    assert "let p: Tile<E, { [TILE] }> = tileport_hole_h1;" in rs
    assert re.search(r"out(_tiles)?\.store\(p", rs), rs


def test_write_puts_kernel_spec_and_contract(analyses, tmp_path):
    d = draft_port(analyses("matmul"))
    paths = d.write(tmp_path / "draft")
    assert sorted(p.name for p in paths) == ["host_contract.json", "kernel.rs", "spec.json"]
    spec = json.loads((tmp_path / "draft" / "spec.json").read_text())
    assert {tuple(v["generics"]) for v in spec["entries"][0]["variants"]} == {
        ("f16", "128", "128", "64"), ("bf16", "128", "128", "64"), ("f16", "64", "64", "32"), ("bf16", "64", "64", "32")}
    contract = json.loads((tmp_path / "draft" / "host_contract.json").read_text())
    # the launch grid, resolved from the wrapper's `grid = ...` for the Host stage
    assert contract["entries"][0]["grid"] == ["(ct.cdiv(m, tm), ct.cdiv(n, tn), 1)"]


def test_cli_draft_writes_and_reports(cli, tmp_path, analyses, clamp_op):
    ref = analyses("vector_add")
    r = cli("draft", "examples/vector_add.py", "--analysis", ref.out_dir, "--out", str(tmp_path / "va"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "va" / "kernel.rs").is_file()
    assert "complete: check it with `tileport build-rust" in r.stdout
    ref = analyses("clamp_op", clamp_op)
    r = cli("draft", str(clamp_op), "--analysis", ref.out_dir, "--out", str(tmp_path / "co"))
    assert r.returncode == 1
    assert "unsupported: ct.cumprod at clamp_op.py:10:9" in r.stdout
    assert (tmp_path / "co" / "kernel.rs").is_file()  # the partial draft is written for a writer to finish


def test_cli_draft_bad_input_is_one_line(cli, tmp_path):
    r = cli("draft", str(tmp_path / "missing.py"))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr
    (tmp_path / "notes.txt").write_text("x")
    r = cli("draft", str(tmp_path / "notes.txt"))
    assert r.returncode == 2 and "not a Python file" in r.stderr


def test_tuple_unpacking_of_block_ids_and_shapes(analyses, tmp_path):
    op = tmp_path / "unpack_op.py"
    op.write_text(textwrap.dedent('''
        import cuda.tile as ct

        @ct.kernel
        def unpack_kernel(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
            pm, pn = ct.bid(0), ct.bid(1)
            m, n = x.shape
            t = ct.load(x, index=(pm, pn), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)
            ct.store(out, index=(pm, pn), tile=t)

        def unpack_op(x, out):
            import torch
            ct.launch(torch.cuda.current_stream(), (4, 4, 1), unpack_kernel, (x, out, 32, 32))
        '''), encoding="utf-8")
    d = draft_port(analyses("unpack_op", op))
    assert d.holes == []
    assert "let pm: i32 = program_id(0);" in d.kernel_rs and "let pn: i32 = program_id(1);" in d.kernel_rs
    assert "let n: i32 = x.shape()[1];" in d.kernel_rs


def _launch_faults(d) -> dict[str, list[str]]:
    """What the gate's launcher generator refuses, per entry (the check that failed all 71 cases on the H200)."""
    from tileport.validators.gpu.ffi import entry_bindings
    from tileport.validators.gpu.signature import parse_entries
    return {s.name: entry_bindings(s, d.spec, ["float16"])["kernel_faults"] for s in parse_entries(d.kernel_rs)}


@pytest.mark.parametrize("op", ["vector_add", "matmul", "silu_and_mul"])
def test_one_store_per_block_outputs_are_launchable(analyses, op):
    d = draft_port(analyses(op))
    faults = _launch_faults(d)
    assert faults and all(f == [] for f in faults.values()), faults
    assert "keeps dynamic tile dims" not in d.kernel_rs


def test_outputs_stored_in_a_loop_become_one_slab_per_block(analyses):
    d = draft_port(analyses("softmax"))
    soft = _launch_faults(d)
    assert all(f == [] for f in soft.values()), soft
    chunked = next(e for e in d.kernel_rs.split("#[cutile::entry") if "fn softmax_chunked<" in e)
    # the row's slab spans the output's columns: a const generic the launcher binds to out.shape[1]
    assert "fn softmax_chunked<E: ElementType, const TILE_N: i32, const OUT_DIM1: i32>(" in chunked
    assert "out: &mut Tensor<E, { [1, OUT_DIM1] }>" in chunked
    # the reference stores at (row, j): so does the port, through a view of the whole output (a block-relative
    # (0, j) would add bid(y) to j on the store path)
    assert "= unsafe { out.partition_full_mut(shape![1, TILE_N]) };" in chunked
    assert "dst.store(out_tile, [row, j]);" in chunked and "[0i32, j]" not in chunked
    from tileport.validators.gpu.ffi import entry_bindings
    from tileport.validators.gpu.signature import parse_entries
    sig = next(s for s in parse_entries(d.kernel_rs) if s.name == "softmax_chunked")
    binds = {b["name"]: b for b in entry_bindings(sig, d.spec, ["float16"])["generics"]}
    assert binds["OUT_DIM1"]["from"] == "extent" and (binds["OUT_DIM1"]["param"], binds["OUT_DIM1"]["axis"]) == ("out", 1)
    assert binds["TILE_N"] == {"name": "TILE_N", "kind": "const", "from": "constant", "constant": "TILE_N"}
    entry = next(e for e in d.spec.entries if e.name == "softmax_chunked")
    assert {tuple(v.generics[1:]) for v in entry.variants} == {("2048", "2048")}  # one tile, for the IR check
    assert {g: (x.param, x.axis) for g, x in entry.extents.items()} == {"OUT_DIM1": ("out", 1)}  # what tells ffi


def test_permuted_scatter_and_persistent_outputs_stay_dynamic_with_a_reason(analyses):
    att = draft_port(analyses("attention"))
    assert "its store index is (bid(1), bid(0), 0): bid(1) indexes axis 0" in att.kernel_rs
    # the gate launches such an output whole, with the reference's grid (tileport.validators.gpu.ffi.whole_output)
    assert all(f == [] for f in _launch_faults(att).values())
    gs = draft_port(analyses("gather_softmax"))
    assert "written by pointer stores (ct.scatter)" in gs.kernel_rs
    pm = draft_port(analyses("persistent_matmul"))
    assert "no store index is a block id" in pm.kernel_rs and all(f == [] for f in _launch_faults(pm).values())


def test_a_store_whose_loop_may_revisit_a_tile_is_ordered_through_the_loop_token_as_the_reference(analyses):
    # persistent_matmul stores at (pid_m, pid_n) computed from the loop counter: cuTile Python chains those stores
    # through a token the loop carries; cutile 0.5 carries none through a range loop, so the draft threads one
    pm = draft_port(analyses("persistent_matmul")).kernel_rs
    assert "let mut c_tok: Token = c.token();" in pm
    assert "make_partition_view_mut(c, shape![TILE_M, TILE_N], padding::None, c_tok) };" in pm
    assert "c_tiles_at.store(c_tile, [pid_m, pid_n]);\n" in pm and "c_tok = get_partition_token_mut(&c_tiles_at);" in pm
    assert "c_tiles.store(" not in pm and "let mut c_tiles:" not in pm  # the hoisted view only counts tiles now
    assert "unchecked_accesses = true" in pm
    # softmax's chunked store at (row, j), j the loop counter, is cuTile's parallel loop store: not ordered
    sm = draft_port(analyses("softmax")).kernel_rs
    assert "_tok" not in sm and "dst.store(out_tile, [row, j]);" in sm


ROW_SCATTER_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def row_scatter_kernel(x, out, N_ROWS: ct.Constant[int], TILE: ct.Constant[int]):
        # a persistent loop scattering one row per trip (a pointer store is never cuTile's parallel loop store)
        for row in range(ct.bid(0), N_ROWS, ct.num_blocks(0)):
            cols = ct.arange(TILE, dtype=ct.int32)
            t = ct.gather(x, (row, cols))
            ct.scatter(out, (row, cols), t)

    def row_scatter(x, out):
        import torch
        ct.launch(torch.cuda.current_stream(), (4, 1, 1), row_scatter_kernel, (x, out, 64, 128))
    ''')


def test_scatters_in_a_loop_carry_their_token_from_trip_to_trip(analyses, tmp_path):
    op = tmp_path / "row_scatter.py"
    op.write_text(ROW_SCATTER_OP, encoding="utf-8")
    d = draft_port(analyses("row_scatter", op))
    assert d.holes == []
    k = d.kernel_rs
    assert "let mut out_token: Token = get_tensor_token(out);" in k
    store = next(line.strip() for line in k.splitlines() if "store_ptr_tko(" in line)
    assert store.startswith("out_token = unsafe { store_ptr_tko(") and "Some(out_token), Latency" in store


TWO_STORES_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def halves_kernel(x, out, dup, OUT_DIM1: ct.Constant[int], TILE: ct.Constant[int]):
        row = ct.bid(0)
        t = ct.load(x, index=(row, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
        ct.store(out, index=(row, 0), tile=t)
        ct.store(out, index=(row, 1), tile=t + t)
        for j in range(OUT_DIM1):
            ct.store(dup, index=(row, 0), tile=t)

    def halves(x, out, dup):
        import torch
        ct.launch(torch.cuda.current_stream(), (x.shape[0], 1, 1), halves_kernel, (x, out, dup, 2, 128))
    ''')


def test_several_stores_per_block_make_a_slab_and_one_tile_stored_twice_stays_dynamic(analyses, tmp_path):
    op = tmp_path / "halves.py"
    op.write_text(TWO_STORES_OP, encoding="utf-8")
    d = draft_port(analyses("halves", op))
    assert d.holes == []
    # two stores per block at (row, 0) and (row, 1): a row slab, named clear of the kernel's own OUT_DIM1
    assert "out: &mut Tensor<E, { [1, OUT_DIM1_] }>" in d.kernel_rs
    assert "const OUT_DIM1: i32" in d.kernel_rs and "const OUT_DIM1_: i32" in d.kernel_rs
    assert ".store(t, [row, 0i32]);" in d.kernel_rs and ".store(t + t, [row, 1i32]);" in d.kernel_rs
    # the same block tile stored on every loop trip: no per-block partition expresses that
    assert "output `dup` keeps dynamic tile dims" in d.kernel_rs and "several times per block at the same" in d.kernel_rs
    assert "dup: &mut Tensor<E, { [-1, -1] }>" in d.kernel_rs
    [entry] = d.spec.entries
    assert {tuple(v.generics[1:]) for v in entry.variants} == {("2", "128", "256")}  # two tiles: stores at 0 and 1


LONG_NAMES_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def fused_residual_scale_and_shift_with_a_long_descriptive_name_kernel(
            x, y, TILE_SIZE_FOR_THE_LEADING_AXIS: ct.Constant[int], SCALE_FACTOR_OF_THE_RESIDUAL_BRANCH_X: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b,), shape=(TILE_SIZE_FOR_THE_LEADING_AXIS,))
        ct.store(y, index=(b,), tile=t * SCALE_FACTOR_OF_THE_RESIDUAL_BRANCH_X)

    def run(x, y):
        import torch
        k = fused_residual_scale_and_shift_with_a_long_descriptive_name_kernel
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), k, (x, y, 128, 10001))
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), k, (x, y, 128, 10002))
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), k, (x, y, 128, 10002))
    ''')


def test_long_names_are_hashed_within_limits_and_coinciding_launches_merge(tmp_path):
    # the two specialisations differ only past the 64th character of their names (a truncation made them one
    # "duplicate job" before); the third launch repeats the second and is the same job
    op = tmp_path / "long_names.py"
    op.write_text(LONG_NAMES_OP, encoding="utf-8")
    d = draft_port(analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "a", run_tileiras=False, warm=True))
    names = [v.name for e in d.spec.entries for v in e.variants]
    assert len(names) == len(set(names)) == 4  # 2 specialisations x 2 dtypes
    assert all(len(n) <= 64 for n in names) and all(len(e.name) <= 64 for e in d.spec.entries)
    again = draft_port(analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "b", run_tileiras=False, warm=True))
    assert [v.name for e in again.spec.entries for v in e.variants] == names  # deterministic


HELPER_OP = textwrap.dedent('''
    import math
    import cuda.tile as ct
    from cuda.tile import float32 as F32

    HALF = 0.5
    INV_SQRT2 = 1.0 / math.sqrt(2.0)

    @ct.function
    def _scaled(x, k):
        y = x * k
        return y + HALF

    def _twice(x):
        return _scaled(x, 2.0) + _scaled(x, INV_SQRT2)

    @ct.kernel
    def helper_kernel(x, out, TILE: ct.Constant[int]):
        b = ct.bid(0)
        y = ct.load(x, index=(b,), shape=(TILE,), latency=3).astype(F32)
        ct.store(out, index=(b,), tile=_twice(y).astype(out.dtype), allow_tma=True)

    def run(x, out):
        import torch
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), helper_kernel, (x, out, 128))
    ''')


def test_helpers_are_inlined_with_their_module_constants_and_hints_kept(tmp_path):
    op = tmp_path / "helper_op.py"
    op.write_text(HELPER_OP, encoding="utf-8")
    d = draft_port(analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "a", run_tileiras=False, warm=True))
    assert d.holes == [], [str(h) for h in d.holes]
    rs = d.kernel_rs
    assert ".load_pipelined::<3>(" in rs  # latency=3
    assert "0.7071067811865475f32" in rs  # 1 / math.sqrt(2) folded by stage A's evaluator
    assert rs.count("scaled_y") >= 2  # the helper's local, once per inlined call, never shadowing the caller's
    assert "// approximation: ct.load(..., latency=N)" in rs and "// approximation: ct.store(..., allow_tma=True)" in rs


ALIASES_OP = textwrap.dedent('''
    import cuda.tile as cuda_tile
    from cuda.tile import load, PaddingMode as PM

    exp2 = cuda_tile.exp2
    F32 = cuda_tile.float32

    @cuda_tile.kernel
    def alias_kernel(x, y, TILE: cuda_tile.Constant[int]):
        b = cuda_tile.bid(0)
        t = load(x, index=(b,), shape=(TILE,), padding_mode=PM.ZERO).astype(F32)
        cuda_tile.store(y, index=(b,), tile=exp2(t).astype(y.dtype))

    def run(x, y):
        import torch
        cuda_tile.launch(torch.cuda.current_stream(), (8, 1, 1), alias_kernel, (x, y, 128))
    ''')


def test_every_spelling_of_cuda_tile_names_translates(tmp_path):
    op = tmp_path / "aliases.py"
    op.write_text(ALIASES_OP, encoding="utf-8")
    d = draft_port(analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "a", run_tileiras=False, warm=True))
    assert d.holes == [], [str(h) for h in d.holes]
    assert "exp2(t, ftz::Disabled)" in d.kernel_rs and "x.partition(shape![TILE])" in d.kernel_rs


def _torch_python() -> str | None:
    import os
    import subprocess
    py = os.environ.get("TILEPORT_TORCH_PYTHON") or str(Path.home() / ".cache/tileport/torch-venv/bin/python")
    try:
        ok = subprocess.run([py, "-c", "import torch, cuda.tile"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return py if ok else None


@pytest.mark.heavy  # launch capture runs the op under torch (about a minute on 2 cores)
def test_a_factory_kernel_is_drafted_with_its_closure_values_folded(tmp_path):
    py = _torch_python()
    if py is None:
        pytest.skip("no interpreter with torch + cuda-tile (scripts/setup-torch-venv.sh)")
    a = analyze_op(REPO / "tests" / "data" / "heldout_ops" / "factory_scale.py", targets=["sm_90"], out_dir=tmp_path / "f",
                   run_tileiras=False, python=py)
    d = draft_port(a)
    assert d.holes == [], [str(h) for h in d.holes]
    assert "folded where relu = false" in d.kernel_rs and "maxf(" not in d.kernel_rs  # the relu branch folded away


RANK4_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def scale4_kernel(x, out, TILE_S: ct.Constant[int], D: ct.Constant[int]):
        b = ct.bid(0)
        h = ct.bid(1)
        s = ct.bid(2)
        t = ct.load(x, index=(b, h, s, 0), shape=(1, 1, TILE_S, D))
        ct.store(out, index=(b, h, s, 0), tile=t + t)

    def scale4(x, out):
        import torch
        ct.launch(torch.cuda.current_stream(), (2, 4, 4), scale4_kernel, (x, out, 32, 64))
    ''')


def test_a_rank4_output_is_a_shared_tensor_written_through_an_unsafe_partition(analyses, tmp_path):
    # cutile-rs 0.5 refuses `&mut Tensor` above rank 3 (cutile-compiler kernel_entry_generator.rs): the draft is
    # complete anyway, the output a `&Tensor` stored through make_partition_view_mut, and the contract says so
    op = tmp_path / "scale4.py"
    op.write_text(RANK4_OP, encoding="utf-8")
    d = draft_port(analyses("scale4", op))
    assert d.holes == []
    assert "out: &Tensor<E, { [-1, -1, -1, -1] }>," in d.kernel_rs
    assert ("unsafe { make_partition_view_mut(out, shape![1, 1, TILE_S, D], padding::None, out.token()) }"
            in d.kernel_rs)
    out = next(p for p in d.host_contract.entries[0].params if p.name == "out")
    assert out.output and out.shared_output and out.partition is None


RANK4_FIRST_USE_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def bump4_kernel(out, TILE_S: ct.Constant[int], D: ct.Constant[int]):
        b = ct.bid(0)
        n = ct.num_tiles(out, axis=2, shape=(1, 1, TILE_S, D))
        for s in range(n):
            t = ct.load(out, index=(b, 0, s, 0), shape=(1, 1, TILE_S, D))
            ct.store(out, index=(b, 0, s, 0), tile=t + t)

    def bump4(out):
        import torch
        ct.launch(torch.cuda.current_stream(), (2, 1, 1), bump4_kernel, (out, 32, 64))
    ''')


def test_a_rank4_output_counted_and_loaded_before_its_store_has_only_the_unsafe_partition(analyses, tmp_path):
    # the first use of the output is a num_tiles, then a load: every view of it is the unsafe PartitionMut of the
    # `&Tensor` (a safe `partition_mut` of a `&Tensor` does not borrow-check)
    op = tmp_path / "bump4.py"
    op.write_text(RANK4_FIRST_USE_OP, encoding="utf-8")
    d = draft_port(analyses("bump4", op))
    assert d.holes == []
    assert "out: &Tensor<E, { [-1, -1, -1, -1] }>," in d.kernel_rs and ".partition_mut(" not in d.kernel_rs
    assert d.kernel_rs.count("make_partition_view_mut(out, shape![1, 1, TILE_S, D]") == 1
    assert "num_tiles(&out_tiles, 2i32)" in d.kernel_rs and "load_view_tko_mut(&out_tiles" in d.kernel_rs
    out = next(p for p in d.host_contract.entries[0].params if p.name == "out")
    assert out.output and out.shared_output


NONE_INIT_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def chunks_kernel(x, out, CHUNKS: ct.Constant[int], TILE: ct.Constant[int]):
        row = ct.bid(0)
        acc = None
        for c in ct.static_iter(range(CHUNKS)):
            t = ct.load(x, index=(row, c), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
            acc = t if acc is None else acc * t
        ct.store(out, index=(row, 0), tile=acc)

    @ct.kernel
    def pick_kernel(x, out, mode: int, TILE: ct.Constant[int]):
        i = ct.bid(0)
        t = ct.load(x, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        y = None
        if mode == 0:
            y = t + t
        elif mode == 1:
            y = t * t
        else:
            y = t
        ct.store(out, index=(i,), tile=y)

    def run(x, out, v):
        import torch
        ct.launch(torch.cuda.current_stream(), (4, 1, 1), chunks_kernel, (x, out, 3, 64))
        ct.launch(torch.cuda.current_stream(), (4, 1, 1), pick_kernel, (v, v, 1, 64))
    ''')


def test_a_value_none_before_a_static_iter_loop_is_the_first_items_tile_then_the_loop_op_per_item(analyses, tmp_path):
    # cuTile unrolls ct.static_iter and `acc is None` is static per item: item 0 binds the tile itself, items 1 and 2
    # multiply (no identity element is invented: a product starting from 1 or a sum from 0 would add an operation)
    op = tmp_path / "none_init.py"
    op.write_text(NONE_INIT_OP, encoding="utf-8")
    d = draft_port(analyses("none_init", op), kernel="chunks_kernel")
    assert d.holes == [], [str(h) for h in d.holes]
    assert "fn chunks_chunks_3<" in d.kernel_rs  # CHUNKS folded: the unrolled count is static per variant
    loads = re.findall(r"let (\w+): Tile<E, \{ \[1, TILE\] \}> = x_tiles\.load\(\[row, (\d)i32\]\);", d.kernel_rs)
    assert [i for _, i in loads] == ["0", "1", "2"]
    assert "let acc: Tile<E, { [1, TILE] }> = t;" in d.kernel_rs
    assert d.kernel_rs.count("let acc: Tile<E, { [1, TILE] }> = acc * t;") == 2
    assert "for " not in d.kernel_rs and "constant(" not in d.kernel_rs


def test_a_value_none_before_a_runtime_if_and_set_on_every_path_is_declared_with_a_zero_no_path_reads(analyses,
                                                                                                     tmp_path):
    op = tmp_path / "none_init.py"
    op.write_text(NONE_INIT_OP, encoding="utf-8")
    d = draft_port(analyses("none_init", op), kernel="pick_kernel")
    assert d.holes == [], [str(h) for h in d.holes]
    body = d.kernel_rs[d.kernel_rs.index("fn pick_f32"):]
    decl = "let mut y_2: Tile<f32, { [TILE] }> = constant(0.0f32, shape![TILE]);"
    assert body.index(decl) < body.index("if mode == 0i32 {")
    assert "y_2 = t + t;" in body and "y_2 = t * t;" in body and "y_2 = t;" in body \
        and ".store(y_2, [i]);" in body


SHAPE_SLICE_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def rows_kernel(x, out, TILE: ct.Constant[int]):
        b = ct.bid(0)
        m, n = x.shape[-2:]
        t = ct.load(x, index=(b, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
        ct.store(out, index=(b, 0), tile=t + t)

    def rows(x, out):
        import torch
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), rows_kernel, (x, out, 64))
    ''')


def test_a_slice_of_an_array_shape_unpacks_into_its_extents(analyses, tmp_path):
    op = tmp_path / "rows.py"
    op.write_text(SHAPE_SLICE_OP, encoding="utf-8")
    d = draft_port(analyses("rows", op))
    assert d.holes == []
    assert "let m: i32 = x.shape()[0];" in d.kernel_rs and "let n: i32 = x.shape()[1];" in d.kernel_rs


IFEXP_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def pick_kernel(x, out, n: int, TILE: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        u = t * 3.0 if n > 4 else t + t
        ct.store(out, index=(b, 0), tile=u.astype(out.dtype))

    def pick(x, out, n):
        import torch
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), pick_kernel, (x, out, n, 64))
    ''')


def test_a_conditional_expression_on_a_run_time_scalar_is_a_rust_if_expression(analyses, tmp_path):
    op = tmp_path / "pick.py"
    op.write_text(IFEXP_OP, encoding="utf-8")
    d = draft_port(analyses("pick", op))
    assert d.holes == []
    m = re.search(r"let (u\w*): Tile<f32, \{ \[1, TILE\] \}> = if n > 4i32 \{\n(.*\n)*? *\} else \{\n *t \+ t\n *\};",
                  d.kernel_rs)
    assert m, d.kernel_rs


PERSISTENT_OP = textwrap.dedent('''
    import cuda.tile as ct

    TILEPORT = {"dtypes": ["float16"],
                "constants": {"persistent_copy_kernel.M": [256], "persistent_copy_kernel.N": [192]}}

    @ct.kernel
    def persistent_copy_kernel(x, y, M: ct.Constant[int], N: ct.Constant[int], TM: ct.Constant[int],
                               TN: ct.Constant[int]):
        tiles_n = ct.cdiv(N, TN)
        total = ct.cdiv(M, TM) * tiles_n
        for tile_id in range(ct.bid(0), total, ct.num_blocks(0)):
            bm = tile_id // tiles_n
            bn = tile_id % tiles_n
            keep = ct.full((TM, TN), False, dtype=ct.bool_)
            t = ct.load(x, index=(bm, bn), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)
            ct.store(y, index=(bm, bn), tile=ct.where(keep, t * 0, t))

    def persistent_copy(x):
        import torch
        y = torch.empty_like(x)
        m, n = x.shape
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), persistent_copy_kernel, (x, y, m, n, 64, 64))
        return y
    ''')


def test_a_false_tile_is_never_the_constant_op_cutile_compiles_to_true(analyses, tmp_path):
    # cutile-compiler 0.5.0 encodes `constant(false, ..)` as true (compile_expression.rs encode_literal_bytes:
    # an i1 is 0xFF unless its literal text is "0", and a bool literal's text is "false"): a floor modulo's sign
    # fix-up by a constant divisor was always taken, so a persistent GEMM stored only its first tile column
    op = tmp_path / "persistent_copy.py"
    op.write_text(PERSISTENT_OP, encoding="utf-8")
    d = draft_port(analyses("persistent_copy", op))
    assert d.holes == [], [str(h) for h in d.holes]
    rs = d.kernel_rs
    assert "constant(false" not in rs
    # `tile_id % tiles_n`: the divisor's sign is known (not negative): a false spelled so that it compiles false
    assert re.search(r"let tmp_\d+: Tile<bool, \{ \[\] \}> = scalar_to_tile\(false\);", rs), rs
    # ct.full(..., False, dtype=bool): the same false, broadcast to the tile's shape
    assert re.search(r"let tmp_\d+: Tile<bool, \{ \[TM, 64\] \}> = scalar_to_tile\(false\)"
                     r"\.reshape\(shape!\[1, 1\]\)\.broadcast\(shape!\[TM, 64\]\);", rs), rs


@pytest.mark.parametrize("op", ["vector_add", "rms_norm", "softmax", "silu_and_mul", "matmul"])
def test_an_entry_storing_through_a_whole_output_view_is_unchecked_as_the_reference(analyses, op):
    # a checked store through partition_full_mut makes cutile 0.5 add a host launch check against the extent of the
    # per-block partition, and the port refuses to launch on any grid larger than one block (H100, 2026-12-06)
    d = draft_port(analyses(op))
    entries = d.kernel_rs.split("#[cutile::entry(")[1:]
    full = [e for e in entries if "partition_full_mut(" in e]
    assert full, f"{op}: no output stored through a whole-output view"
    for e in full:
        head = e.split("\n", 2)
        assert "unchecked_accesses = true" in head[0] and head[1].lstrip().startswith("unsafe fn "), head[:2]
