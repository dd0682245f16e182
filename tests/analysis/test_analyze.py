"""`tileport analyze` end to end: real cuda-tile exports, real tileirdisasm and tileiras, no fakes.

Every example is analysed once per session (sm_90 only, to keep tileiras time down); one test runs
both targets. What is checked is what a user or a later stage relies on: the files exist and match
their recorded hashes, the reference IR contains the operations the source asks for, structural
variants really compile to different IR, and bad input fails with one line and leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tileport.analysis import analyze_op, find_examples, load_analysis
from tileport.analysis.outdir import MARKER
from tileport.analysis.schema import Analysis
from tileport.records import sha256_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.stem for p in (REPO / "examples").glob("*.py"))


def tileport(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tileport", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.fixture(scope="session")
def analyses(tmp_path_factory) -> dict[str, Analysis]:
    root = tmp_path_factory.mktemp("analyses")
    return {stem: analyze_op(REPO / "examples" / f"{stem}.py", targets=["sm_90"], out_dir=root / stem, warm=True)
            for stem in EXAMPLES}


def texts(a: Analysis, kernel: str | None = None, dtype: str = "float16") -> dict[str, str]:
    """Variant name -> Tile IR text (sm_90, one dtype)."""
    out = {}
    for v, inst in a.instances(kernel):
        if inst.dtype == dtype:
            build = next(b for b in inst.builds if b.target == "sm_90")
            out[v.name] = (Path(a.out_dir) / build.text.path).read_text()
    return out


def without_symbol(text: str) -> str:
    return re.sub(r"entry @\w+", "entry @K", text)


# ---------------------------------------------------------------------------------------------
# The corpus


def test_corpus_has_the_ops_the_readme_promises():
    assert {"vector_add", "silu_and_mul", "softmax", "gather_softmax", "rms_norm", "matmul",
            "persistent_matmul", "attention"} <= set(EXAMPLES)
    assert [p.stem for p in find_examples()] == EXAMPLES


@pytest.mark.parametrize("stem", EXAMPLES)
def test_every_example_analyses_with_artifacts_matching_their_hashes(analyses, stem):
    a = analyses[stem]
    out = Path(a.out_dir)
    again = load_analysis(out)  # what a later stage reads back
    assert again.schema_version == 1 and again.op == stem
    assert again.source.sha256 == sha256_file(REPO / "examples" / f"{stem}.py")
    assert a.kernels and a.variants
    for v, inst in a.instances():
        assert [b.target for b in inst.builds] == ["sm_90"]
        for art in (b for build in inst.builds for b in (build.bytecode, build.text, build.cubin)):
            assert art is not None, f"{v.kernel} {v.name} {inst.dtype}: a missing artifact"
            path = out / art.path
            assert path.is_file() and path.stat().st_size == art.bytes
            assert sha256_file(path) == art.sha256
        assert (out / inst.builds[0].cubin.path).read_bytes()[:4] == b"\x7fELF"
        assert inst.symbol in (out / inst.builds[0].text.path).read_text()
    # nothing but what analysis.json lists (plus itself and the marker that says tileport made the directory)
    listed = {art.path for art in a.artifacts()} | {"analysis.json", MARKER}
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert on_disk == listed
    # every command that ran is recorded with its exit status
    tools = [Path(c.argv[0]).name for c in a.commands]
    assert tools.count("tileiras") == tools.count("tileirdisasm") == sum(1 for _ in a.instances())
    assert all(c.exit_code == 0 for c in a.commands)


def test_matmul_uses_mma_with_a_float32_accumulator_and_view_loads(analyses):
    for name, text in texts(analyses["matmul"]).items():
        tm, tn = re.search(r"TILE_M=(\d+),TILE_N=(\d+)", name).groups()
        assert re.search(rf"mmaf .* tile<{tm}x{tn}xf32>", text), name
        assert "load_view_tko" in text and "for %loopIdx" in text


def test_softmax_reduces_over_a_neg_inf_padded_view_load(analyses):
    a = analyses["softmax"]
    for kernel in ("softmax_row_kernel", "softmax_chunked_kernel"):
        for name, text in texts(a, kernel).items():
            assert "reduce" in text and "exp" in text, (kernel, name)
            assert re.search(r"load_view_tko .*padding_value = neg_inf", text), (kernel, name)
    build = next(inst for v, inst in a.instances("softmax_row_kernel")).builds[0]
    assert "padding=neg_inf" in build.ir.features and build.ir.ops.get("reduce") == 2


def test_gather_softmax_uses_masked_pointer_loads_and_stores(analyses):
    for text in texts(analyses["gather_softmax"]).values():
        assert "load_ptr_tko" in text and "store_ptr_tko" in text
        assert "load_view_tko" not in text
    ops = analyses["gather_softmax"].kernels[0].memory_ops
    assert [(m.op, m.array, m.access, m.masked) for m in ops] == [
        ("ct.gather", "row_ids", "pointer", False), ("ct.gather", "x", "pointer", True),
        ("ct.scatter", "out", "pointer", True)]


def test_attention_keeps_exp2_flush_to_zero_and_approx_divide(analyses):
    for text in texts(analyses["attention"]).values():
        assert re.search(r"exp2 .*flush_to_zero", text)
        assert "rounding<approx>" in text
        assert text.count("mmaf") == 2 and "dim_map=[0, 2, 1]" in text  # K loaded transposed


def test_persistent_matmul_strides_over_tiles_with_an_occupancy_hint(analyses):
    text = next(iter(texts(analyses["persistent_matmul"]).values()))
    assert "get_num_tile_blocks" in text
    assert re.search(r"for %loopIdx in \(%blockId_x to %\d+, step %gridSize_x\)", text)
    assert "occupancy = 1" in text
    assert analyses["persistent_matmul"].kernels[0].compiler_options.get("occupancy") == 1


def test_signatures_are_the_jit_signature_of_aligned_contiguous_tensors(analyses):
    a = analyses["matmul"]
    _, inst = next(a.instances())
    arrays = [c for c in inst.signature if c["kind"] == "array"]
    assert len(arrays) == 3
    for c in arrays:
        assert c["index_dtype"] == "int32" and c["base_addr_divisible_by"] == 16
        assert c["stride_constant"] == [None, 1]
        assert c["stride_divisible_by"][0] * 2 == 16  # float16: 8 elements = 16 bytes
        assert c["may_alias_internally"] is False
    text = texts(a)[next(iter(texts(a)))]
    assert re.search(r"assume div_by<16>, %arg0 : tile<ptr<f16>>", text)
    assert "strides=[?,1]" in text


# ---------------------------------------------------------------------------------------------
# Variants


@pytest.mark.parametrize("stem,kernel", [("softmax", "softmax_row_kernel"), ("softmax", "softmax_chunked_kernel"),
                                         ("matmul", "matmul_kernel"), ("rms_norm", "rms_norm_kernel"),
                                         ("attention", "attention_fwd_kernel"),
                                         ("gather_softmax", "gather_softmax_kernel")])
def test_structural_variants_compile_to_different_ir(analyses, stem, kernel):
    by_variant = texts(analyses[stem], kernel)
    assert len(by_variant) >= 2, by_variant.keys()
    bodies = {without_symbol(t) for t in by_variant.values()}
    assert len(bodies) == len(by_variant)


def test_fused_scale_adds_exactly_the_scaling_multiply(analyses):
    t = texts(analyses["softmax"], "softmax_row_kernel")
    off, on = t["TILE_N=1024,FUSE_SCALE=false"], t["TILE_N=1024,FUSE_SCALE=true"]
    assert on.count("mulf") == off.count("mulf") + 1


def test_rms_norm_chunked_variant_loops_and_single_tile_does_not(analyses):
    t = texts(analyses["rms_norm"])
    assert "for %loopIdx" not in t["TILE_N=4096,CHUNKS=1"]
    assert t["TILE_N=2048,CHUNKS=4"].count("for %loopIdx") == 2


def test_wrapper_dispatch_is_recorded_with_its_conditions(analyses):
    a = analyses["matmul"]
    launches = {tuple(ln.constants.values()): ln.guards for ln in a.launches}
    assert launches == {(128, 128, 64): ["m * n >= LARGE_PROBLEM"], (64, 64, 32): ["not (m * n >= LARGE_PROBLEM)"]}
    assert all(v.sources[0].startswith("launch matmul:") for v in a.variants)
    softmax = analyses["softmax"]
    assert {ln.kernel: ln.guards for ln in softmax.launches} == {
        "softmax_row_kernel": ["n <= ROW_LIMIT"], "softmax_chunked_kernel": ["not (n <= ROW_LIMIT)"]}


def test_constant_branches_and_parameters_are_reported(analyses):
    row = next(k for k in analyses["softmax"].kernels if k.name == "softmax_row_kernel")
    assert [(b.condition, b.constants) for b in row.constant_branches] == [("FUSE_SCALE", ["FUSE_SCALE"])]
    assert [(p.name, p.kind, p.ndim or p.dtype or p.constant_type) for p in row.params] == [
        ("x", "array", 2), ("out", "array", 2), ("scale", "scalar", "float32"),
        ("TILE_N", "constant", "int"), ("FUSE_SCALE", "constant", "bool")]
    rms = analyses["rms_norm"].kernels[0]
    assert [b.condition for b in rms.constant_branches] == ["CHUNKS == 1"]
    assert analyses["gather_softmax"].variants[0].instances[0].param_dtypes["row_ids"] == "int32"


def test_declared_dtypes_shapes_and_tolerances_reach_the_analysis(analyses):
    a = analyses["silu_and_mul"]
    assert a.dtypes == ["float16", "bfloat16", "float32"] and a.declared
    assert {"m": 4096, "n": 11008} in a.shapes
    assert a.tolerances["float16"].atol == 2e-3  # declared
    assert a.tolerances["float32"].atol == 1e-4  # config default


def test_stage_result_is_a_pass_with_every_artifact(analyses):
    from tileport.pipeline.stages.analyze import result_from_analysis

    a = analyses["vector_add"]
    r = result_from_analysis(a)
    assert r.stage.value == "A" and r.verdict == "PASS"
    assert r.artifacts[0].kind == "analysis" and Path(r.artifacts[0].path).name == "analysis.json"
    assert len(r.artifacts) == len(a.artifacts()) + 1
    assert all(Path(x.path).is_absolute() and sha256_file(x.path) == x.sha256 for x in r.artifacts)
    assert r.commands and all(c.exit_code == 0 for c in r.commands)


def test_bad_input_becomes_a_fail_fixable_stage_a_record(tmp_path):
    from tileport.pipeline.stages.analyze import result_from_error
    from tileport.errors import UserError
    from tileport.analysis import analyze_op

    op = tmp_path / "broken.py"
    op.write_text("import cuda.tile as ct\n\n@ct.kernel\ndef k(x:\n")
    with pytest.raises(UserError) as e:
        analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "o")
    result = result_from_error(e.value)
    assert result.verdict == "FAIL_FIXABLE" and result.fail_class is None
    assert "syntax error" in result.summary and not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------------------------
# Both targets, the CLI, modules without a declaration


def test_both_targets_get_their_own_bytecode_and_cubin(tmp_path):
    a = analyze_op(REPO / "examples" / "vector_add.py", targets=["sm_90", "sm_100"], out_dir=tmp_path / "va")
    for _, inst in a.instances():
        assert [b.target for b in inst.builds] == ["sm_90", "sm_100"]
        c90, c100 = (tmp_path / "va" / b.cubin.path for b in inst.builds)
        assert c90.parent.name == "sm_90" and c100.parent.name == "sm_100"
        assert c90.read_bytes() != c100.read_bytes()
    tileiras = [c.argv for c in a.commands if Path(c.argv[0]).name == "tileiras"]
    assert sorted(argv[argv.index("--gpu-name") + 1] for argv in tileiras) == ["sm_100"] * 3 + ["sm_90"] * 3
    assert all(str(tmp_path / "va") in " ".join(argv) for argv in tileiras)  # paths as they are now


def test_cli_single_op_prints_variants_and_writes_the_default_out_dir(tmp_path):
    op = tmp_path / "mm.py"
    op.write_text((REPO / "examples" / "matmul.py").read_text())
    r = tileport("analyze", "mm.py", "--target", "sm_90", "--no-cubin", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "mm: 1 kernel, 2 variants, 4 instances x 1 target (sm_90)" in r.stdout
    assert "TILE_M=128,TILE_N=128,TILE_K=64" in r.stdout and "when m * n >= LARGE_PROBLEM" in r.stdout
    data = json.loads((tmp_path / "out" / "mm" / "analysis.json").read_text())
    assert data["schema_version"] == 1
    assert all(b["cubin"] is None for v in data["variants"] for i in v["instances"] for b in i["builds"])
    assert not list(tmp_path.glob("__pycache__"))  # analysing does not litter the op's directory


def test_cli_without_argument_analyses_every_example(tmp_path):
    r = tileport("analyze", "--target", "sm_90", "--no-cubin", "--out", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for stem in EXAMPLES:
        row = next(ln for ln in lines if ln.split()[:1] == [stem])
        assert re.search(r"\d+ s", row)
        assert (tmp_path / "res" / stem / "analysis.json").is_file()
    assert f"{len(EXAMPLES)} of {len(EXAMPLES)} ops analysed" in lines[-1]


def test_module_without_declaration_gets_defaults_and_both_bool_variants(tmp_path):
    op = tmp_path / "scale.py"
    op.write_text('''
import cuda.tile as ct

@ct.kernel
def scale_kernel(x, y, factor, TILE: ct.Constant[int], NEGATE: ct.Constant[bool]):
    t = ct.load(x, index=(ct.bid(0), 0), shape=(1, TILE))
    if NEGATE:
        t = -t
    ct.store(y, index=(ct.bid(0), 0), tile=(t * factor).astype(y.dtype))

def scale(x, y, factor=2.0, negate=False):
    import torch
    print("host code is not run by the analysis")
    ct.launch(torch.cuda.current_stream(), (x.shape[0],), scale_kernel, (x, y, factor, 256, negate))
''')
    a = analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "o", run_tileiras=False)
    assert not a.declared and a.dtypes == ["float16", "float32"] and a.shapes == []
    assert sorted(v.name for v in a.variants) == ["TILE=256,NEGATE=false", "TILE=256,NEGATE=true"]
    params = {p.name: p for p in a.kernels[0].params}
    assert params["factor"].dtype == "float32" and params["x"].ndim == 2
    assert any("no TILEPORT declaration" in n for n in a.notes)


def test_module_output_on_stdout_does_not_break_the_analysis(tmp_path):
    op = tmp_path / "noisy.py"
    op.write_text((REPO / "examples" / "vector_add.py").read_text() + '\nprint("{not json")\n')
    a = analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "o", run_tileiras=False)
    assert a.variants


def test_warm_server_runs_each_op_in_a_fresh_process(tmp_path):
    saboteur = tmp_path / "saboteur.py"
    saboteur.write_text((REPO / "examples" / "vector_add.py").read_text()
                        + "\nimport cuda.tile.compilation as _c\n_c.export_kernel = None  # breaks only this process\n")
    crasher = tmp_path / "crasher.py"
    crasher.write_text("import os\nimport cuda.tile as ct\nos.abort()\n\n@ct.kernel\ndef k(x):\n    pass\n")
    with pytest.raises(Exception, match="exporting vector_add_kernel"):
        analyze_op(saboteur, targets=["sm_90"], out_dir=tmp_path / "s", run_tileiras=False, warm=True)
    with pytest.raises(Exception, match=r"crasher.py: the child process that imports it died \(killed by signal 6\)"):
        analyze_op(crasher, targets=["sm_90"], out_dir=tmp_path / "c", run_tileiras=False, warm=True)
    a = analyze_op(REPO / "examples" / "vector_add.py", targets=["sm_90"], out_dir=tmp_path / "ok",
                   run_tileiras=False, warm=True)
    assert a.variants and a.commands[0].argv[-1] == "(forked by the warm server)" and a.commands[0].exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crasher.py", "ok", "saboteur.py"]


def test_warm_server_runs_ops_side_by_side_and_answers_each_with_its_own(tmp_path):
    """Two ops that each wait at import until the other has started: the one warm server runs them at once (one op
    at a time would leave the first waiting out its minute and failing), and each caller gets its own op's
    analysis, while a third op that crashes beside them fails alone."""
    from concurrent.futures import ThreadPoolExecutor

    wait = ("\nimport pathlib as _p, time as _t\n_here = _p.Path(__file__).parent\n(_here / '{me}.started').touch()\n"
            "_end = _t.monotonic() + 60\nwhile not (_here / '{other}.started').exists():\n"
            "    assert _t.monotonic() < _end, '{other} never started beside {me}'\n    _t.sleep(0.05)\n")
    source = (REPO / "examples" / "vector_add.py").read_text()
    for me, other in (("left", "right"), ("right", "left")):
        (tmp_path / f"{me}.py").write_text(source.replace("vector_add_kernel", f"{me}_kernel")
                                           + wait.format(me=me, other=other))
    (tmp_path / "crasher.py").write_text("import os\nimport cuda.tile as ct\nos.abort()\n\n@ct.kernel\ndef k(x):\n    pass\n")

    def one(name: str):
        try:
            return analyze_op(tmp_path / f"{name}.py", targets=["sm_90"], out_dir=tmp_path / "out" / name,
                              run_tileiras=False, warm=True)
        except Exception as e:  # noqa: BLE001 - the crasher's one line
            return str(e)

    first = analyze_op(REPO / "examples" / "vector_add.py", targets=["sm_90"], out_dir=tmp_path / "out" / "first",
                       run_tileiras=False, warm=True)  # the one server exists before the three ask for it
    with ThreadPoolExecutor(max_workers=3) as pool:
        left, right, crashed = pool.map(one, ["left", "right", "crasher"])
    assert [k.name for k in getattr(left, "kernels", [])] == ["left_kernel"], left
    assert [k.name for k in getattr(right, "kernels", [])] == ["right_kernel"], right
    assert {a.commands[0].argv[-1] for a in (first, left, right)} == {"(forked by the warm server)"}
    assert "crasher.py: the child process that imports it died (killed by signal 6)" in crashed


# ---------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, nothing left behind

BAD = {
    "notes.txt": ("print('hi')\n", "not a Python file"),
    "syntax.py": ("def f(:\n    pass\n", "syntax.py:1: syntax error"),
    "nokernel.py": ("import math\n\ndef f(x):\n    return x\n", "no @ct.kernel function found"),
    "needs_torch.py": ("import cuda.tile as ct\nimport torch\n\n@ct.kernel\ndef k(x):\n    pass\n",
                       "needs_torch.py:2: import failed: ModuleNotFoundError: No module named 'torch'"),
    "raises.py": ("import cuda.tile as ct\n\nraise RuntimeError('boom at import')\n\n@ct.kernel\ndef k(x):\n    pass\n",
                  "raises.py:3: import failed: RuntimeError: boom at import"),
    "rejected.py": ('import cuda.tile as ct\n\nTILEPORT = {"constants": {"TILE": [128]}}\n\n\n@ct.kernel\n'
                    'def bad(x, TILE: ct.Constant[int]):\n    t = ct.load(x, index=(0,), shape=(TILE,))\n'
                    '    ct.store(x, index=(0,), tile=t + ct.zeros((TILE * 2,), dtype=t.dtype))\n',
                    "rejected.py:9: cuda-tile rejected kernel bad[TILE=128]"),
    "unknown_constant.py": ("import cuda.tile as ct\n\n@ct.kernel\ndef k(x, B: ct.Constant[int]):\n"
                            "    ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(B,)))\n",
                            "declare the values to analyse: TILEPORT = {'constants': {'k.B': [...]}}"),
    "bad_declaration.py": ("import cuda.tile as ct\n\nTILEPORT = {'dtype': ['float16']}\n",
                           "TILEPORT has unknown key 'dtype'"),
    "crashes.py": ("import os\nimport cuda.tile as ct\n\nos.abort()\n\n@ct.kernel\ndef k(x):\n    pass\n",
                   "the child process that imports it died (killed by signal 6)"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_leaves_no_output(tmp_path, name):
    source, expected = BAD[name]
    (tmp_path / name).write_text(source)
    r = tileport("analyze", name, "--target", "sm_90", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tileport: error: "), r.stderr
    assert expected in lines[0]
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
    assert {p.name for p in tmp_path.iterdir()} == {name}


@pytest.mark.parametrize("args,expected", [
    (["missing.py"], "missing.py: no such file"),
    (["examples/vector_add.py", "--target", "sm_91"], "unknown target 'sm_91'; use one of sm_80"),
    (["examples/vector_add.py", "--kernel", "nope"], "no kernel named 'nope'; kernels: vector_add_kernel"),
])
def test_bad_arguments_are_one_line_exit_2(tmp_path, args, expected):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "vector_add.py").write_text((REPO / "examples" / "vector_add.py").read_text())
    r = tileport("analyze", *args, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("tileport: error: ") and expected in r.stderr
    assert not (tmp_path / "out").exists()


def test_failed_rerun_keeps_the_previous_result_intact(tmp_path):
    out = tmp_path / "res"
    first = analyze_op(REPO / "examples" / "vector_add.py", targets=["sm_90"], out_dir=out, run_tileiras=False)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    broken = tmp_path / "vector_add.py"
    broken.write_text((REPO / "examples" / "vector_add.py").read_text().replace("a + b", "a + ct.zeros((TILE * 2,), dtype=a.dtype)"))
    r = tileport("analyze", str(broken), "--target", "sm_90", "--out", str(out), cwd=tmp_path)
    assert r.returncode == 2 and "cuda-tile rejected kernel vector_add_kernel" in r.stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res", "vector_add.py"]  # no staging dirs left
    assert load_analysis(out).source.sha256 == first.source.sha256


def test_a_guessed_dtype_the_kernel_cannot_take_drops_that_instance_only(tmp_path):
    """A kernel written for float32 (it stores a float32 tile into its output) is analysed for float32; the guessed
    float16 instance cuda-tile rejects is dropped with a note, not the whole op (issue #32, KernelBench goldens)."""
    op = tmp_path / "f32_only.py"
    op.write_text('import cuda.tile as ct\n\nTILE = 256\n\n\n@ct.kernel\ndef exp_rows(x, out):\n'
                  '    r = ct.bid(0)\n    t = ct.load(x, index=(r, 0), shape=(1, TILE)).astype(ct.float32)\n'
                  '    ct.store(out, index=(r, 0), tile=ct.exp(t))\n')
    a = analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "out", run_tileiras=False)
    assert [i.dtype for v in a.variants for i in v.instances] == ["float32"] and a.dtypes == ["float32"]
    assert any(n.startswith("float16 instance dropped:") and "cuda-tile rejected kernel exp_rows" in n for n in a.notes)


def test_an_op_importing_its_projects_top_level_module_analyses_as_where_the_project_is_installed(tmp_path):
    # better-benchmark's oracles (repros/canonical/<id>/oracle.py) import `oracle_harness`, a setuptools py-module at
    # the project root: importable wherever the project is installed (pip install -e .), not from the op's directory
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "bench"\n[tool.setuptools]\npy-modules = ["harness"]\n')
    (tmp_path / "harness.py").write_text("SCALE = 2\n")
    op = tmp_path / "repros" / "r1" / "op.py"
    op.parent.mkdir(parents=True)
    op.write_text("import cuda.tile as ct\nfrom harness import SCALE\n\n\n@ct.kernel\n"
                  "def scale(x, y, T: ct.Constant[int]):\n    i = ct.bid(0)\n"
                  "    ct.store(y, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)) * SCALE)\n\n\n"
                  "def run(x, y):\n    ct.launch(None, (x.shape[0] // 128,), scale, (x, y, 128))\n")
    a = analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "out", run_tileiras=False)
    assert [(v.kernel, v.constants) for v in a.variants] == [("scale", {"T": 128})]
