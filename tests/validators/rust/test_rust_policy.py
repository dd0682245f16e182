"""Untrusted-code policy: what tileport refuses before cargo ever runs. Fast (no cargo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tileport.validators.rust.build import BuildOptions, build_crate
from tileport.validators.rust.crate import write_crate
from tileport.validators.rust.policy import check_crate, check_source
from tileport.validators.rust.spec import DumpSpec

PORTS = Path(__file__).resolve().parents[3] / "ports"

GOOD = """\
#[cutile::module]
pub mod vector_add {
    use cutile::core::*;

    #[cutile::entry()]
    fn add<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        let tx = x.load_like(z);
        let ty = y.load_like(z);
        z.store(tx + ty);
    }
}
"""

SPEC = DumpSpec.model_validate({
    "module": "vector_add",
    "entries": [{"name": "add", "variants": [{"name": "b1024", "generics": ["1024"]}]}],
})


def inject(line: str) -> str:
    """GOOD with `line` inserted as the first statement of the kernel body (line 11)."""
    return GOOD.replace("        let tx = x.load_like(z);", f"        {line}\n        let tx = x.load_like(z);")


def codes(diags) -> list[str]:
    return [d.code for d in diags if d.is_error]


@pytest.mark.parametrize("port", sorted(p.name for p in PORTS.iterdir() if (p / "kernel.rs").is_file()))
def test_hand_written_ports_pass_the_policy(port):
    spec_path = PORTS / port / "spec.json"
    import json
    spec = DumpSpec.model_validate(json.loads(spec_path.read_text()))
    diags = check_source((PORTS / port / "kernel.rs").read_text(), module=spec.module,
                         entries=[e.name for e in spec.entries])
    assert not [d.short() for d in diags if d.is_error]


@pytest.mark.parametrize("line, code, needle", [
    ('const P: &str = include_str!("/etc/passwd");', "TP-FORBIDDEN-MACRO", "include_str!"),
    ('const P: &[u8] = include_bytes!("../../secret");', "TP-FORBIDDEN-MACRO", "include_bytes!"),
    ('include!("/tmp/other.rs");', "TP-FORBIDDEN-MACRO", "include!"),
    ('let home: &str = env!("HOME");', "TP-FORBIDDEN-MACRO", "env!"),
    ('let _ = std::process::Command::new("sh");', "TP-HOST-API", "process"),
    ('let _ = std::fs::read("/etc/shadow");', "TP-HOST-API", "fs"),
    ('let _ = std::net::TcpStream::connect("10.0.0.1:80");', "TP-HOST-API", "net"),
    ("let _ = ::core::mem::size_of::<u8>();", "TP-HOST-API", "core"),
    ("unsafe { let p = 0x10 as *mut u8; }", "TP-UNSAFE", "unsafe"),
])
def test_forbidden_code_in_a_kernel_is_refused_at_its_line(line, code, needle):
    diags = check_source(inject(line), deny_unsafe=True, module="vector_add", entries=["add"])
    hits = [d for d in diags if d.code == code]
    assert hits, [d.short() for d in diags]
    hit = next((h for h in hits if needle in h.message), None)
    assert hit is not None, [h.message for h in hits]
    assert hit.file == "src/kernel.rs" and hit.line == 11
    assert hit.snippet is not None and hit.snippet[hit.col - 1:].startswith(needle.rstrip("!"))


@pytest.mark.parametrize("item, code", [
    ('#[path = "/etc/passwd"]\n    mod evil;', "TP-ATTRIBUTE"),
    ('#[link_section = ".init_array"]\n    #[used]\n    static CTOR: u8 = 0;', "TP-ATTRIBUTE"),
    ("#[no_mangle]\n    fn main_hook() {}", "TP-ATTRIBUTE"),
    ("extern crate serde;", "TP-EXTERN"),
    ('extern "C" { fn system(cmd: *const u8) -> i32; }', "TP-EXTERN"),
    ("mod sibling;", "TP-MODULE-FILE"),
    ("macro_rules! hide { ($t:tt) => { $t } }", "TP-FORBIDDEN-MACRO"),
    ("#[derive(serde::Serialize)]\n    struct S;", "TP-ATTRIBUTE"),
])
def test_items_that_act_at_build_or_load_time_are_refused(item, code):
    src = GOOD.replace("    use cutile::core::*;", f"    use cutile::core::*;\n    {item}")
    assert code in codes(check_source(src, module="vector_add", entries=["add"]))


def test_words_in_comments_strings_and_raw_identifiers_are_judged_correctly():
    # Forbidden words inside comments and string literals are not code ...
    src = inject('// std::process::Command, include_str!("x"), unsafe\n'
                 '        let _s: &str = "std::fs::read and env!(HOME)";\n'
                 '        let _r: &str = r#"extern crate x; #[path = "y"]"#;')
    assert codes(check_source(src, deny_unsafe=True, module="vector_add", entries=["add"])) == []
    # ... but a raw identifier is the identifier itself.
    assert "TP-HOST-API" in codes(check_source(inject("let _ = r#std::r#fs::read(\"x\");"), module="vector_add"))


def test_unsafe_is_allowed_by_default_because_cutile_needs_it_for_padded_views():
    src = (PORTS / "softmax" / "kernel.rs").read_text()
    assert "padding::NegInf" in src and "unsafe" in src
    assert codes(check_source(src, module="softmax", entries=["softmax_row"])) == []
    assert "TP-UNSAFE" in codes(check_source(src, deny_unsafe=True, module="softmax"))


def test_spec_names_missing_from_the_kernel_are_reported_before_building():
    diags = check_source(GOOD.replace("pub mod vector_add", "mod vector_add"), module="vector_add",
                         entries=["add", "add_scaled"])
    messages = [d.message for d in diags if d.is_error]
    assert any("must be public" in m for m in messages)
    assert any("entry `add_scaled`" in m for m in messages)
    bare = check_source(GOOD.replace("#[cutile::entry()]", "#[cutile::entry]"), module="vector_add", entries=["add"])
    assert [d.level for d in bare if d.code == "TP-BARE-ENTRY"] == ["warning"]


# ---------------------------------------------------------------------------------------------------- crate tree


@pytest.fixture
def crate(tmp_path):
    return write_crate(tmp_path / "conv", SPEC, GOOD)


def test_a_freshly_generated_crate_is_clean(crate):
    assert check_crate(crate) == []


@pytest.mark.parametrize("mutate, code", [
    (lambda r: (r / "build.rs").write_text('fn main() { std::process::Command::new("sh"); }'), "TP-BUILD-SCRIPT"),
    (lambda r: (r / "Cargo.toml").write_text((r / "Cargo.toml").read_text() + 'reqwest = "0.12"\n'), "TP-EDITED"),
    (lambda r: (r / "src/bin/ir_dump.rs").write_text("fn main() {}\n"), "TP-EDITED"),
    (lambda r: ((r / ".cargo").mkdir(), (r / ".cargo/config.toml").write_text('[build]\nrustc-wrapper = "sh"\n')),
     "TP-CARGO-CONFIG"),
    (lambda r: (r / "rust-toolchain.toml").write_text('[toolchain]\nchannel = "nightly"\n'), "TP-CARGO-CONFIG"),
    (lambda r: (r / "src/extra.rs").write_text("pub fn f() {}\n"), "TP-UNEXPECTED-FILE"),
    (lambda r: ((r / "src/kernel.rs").unlink(), os.symlink("/etc/passwd", r / "src/kernel.rs")), "TP-SYMLINK"),
])
def test_tampered_crates_are_refused(crate, mutate, code):
    mutate(crate.root)
    assert code in codes(check_crate(crate))


def test_refusal_happens_before_cargo_runs(crate):
    (crate.root / "build.rs").write_text("fn main() {}\n")
    (crate.root / "src" / "kernel.rs").write_text(inject('let _ = include_str!("/etc/hostname");'))
    result = build_crate(crate, BuildOptions(cubins=False, disasm=False))
    assert not result.ok and result.stage == "policy"
    assert {"TP-BUILD-SCRIPT", "TP-FORBIDDEN-MACRO"} <= set(codes(result.diagnostics))
    assert result.commands == []  # cargo was never started
    assert all(d.source.value == "policy" for d in result.diagnostics)


META_READ = '#[cuda_tile::compiler_op(name = "return_type_meta_field", type_meta_field = "strides")]'


@pytest.mark.parametrize("attr, ok", [
    (META_READ, True),  # what the silu_and_mul port uses: read a tensor's strides (cutile 0.5 has no accessor)
    ('#[cuda_tile::compiler_op(type_meta_field = "shape", name = "return_type_meta_field")]', True),
    ('#[cuda_tile::compiler_op(name = "return_type_meta_field", type_meta_field = "anything")]', False),
    ('#[cuda_tile::compiler_op(name = "set_type_meta_field", type_meta_field = "token")]', False),
    ('#[cuda_tile::compiler_op(name = "cast")]', False),
    ('#[cuda_tile::op(name = "cuda_tile.load_ptr_tko")]', False),
])
def test_only_the_metadata_read_compiler_op_is_allowed_in_a_kernel(attr, ok):
    src = ("#[cutile::module]\npub mod m {\n    use cutile::core::*;\n    " + attr + "\n"
           "    fn f<'s, E: ElementType, const S: [i32; 2], const C: [i32; 2]>(t: &Tensor<E, S>) -> Array<'s, C> "
           "{ unreachable!() }\n}\n")
    diags = [d for d in check_source(src) if d.is_error]
    assert (not diags) if ok else [d.code for d in diags] == ["TP-ATTRIBUTE"]
    assert check_source(src, host=True)  # never in host.rs


def _cutile_kernel_modules() -> list[tuple[str, str]]:
    """Every `#[cutile::module] mod` in cutile 0.5.0's own tests and examples (code nobody here wrote)."""
    from tileport.validators.rust.syntax_policy import _parser
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    roots = sorted(home.glob("registry/src/*/cutile-0.5.0"))
    mods = []
    for f in sorted(roots[0].glob("tests/**/*.rs")) + sorted(roots[0].glob("examples/*.rs")) if roots else []:
        data = f.read_bytes()
        prev = None
        for child in _parser().parse(data).root_node.children:
            if (child.type == "mod_item" and prev is not None and prev.type == "attribute_item"
                    and b"cutile::module" in data[prev.start_byte:prev.end_byte]):
                mods.append((f.name, data[prev.start_byte:child.end_byte].decode()))
            if child.type not in ("line_comment", "block_comment"):
                prev = child
    return mods


