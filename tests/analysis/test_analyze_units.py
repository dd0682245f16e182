"""The parts of `tileport analyze` that decide what gets compiled: fast, no tileiras.

Static launch resolution (wrapper dispatch, constants through local names), the variant rules,
the TILEPORT declaration's errors, and the JIT-equivalent array constraints.
"""

from __future__ import annotations

import ast
import textwrap

import cuda.tile as ct
import pytest
from cuda.tile.compilation import demangle_kernel_name

from tileport.analysis.declaration import read_declaration
from tileport.analysis.plan import KernelMeta, ParamMeta, build_plan
from tileport.analysis.signature import build_signature, jit_array_constraint, ordinary_array_constraint
from tileport.analysis.static import inspect_source
from tileport.errors import UserError


def static(src: str):
    return inspect_source(ast.parse(textwrap.dedent(src)))


def decl(src: str):
    return read_declaration(ast.parse(textwrap.dedent(src)), "op.py")


KERNEL = """
import cuda.tile as ct

@ct.kernel
def k(x, out, n, BLOCK: ct.Constant[int], FAST: ct.Constant[bool]):
    t = ct.load(x, index=(ct.bid(0), 0), shape=(1, BLOCK))
    if FAST:
        t = t * 2
    ct.store(out, index=(ct.bid(0), 0), tile=t)
"""


def meta(**types) -> list[KernelMeta]:
    params = [ParamMeta(name="x"), ParamMeta(name="out"), ParamMeta(name="n"),
              ParamMeta(name="BLOCK", constant=True, constant_type="int"),
              ParamMeta(name="FAST", constant=True, constant_type="bool")]
    return [KernelMeta(name="k", function="k", line=4, params=params)]


def plan_for(host: str, declaration: str = ""):
    src = declaration + KERNEL + textwrap.dedent(host)
    return build_plan(meta(), static(src), decl(src), filename="op.py")


# ---------------------------------------------------------------------------------------------
# Launches and variants


def test_dispatch_through_local_names_gives_one_variant_per_branch():
    p = plan_for("""
    SMALL = 512
    def run(x, out):
        n = x.shape[1]
        if n <= SMALL:
            block, fast = SMALL, True
        elif n <= 4 * SMALL:
            block, fast = 4 * SMALL, False
        else:
            raise ValueError("too wide")
        ct.launch(None, (x.shape[0],), k, (x, out, n, block, fast))
    """)
    assert [(v.constants, v.sources) for v in p.variants] == [
        ({"BLOCK": 512, "FAST": True}, ["launch run:20 when n <= SMALL"]),
        ({"BLOCK": 2048, "FAST": False}, ["launch run:20 when not (n <= SMALL) and n <= 4 * SMALL"]),
    ]
    assert [ln.guards for ln in p.launches] == [["n <= SMALL"], ["not (n <= SMALL)", "n <= 4 * SMALL"]]
    params = {q.name: (q.kind, q.ndim, q.dtype) for q in p.kernels[0].params}
    assert params["x"] == ("array", 2, None) and params["n"] == ("scalar", None, "int32")


def test_an_unrelated_branch_does_not_split_or_guard_a_launch():
    p = plan_for("""
    def run(x, out=None):
        if out is None:
            out = x.new_empty(x.shape)
        ct.launch(None, (1,), k, (x, out, 3, 128, False))
    """)
    assert len(p.variants) == 1 and p.launches[0].guards == []


def test_runtime_bool_is_enumerated_and_runtime_int_needs_a_declaration():
    p = plan_for("""
    def run(x, out, scale=None):
        ct.launch(None, (1,), k, (x, out, 3, 64, scale is not None))
    """)
    assert [v.name for v in p.variants] == ["BLOCK=64,FAST=false", "BLOCK=64,FAST=true"]
    with pytest.raises(UserError, match=r"value of ct.Constant 'BLOCK' is not visible statically "
                                         r"\(`block = 1 << n`\)"):
        plan_for("""
        def run(x, out, n):
            block = 1 << n
            ct.launch(None, (1,), k, (x, out, n, block, True))
        """)


def test_declared_values_fill_runtime_constants():
    p = plan_for("""
    def run(x, out, block=256):
        ct.launch(None, (1,), k, (x, out, 3, next_pow2(x.shape[1]), True))
        ct.launch(None, (1,), k, (x, out, 3, 128, True))
    """, declaration='TILEPORT = {"constants": {"k.BLOCK": [1024, 4096]}}\n')
    assert [v.constants["BLOCK"] for v in p.variants] == [1024, 4096, 128]  # a visible value wins
    assert any("(`next_pow2(x.shape[1])`); analysed the declared 1024, 4096" in n for n in p.notes)


