"""The Tile IR text parser: every op cuda-tile emits parses, unknown ops are tolerated, and a
malformed file is a one-line error naming line and column."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ir_kernels.build import compile_text, tileirdisasm
from ir_kernels.zoo import ZOO
from tileport.errors import UserError
from tileport.validators.tileir.canon import canonicalize
from tileport.validators.tileir.diff import Severity, Verdict, diff_texts
from tileport.validators.tileir.parse import TileIRParseError, parse_text, walk_ops

needs_disasm = pytest.mark.skipif(tileirdisasm() is None, reason="tileirdisasm not installed")
REPO = Path(__file__).resolve().parents[3]
RUST = Path(__file__).resolve().parents[2] / "ir_kernels" / "rust"

_zoo: dict[str, str] = {}


def zoo(name: str, debug_info: bool = False) -> str:
    key = f"{name}:{debug_info}"
    if key not in _zoo:
        kernel, sig = ZOO[name]
        _zoo[key] = compile_text(kernel, sig, debug_info=debug_info)
    return _zoo[key]


def op_lines(text: str) -> list[str]:
    """Lines of a tileirdisasm listing that hold an op (not headers, braces, region args, aliases)."""
    out = []
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith(("}", "(", "#", "entry ")):
            continue
        out.append(s)
    return out


# --- every op of real output parses --------------------------------------------------------------


@needs_disasm
@pytest.mark.parametrize("name", sorted(ZOO))
@pytest.mark.parametrize("debug_info", [False, True])
def test_every_op_of_real_output_parses(name, debug_info):
    text = zoo(name, debug_info)
    mod = parse_text(text)
    ops = [op for e in mod.entries for op in walk_ops(e.body.ops)]
    # one parsed op per op line, none lost and none invented
    assert sorted(op.line for op in ops) == [k + 1 for k, l in enumerate(text.splitlines())
                                             if l.strip() and l.strip() in op_lines(text)]
    assert mod.has_debug_info == debug_info
    for e in mod.entries:
        canonicalize(e)  # every value resolves


@needs_disasm
def test_parsed_structure_of_control_flow_and_reductions():
    mod = parse_text(zoo("control"))
    ops = {op.name: op for op in walk_ops(mod.entries[0].body.ops)}
    loop = ops["for"]
    assert [name for name, _ in loop.regions[0].args][0] == "%loopIdx"
    assert [ty for _, ty in loop.regions[0].args] == ["tile<i32>", "tile<256xf32>"]
    assert len(loop.operands) == 4 and loop.result_types == ["tile<256xf32>"]
    branch = ops["if"]
    assert len(branch.regions) == 2 and branch.result_types == ["tile<256xf32>"]
    argmax = next(op for op in walk_ops(mod.entries[0].body.ops) if op.name == "reduce" and len(op.results) == 2)
    assert argmax.results == ["%reduce#0", "%reduce#1"]
    assert argmax.attrs["dim"] == "0" and len(argmax.regions[0].args) == 4
    scan = ops["scan"]
    assert scan.attrs["reverse"] == "false"
    assert ops["exp"].attrs["rounding"] == "approx"

    mod = parse_text(zoo("while_break"))
    names = [op.name for op in walk_ops(mod.entries[0].body.ops)]
    assert {"loop", "break", "print_tko", "assert", "continue"} <= set(names)

    mod = parse_text(zoo("gather_math"))
    entry = mod.entries[0]
    assert entry.hints == {"default": {"num_cta_in_cga": "2", "occupancy": "2"}}
    ops = list(walk_ops(entry.body.ops))
    assert any(op.name == "atomic_rmw_tko" and "addf" in op.flags for op in ops)
    assert any(op.name == "divf" and op.attrs.get("rounding") == "approx" and "flush_to_zero" in op.attrs
               for op in ops)


@needs_disasm
@pytest.mark.parametrize("name", sorted(ZOO))
def test_kernel_equals_itself_with_every_value_renamed(name):
    text = zoo(name)
    names = sorted(set(re.findall(r"%[A-Za-z_][\w.$-]*|%\d+", text)), key=len, reverse=True)
    rng = random.Random(7)
    fresh = [f"%v{k}" for k in range(len(names))]
    rng.shuffle(fresh)
    mapping = dict(zip(names, fresh))
    renamed = re.sub(r"%[A-Za-z_][\w.$-]*|%\d+", lambda m: mapping[m.group(0)], text)
    assert renamed != text
    rep = diff_texts(text, renamed)
    assert rep.verdict == Verdict.PASS, [(f.check, f.message) for f in rep.findings]


@needs_disasm
def test_debug_info_never_changes_the_verdict():
    for name in sorted(ZOO):
        rep = diff_texts(zoo(name), zoo(name, debug_info=True))
        assert rep.verdict == Verdict.PASS_WITH_NOTES
        assert rep.checks() == {"benign.debug_info"}


def test_every_committed_fixture_and_analyze_output_parses():
    files = sorted(RUST.glob("*.tileir")) + sorted((REPO / "out").glob("**/*.tileir"))
    assert files, "the cutile-rs fixtures are missing"
    for f in files:
        mod = parse_text(f.read_text(), str(f))
        assert mod.entries
        rep = diff_texts(f.read_text(), f.read_text())
        assert rep.verdict == Verdict.PASS, f


@needs_disasm
def test_every_example_op_parses():
    """The bundled examples, exported the way `tileport analyze` does (when that stage is present)."""
    analysis = pytest.importorskip("tileport.analysis")
    examples = sorted((REPO / "examples").glob("*.py"))
    if not examples:
        pytest.skip("no examples")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for ex in examples:
            out = Path(d) / ex.stem
            try:
                analysis.analyze_op(ex, targets=["sm_90"], out_dir=out, run_tileiras=False)
            except UserError as e:  # an example still being written
                pytest.skip(f"analyze {ex.name}: {e}")
            texts = sorted(out.glob("**/*.tileir"))
            assert texts, ex
            for t in texts:
                mod = parse_text(t.read_text(), str(t))
                for e in mod.entries:
                    canonicalize(e)


# --- unknown ops ---------------------------------------------------------------------------------

BASE = """\
entry @k(%arg0: tile<ptr<f32>>, %arg1: tile<i32>) optimization_hints=<default = {}> {
  %0 = make_token : token
  %tview = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %pview = make_partition_view %tview : partition_view<tile=(128), tensor_view<?xf32, strides=[1]>>
  %bx, %by, %bz = get_tile_block_id : tile<i32>
  %t, %tok = load_view_tko weak %pview[%bx] token = %0 : partition_view<tile=(128), tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<128xf32>, token
  %v = exp %t : tile<128xf32>
  %s = store_view_tko weak %v, %pview[%bx] token = %tok : tile<128xf32>, partition_view<tile=(128), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  return
}
"""


def test_unknown_op_becomes_a_generic_op():
    text = BASE.replace("  %v = exp %t : tile<128xf32>\n",
                        "  %w = frobnicate<fast> %t, %bx {mode = \"x\"} : tile<128xf32>, tile<i32> -> tile<128xf32>\n"
                        "  %v = exp %w : tile<128xf32>\n")
    mod = parse_text(text)
    op = next(o for o in walk_ops(mod.entries[0].body.ops) if o.name == "frobnicate")
    assert op.operands == ["%t", "%bx"] and op.results == ["%w"]
    assert op.result_types == ["tile<128xf32>"] and op.in_types == ["tile<128xf32>", "tile<i32>"]
    assert op.attrs["mode"] == '"x"' and op.attrs["value"] == "fast"
    assert diff_texts(text, text).verdict == Verdict.PASS
    # the same unknown op on both sides is no difference; only on one side it is
    rep = diff_texts(BASE, text)
    assert rep.verdict == Verdict.FAIL_FIXABLE
    f = next(f for f in rep.findings if f.severity == Severity.ERROR)
    assert f.category == "structure" and "frobnicate" in f.message and f.port_line == 7


def test_unknown_op_with_a_region_and_no_results():
    text = BASE.replace("  return\n", "  mystery_barrier %bx : tile<i32> {\n    yield\n  }\n  return\n")
    mod = parse_text(text)
    op = next(o for o in walk_ops(mod.entries[0].body.ops) if o.name == "mystery_barrier")
    assert len(op.regions) == 1 and op.regions[0].ops[0].name == "yield"
    rep = diff_texts(BASE, text)
    assert rep.verdict == Verdict.FAIL_FIXABLE  # an op kept only for its effect is never ignored


def test_module_wrapper_and_prefixed_names_are_accepted():
    wrapped = "cuda_tile.module @m {\n" + BASE.replace("exp %t", "cuda_tile.exp %t") + "}\n"
    assert diff_texts(BASE, wrapped).verdict == Verdict.PASS


# --- malformed input -----------------------------------------------------------------------------


@pytest.mark.parametrize("mutate, line, col, words", [
    (lambda t: t.replace("%v = exp %t", "%v = exp %t ;"), 7, 15, "unexpected character ';'"),
    (lambda t: t.replace("shape = [%arg1]", "shape = [%arg1"), 3, 44, "'[' is never closed"),
    (lambda t: t.replace("  %v = exp %t : tile<128xf32>\n", "  %v = : tile<128xf32>\n"), 7, 8,
     "expected an operation name"),
    (lambda t: t.rstrip().removesuffix("}"), 1, 1, "not closed"),
    (lambda t: t.replace("%v = exp %t", "%v = exp %nowhere"), 7, 3, "undefined value %nowhere"),
    (lambda t: t.replace("%t, %tok =", "%t %tok ="), 6, 6, "expected ',' or '='"),
    (lambda t: "", 1, 1, "no entries"),
])
def test_malformed_input_names_line_and_column(mutate, line, col, words):
    text = mutate(BASE)
    with pytest.raises(TileIRParseError) as ei:
        mod = parse_text(text, "k.tileir")
        for e in mod.entries:
            canonicalize(e, "k.tileir")
    err = ei.value
    assert isinstance(err, UserError)
    assert (err.line, err.col) == (line, col), str(err)
    assert words in str(err)
    assert str(err).startswith(f"k.tileir:{line}:{col}: malformed Tile IR:")
    assert "\n" not in str(err)


def test_binary_input_is_refused_clearly():
    with pytest.raises(TileIRParseError, match="binary"):
        parse_text("\x7fTileIR\x00\x0d\x04")


def test_corrupted_real_output_never_crashes():
    """Random edits of real IR (deleted/duplicated lines, stray characters, swapped words) give
    either a report or a one-line UserError, never another exception."""
    texts = [f.read_text() for f in sorted(RUST.glob("*.tileir"))]
    rng = random.Random(2026)
    outcomes = {"report": 0, "error": 0}
    for _ in range(300):
        base = rng.choice(texts)
        lines = base.split("\n")
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(lines))
            how = rng.randrange(4)
            if how == 0:
                del lines[k]
            elif how == 1:
                lines.insert(k, lines[rng.randrange(len(lines))])
            elif how == 2 and lines[k]:
                j = rng.randrange(len(lines[k]))
                lines[k] = lines[k][:j] + rng.choice('%@#<>(){}[],:="x0 ') + lines[k][j + 1:]
            else:
                words = lines[k].split(" ")
                if len(words) > 2:
                    a, b = rng.randrange(len(words)), rng.randrange(len(words))
                    words[a], words[b] = words[b], words[a]
                    lines[k] = " ".join(words)
        try:
            diff_texts(base, "\n".join(lines))
            outcomes["report"] += 1
        except UserError as e:
            assert "\n" not in str(e) and ":" in str(e)
            outcomes["error"] += 1
    assert outcomes["report"] and outcomes["error"]
