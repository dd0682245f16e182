"""Stage E's configurations from stage A's captured launches: identical ones merged, guessed inputs only when the
op's own code launched nothing, at most 32 covering every kernel x dtype x size class, the rest left out with why."""

from __future__ import annotations

import cuda.tile as ct

from tileport.validators.gpu.perfconfigs import parse_arg, select, size_class


def cfg(kernel="k", rows=128, cols=1024, dtype="float16", origin="t::a", source="test"):
    return {"kernel": kernel, "source": source, "origin": origin, "dtype": dtype, "grid": f"({rows}, 1, 1)",
            "args": [f"{dtype}[{rows}x{cols}]", f"{dtype}[{rows}x{cols}]", "1e-06", str(cols)]}


def test_identical_launches_are_one_configuration_with_every_test_that_made_it():
    chosen, left = select([cfg(origin="t::a"), cfg(origin="t::b"), cfg(rows=256)])
    assert len(chosen) == 2 and left == []
    first = next(c for c in chosen if c["grid"] == "(128, 1, 1)")
    assert first["origins"] == ["t::a", "t::b"] and first["args"][0] == "float16[128x1024]"


def test_guessed_inputs_count_only_when_the_ops_own_code_launched_nothing():
    chosen, left = select([cfg(), cfg(rows=999, source="guess")])
    assert [c["grid"] for c in chosen] == ["(128, 1, 1)"]
    assert len(left) == 1 and "guessed inputs" in left[0]["why"]
    chosen, left = select([cfg(rows=999, source="guess")])
    assert [c["source"] for c in chosen] == ["guess"] and left == []


def test_at_most_32_covering_every_kernel_dtype_and_size_class_largest_first():
    many = [cfg(kernel=k, dtype=d, rows=r, cols=c) for k in ("k1", "k2") for d in ("float16", "float32")
            for r in (1, 8, 64, 512, 4096) for c in (64, 1000, 4096, 8192)]
    chosen, left = select(many)
    assert len(chosen) == 32 and len(left) == len(many) - 32
    groups = {(c["kernel"], c["dtype"], size_class(c["bytes"])) for c in many for c in [c | {"bytes": _bytes(c)}]}
    assert groups <= {(c["kernel"], c["dtype"], c["size_class"]) for c in chosen}
    assert all("over the bound of 32" in x["why"] for x in left)
    # within a group the largest goes first
    k1_small = [c for c in chosen if (c["kernel"], c["dtype"], c["size_class"]) == ("k1", "float16", "small")]
    assert k1_small[0]["bytes"] == max(_bytes(c) for c in many if c["kernel"] == "k1" and c["dtype"] == "float16"
                                       and size_class(_bytes(c)) == "small")


def test_kernels_no_port_entry_serves_are_left_out_by_name():
    chosen, left = select([cfg(kernel="a"), cfg(kernel="b")], kernels={"a"})
    assert [c["kernel"] for c in chosen] == ["a"]
    assert left == [{"config": left[0]["config"], "why": "kernel b is not under conversion (no port entry serves it)"}]


def test_arguments_read_back_as_capture_wrote_them():
    assert parse_arg("bfloat16[2x3x4]") == {"kind": "tensor", "dtype": "bfloat16", "shape": [2, 3, 4]}
    assert parse_arg("float32[]") == {"kind": "tensor", "dtype": "float32", "shape": []}
    assert parse_arg("True") == {"kind": "bool", "value": True}
    assert parse_arg("4096") == {"kind": "int", "value": 4096} and parse_arg("1e-06")["value"] == 1e-06


def _bytes(c):
    from tileport.validators.gpu.perfconfigs import nbytes
    return nbytes(c["args"])


def test_one_launch_made_with_other_compiler_hints_is_its_own_configuration_and_says_which():
    """The cutile-rs paper's persistent GEMM launches `ct.kernel(gemm_persistent._pyfunc, num_ctas=N)`: E found
    the module-level kernel by name and timed it without N, so the reference it timed was not the one the op ran
    (docs/gpu-runs.md, eighth session). The hints travel with the configuration (tp_replay re-wraps the kernel)."""
    two = {**cfg(), "hints": {"num_ctas": 2, "occupancy": 1}}
    four = {**cfg(), "hints": {"num_ctas": 4, "occupancy": 1}}
    chosen, left = select([two, four, cfg()])
    assert left == [] and len(chosen) == 3
    by_hints = {tuple(sorted((c.get("hints") or {}).items())): c for c in chosen}
    assert by_hints[(("num_ctas", 2), ("occupancy", 1))]["config"].startswith("k [num_ctas=2, occupancy=1] float16 ")
    assert "hints" not in by_hints[()] and by_hints[()]["config"].startswith("k float16 ")


def test_stage_a_records_the_hints_of_the_kernel_object_an_op_launched():
    from types import SimpleNamespace

    from tileport.analysis.capture_plan import configurations

    def body(x, TILE: ct.Constant[int]):
        ct.store(x, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(TILE,)))

    base = ct.kernel(body)
    module = SimpleNamespace(body_kernel=base)
    launches = [SimpleNamespace(kernel=k, args=(64,), grid=(4, 1, 1), source="main", entry="op.py __main__")
                for k in (base, ct.kernel(body, num_ctas=2, occupancy=1), base.replace_hints(num_ctas=4))]
    got = configurations(module, launches, lambda a: {"kind": "int", "value": a})
    assert [c.get("hints") for c in got] == [None, {"num_ctas": 2, "occupancy": 1}, {"num_ctas": 4}]