def test_cutile_own_test_kernels_pass_the_allowlist():
    """The allowlist is general: cutile's own kernels pass it, except the one that tests a static which cutile
    itself rejects (global_memory.rs `bad_static_module`)."""
    mods = _cutile_kernel_modules()
    if not mods:
        pytest.skip("cutile 0.5.0 sources are not in the cargo registry")
    refused = {name for name, src in mods if any(d.is_error for d in check_source(src))}
    assert len(mods) >= 150
    assert refused <= {"global_memory.rs"}, refused


def test_text_that_is_only_prose_may_be_unicode_but_code_may_not():
    # Comments and strings may hold any language; a BOM at the start is what editors write.
    prose = "\ufeff" + inject('// Résumé: x + y, 加法\n        let _s: &str = "ü";')
    assert codes(check_source(prose, module="vector_add", entries=["add"])) == []
    # ... but an identifier must be ASCII, and invisible controls are refused even inside comments.
    diags = check_source(inject("let caf\u00e9 = 1;"), module="vector_add", entries=["add"])
    assert [(d.code, d.line) for d in diags if d.is_error] == [("TP-UNICODE", 11)]
    hidden = check_source(inject("// \u202e reversed"), module="vector_add", entries=["add"])
    assert [(d.code, d.line, d.col) for d in hidden if d.is_error] == [("TP-UNICODE", 11, 12)]


def test_code_the_policy_cannot_parse_is_refused_where_it_breaks():
    diags = check_source(inject("let x = ;"), module="vector_add", entries=["add"])
    err = [d for d in diags if d.is_error]
    assert err and err[0].code == "TP-SYNTAX" and err[0].line == 11


def test_host_file_may_use_std_but_not_its_host_effect_modules():
    host = ("use std::sync::Arc;\nuse std::io::Write;\n"
            "pub fn run() -> Result<(), String> {\n    let v = vec![1, 2];\n    println!(\"{}\", v.len());\n"
            "    let _a = Arc::new(std::time::Instant::now());\n    Ok(())\n}\n")
    assert codes(check_source(host, "src/host.rs", host=True)) == []
    assert codes(check_source(host.replace("std::time::Instant::now()", "std::env::args()"), "src/host.rs",
                              host=True)) == ["TP-HOST-API"]