def test_a_wrapper_argument_passed_through_is_analysed_at_its_default():
    p = plan_for("""
    def run(x, out, block=256):
        ct.launch(None, (1,), k, (x, out, 3, block, True))
    """)
    assert [v.constants["BLOCK"] for v in p.variants] == [256]
    assert any("comes from wrapper argument `block`; analysed its default 256" in n for n in p.notes)


def test_explicit_variants_replace_launches_and_dtypes_make_instances():
    p = plan_for("""
    def run(x, out):
        ct.launch(None, (1,), k, (x, out, 3, 64, False))
    """, declaration='TILEPORT = {"variants": [{"kernel": "k", "constants": {"BLOCK": 32}}],'
                     ' "dtypes": ["bfloat16"], "params": {"out": "float32"}}\n')
    assert [v.name for v in p.variants] == ["BLOCK=32,FAST=false", "BLOCK=32,FAST=true"]
    inst = p.variants[0].instances
    assert [(i.dtype, i.param_dtypes) for i in inst] == [("bfloat16", {"x": "bfloat16", "out": "float32", "n": "int32"})]
    assert inst[0].stem == "k__BLOCK-32__FAST-false__bfloat16"


@pytest.mark.parametrize("declaration,message", [
    ('TILEPORT = {"constants": {"k.BLOK": [1]}}\n', "key 'k.BLOK' names no ct.Constant parameter"),
    ('TILEPORT = {"params": {"y": "int32"}}\n', "key 'y' names no kernel parameter"),
    ('TILEPORT = {"variants": [{"kernel": "q"}]}\n', "names kernel 'q', which the module does not define"),
    ('TILEPORT = {"constants": {"FAST": [1]}}\n', "FAST is a ct.Constant[bool] but gets 1"),
])
def test_declaration_mistakes_name_the_key(declaration, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        plan_for("def run(x, out, fast):\n    ct.launch(None, (1,), k, (x, out, 3, 64, fast))\n", declaration)


@pytest.mark.parametrize("value,message", [
    ("{'dtypes': ['float17']}", "TILEPORT['dtypes']: unknown dtype 'float17'"),
    ("{'shapes': [{'m': 'big'}]}", "TILEPORT['shapes.0.m']"),
    ("dict(dtypes=['float16'])", "must be a literal dict"),
    ("[1, 2]", "must be a dict, got list"),
])
def test_declaration_must_be_a_valid_literal(value, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        decl(f"TILEPORT = {value}\n")


def test_declaration_accepts_arithmetic_and_defaults_without_one():
    d = decl("TILEPORT = {'shapes': [{'n': 1 << 20, 'm': 4 * 1024}], 'dtypes': ['f16', 'bf16']}\n")
    assert d.shapes == [{"n": 1048576, "m": 4096}] and d.dtypes == ["float16", "bfloat16"] and d.present
    assert decl("X = 1\n").dtypes == ["float16", "float32"] and not decl("X = 1\n").present


# ---------------------------------------------------------------------------------------------
# Kernel bodies


def test_array_ranks_come_from_views_slices_gathers_and_num_tiles():
    s = static("""
    import cuda.tile as ct
    from cuda.tile import gather

    @ct.kernel(occupancy=2)
    def k(a, b, c, d, e, TILE: ct.Constant[int]):
        v = a.tiled_view((1, 1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
        half = b.slice(axis=1, start=0, stop=4)
        t = v.load((0, 0, 0))
        u = ct.load(half, (0, 0), shape=(1, TILE))
        g = gather(c, ct.arange(TILE, dtype=ct.int32), mask=None)
        n = ct.num_tiles(d, axis=0, shape=(TILE, TILE))
        m = e.shape[2]
    """).kernels[0]
    assert s.array_ndim == {"a": 3, "b": 2, "c": 1, "d": 2, "e": 3}
    assert s.options == {"occupancy": 2}
    ops = [(m.op, m.array, m.access, m.padding) for m in s.memory]
    assert ops == [("view.load", "a", "view", "ct.PaddingMode.NEG_INF"), ("ct.load", "b", "view", None),
                   ("ct.gather", "c", "pointer", None)]


def test_kernels_bound_by_assignment_and_plain_imports_are_found():
    s = static("""
    import cuda.tile

    def body(x, B: cuda.tile.Constant[int]):
        cuda.tile.store(x, (0,), cuda.tile.load(x, (0,), shape=(B,)))

    my_kernel = cuda.tile.kernel(occupancy=1)(body)
    """)
    assert [(k.name, k.function, k.options, k.array_ndim) for k in s.kernels] == [
        ("my_kernel", "body", {"occupancy": 1}, {"x": 1})]


# ---------------------------------------------------------------------------------------------
# Signatures: what the JIT builds


def test_jit_constraint_rules_for_concrete_arrays():
    f16 = ct.float16
    aligned = jit_array_constraint(f16, (4096, 4096))
    assert (aligned.stride_constant, aligned.stride_divisible_by, aligned.shape_divisible_by,
            aligned.base_addr_divisible_by, aligned.may_alias_internally) == ((None, 1), (8, 1), (16, 16), 16, False)
    odd = jit_array_constraint(f16, (1000, 1001), base_addr=0x1002)
    # 1001 * 2 bytes is not a multiple of 16, 1000 and 1001 are not multiples of 16, base is 2-aligned
    assert (odd.stride_divisible_by, odd.shape_divisible_by, odd.base_addr_divisible_by) == ((1, 1), (1, 1), 1)
    transposed = jit_array_constraint(ct.float32, (64, 32), strides=(1, 64))
    assert transposed.stride_constant == (1, None) and transposed.stride_divisible_by == (1, 4)
    broadcast = jit_array_constraint(ct.float32, (8, 32), strides=(0, 1))
    assert broadcast.may_alias_internally is True
    six_d = jit_array_constraint(f16, (16,) * 6)
    assert six_d.stride_constant == (None,) * 6 and six_d.shape_divisible_by == (1,) * 6


def test_ordinary_constraint_is_what_the_jit_builds_for_a_typical_tensor():
    for dt, shape in ((ct.float16, (4096, 4096)), (ct.bfloat16, (32, 1024, 64)), (ct.float32, (1 << 20,)),
                      (ct.int32, (512,))):
        assert ordinary_array_constraint(dt, len(shape)) == jit_array_constraint(dt, shape, base_addr=0x7F0000000000)


def test_signature_symbol_demangles_to_the_same_constraints():
    params = [{"name": "x", "kind": "array", "ndim": 2, "index_dtype": "int32"},
              {"name": "idx", "kind": "array", "ndim": 1, "index_dtype": "int64"},
              {"name": "n", "kind": "scalar"}, {"name": "B", "kind": "constant"}]
    sig = build_signature(params, {"x": "bfloat16", "idx": "int32", "n": "float32"}, {"B": 128}, "my_kernel")
    name, back = demangle_kernel_name(sig.symbol)
    assert name == "my_kernel" and back.parameters == sig.parameters
    assert sig.parameters[1].index_dtype == ct.int64


# ---------------------------------------------------------------------------------------------
# Real-world shapes: IR summary of pointer tiles, grid expressions, factory kernels, packages, specs


def test_ir_summary_reads_the_data_tile_of_pointer_loads_and_stores_not_the_mask():
    from tileport.analysis.backend import summarize_ir

    text = ("  %r, %t = load_ptr_tko weak %1, %2, %3 token=%0 : tile<256xptr<f16>>, tile<256xi1>, tile<256xf16> "
            "-> tile<256xf16>, token\n"
            "  %s = store_ptr_tko weak %4, %5, %6 token=%0 : tile<256xptr<bf16>>, tile<256xbf16>, tile<256xi1> -> token\n"
            "  %u, %v = load_ptr_tko weak %7 token=%0 : tile<ptr<i32>> -> tile<i32>, token\n")
    assert summarize_ir(text).memory == ["load_ptr_tko tile<256xf16>", "store_ptr_tko tile<256xbf16>",
                                         "load_ptr_tko tile<i32>"]


def test_grid_variable_is_recorded_as_the_expression_it_holds():
    s = static("""
        import cuda.tile as ct
        @ct.kernel
        def k(x, T: ct.Constant[int]):
            ct.store(x, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))
        def w(x):
            m = x.shape[0]
            grid = (ct.cdiv(m, 128), 1, 1)
            ct.launch(None, grid, k, (x, 128))
    """)
    assert [ln.grid for ln in s.launches] == ["(ct.cdiv(m, 128), 1, 1)"]


def test_kernel_defined_in_a_factory_is_seen_statically():
    s = static("""
        import functools
        import cuda.tile as ct
        @functools.lru_cache
        def make(occ):
            @ct.kernel(occupancy=occ)
            def inner(x, T: ct.Constant[int]):
                ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(T,)))
            return inner
    """)
    assert s.factory_kernels == ["inner"] and s.kernels[0].array_ndim == {"x": 1}


def test_unread_constant_needs_no_value_but_a_read_one_still_does():
    src = """
        import cuda.tile as ct
        @ct.kernel
        def k(x, T: ct.Constant[int], N: ct.Constant[int]):
            ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(T,)))
        def w(x):
            ct.launch(None, (1,), k, (x, 64, x.numel()))
        def v(x):
            ct.launch(None, (1,), k, (x, x.shape[0], 1))
    """
    meta = KernelMeta(name="k", function="k", line=3, params=[
        ParamMeta(name="x"), ParamMeta(name="T", constant=True, constant_type="int"),
        ParamMeta(name="N", constant=True, constant_type="int")])
    plan = build_plan([meta], static(src), decl(""), filename="op.py", collect_failures=True)
    assert "k" in plan.failed and "'T' is not visible statically" in plan.failed["k"]
    ok = build_plan([meta], static(src.replace("def v(x):\n            ct.launch(None, (1,), k, (x, x.shape[0], 1))", "")),
                    decl(""), filename="op.py")
    assert [v.constants for v in ok.variants] == [{"T": 64, "N": 0}]


def test_op_in_a_package_is_imported_by_its_dotted_name(tmp_path):
    from tileport.analysis.child import package_root

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "__init__.py").write_text("")
    (tmp_path / "a" / "b" / "__init__.py").write_text("")
    (tmp_path / "a" / "b" / "op.py").write_text("")
    (tmp_path / "solo.py").write_text("")
    assert package_root(tmp_path / "a" / "b" / "op.py") == (tmp_path, "a.b.op")
    assert package_root(tmp_path / "solo.py") is None


def test_spec_variant_names_stay_within_the_limit_and_unique():
    from tileport.validators.rust.reference import VARIANT_NAME_MAX, _variant_name

    a = _variant_name("float16", {f"A_VERY_LONG_CONSTANT_NAME_{i}": 1024 for i in range(4)})
    b = _variant_name("float16", {f"A_VERY_LONG_CONSTANT_NAME_{i}": 2048 for i in range(4)})
    assert len(a) <= VARIANT_NAME_MAX and len(b) <= VARIANT_NAME_MAX and a != b
    assert _variant_name("float16", {"TILE": 64}) == "f16__TILE-64"


def test_port_parameters_declared_as_raw_pointers_are_told_apart_from_tensors():
    from tileport.validators.rust.reference import port_tensor_params

    rs = """
    #[cutile::entry()]
    pub fn gather<E: ElementType, const T: i32>(src: *mut E, idx: &Tensor<i32, { [-1] }>,
                                              out: &mut Tensor<E, { [T] }>, n: i32) {}
    """
    assert port_tensor_params(rs) == {"gather": {"src": False, "idx": True, "out": True, "n": False}}


def test_init_spec_covers_every_target_and_keeps_tensor_facts_off_raw_pointer_params(tmp_path):
    from pathlib import Path

    from tileport.analysis import analyze_op
    from tileport.validators.rust.reference import derive_spec, sync_spec

    op = Path(__file__).resolve().parents[2] / "examples" / "vector_add.py"
    a = analyze_op(op, targets=["sm_90", "sm_100"], out_dir=tmp_path / "va", run_tileiras=False)
    spec = derive_spec(a)
    assert spec.targets == ["sm_90", "sm_100"]
    entry = spec.entries[0]
    assert "x" in entry.variants[0].tensors
    raw_x = {entry.name: {"x": False, "y": True, "z": True}}
    assert "x" not in derive_spec(a, port_params=raw_x).entries[0].variants[0].tensors
    synced, changes = sync_spec(spec, a, raw_x)
    assert all("x" not in v.tensors and "x" not in v.strides for v in synced.entries[0].variants)
    assert any("x is not a Tensor in the port" in c for c in changes)


def test_an_op_file_named_as_real_projects_name_them_gets_a_rust_module_both_ways(tmp_path):
    """`01-vector-add.py` (cutile-puzzles names its files so): stage B's spec and the draft's both name the Rust
    module `k_01_vector_add`, and the spec validates (it used to end B with a pydantic ValidationError)."""
    import shutil
    from pathlib import Path

    from tileport.draft import draft_port
    from tileport.analysis import analyze_op
    from tileport.validators.rust.reference import derive_spec

    op = tmp_path / "01-vector-add.py"
    shutil.copy(Path(__file__).resolve().parents[2] / "examples" / "vector_add.py", op)
    a = analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "va", run_tileiras=False)
    assert derive_spec(a).module == "k_01_vector_add"
    d = draft_port(a)
    assert d.spec.module == "k_01_vector_add" and "pub mod k_01_vector_add {" in d.kernel_rs


def test_module_constants_bound_by_unpacking_are_known_item_by_item(tmp_path):
    from tileport.analysis.static import Unknown, module_values
    op = tmp_path / "sizes.py"
    op.write_text("TM, TN, TK = 64, 64, 32\n(WH, WW) = (4, 2 * 2)\n[OH, OW] = [8, 16]\nSIZES = (1, 2)\n"
                  "A, B = SIZES\nP, *Q = 1, 2, 3\nX, Y = unknown_call()\n", encoding="utf-8")
    env = module_values(op)
    assert [env[k] for k in ("TM", "TN", "TK", "WH", "WW", "OH", "OW", "A", "B")] == [64, 64, 32, 4, 4, 8, 16, 1, 2]
    # what cannot be told item by item stays Unknown, never a wrong value
    assert all(isinstance(env[k], Unknown) for k in ("P", "Q", "X", "Y"))
