"""The crate tileport generates for one conversion, and the check that nobody else changed it.

Layout (everything except `src/kernel.rs` and `src/host.rs` is written by tileport and verified before a build):

    Cargo.toml            cutile + cutile-compiler pinned exactly, nothing else; no build script
    Cargo.lock            the pinned dependency graph (built with --locked, so the shared cache always matches)
    tileport-spec.json    entries x variants x targets to dump (tileport.validators.rust.spec)
    src/lib.rs            `pub mod kernel;` (+ `pub mod host;`)
    src/kernel.rs         the model-written kernel: `#[cutile::module] pub mod <module> { ... }`
    src/host.rs           optional model-written launcher: `pub fn run() -> Result<(), String>`
    src/bin/ir_dump.rs    generated from the spec: KernelCompiler per job -> .tileirbc
    src/bin/run.rs        generated when the spec has host = true

The package and binary names carry a hash of the crate's absolute path. Every conversion shares one
CARGO_TARGET_DIR, and cargo derives artifact file names and fingerprints of a path package from its name and
version, *not* its location: two crates both called `tileport-port` would overwrite each other's library and
cargo could judge one's stale artifacts fresh for the other. Binaries are also copied to `<target>/debug/<name>`.
The library keeps the fixed name `tileport_port`, so generated code can name it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tileport.errors import UserError
from tileport.exec import settings
from tileport.exec.cutile import CUTILE_VERSION
from tileport.validators.rust.spec import SPEC_FILENAME, DumpSpec, TensorSpec, Variant, job_stem, load_spec

PACKAGE_NAME = "tileport-port"  # + "-<crate id>": see render_lock
LIB_NAME = "tileport_port"

KERNEL_FILE = "src/kernel.rs"
HOST_FILE = "src/host.rs"
MODEL_FILES = (KERNEL_FILE, HOST_FILE)
ARTIFACTS_DIR = "artifacts"
OPTIONAL_GENERATED = ("src/bin/run.rs",)
# Directories tileport or cargo may leave in a crate; never read as sources.
IGNORED_DIRS = (ARTIFACTS_DIR, "target")

regenerate_lock_note = (
    "To move to another cutile release: set CUTILE_VERSION (tileport/exec/cutile.py), build one crate online "
    "without --locked, "
    "copy its Cargo.lock to tileport/validators/rust/crate_template/cargo-lock.toml."
)


def _template(name: str) -> str:
    return resources.files("tileport.validators.rust.crate_template").joinpath(name).read_text(encoding="utf-8")


def crate_id(root: str | Path) -> str:
    """Short hash of the crate's absolute path: unique binary names in the shared target dir."""
    return hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class CrateLayout:
    root: Path
    spec: DumpSpec

    @property
    def ident(self) -> str:
        return crate_id(self.root)

    @property
    def package(self) -> str:
        return f"{PACKAGE_NAME}-{self.ident}"

    @property
    def irdump_bin(self) -> str:
        return f"tp-irdump-{self.ident}"

    @property
    def run_bin(self) -> str:
        return f"tp-run-{self.ident}"

    @property
    def kernel_rs(self) -> Path:
        return self.root / KERNEL_FILE

    @property
    def artifacts(self) -> Path:
        return self.root / ARTIFACTS_DIR


# ----------------------------------------------------------------------------------------------- code generation


def _i32(value: int, what: str) -> str:
    if not -(2**31) <= value < 2**31:
        raise UserError(f"spec: {what} value {value} does not fit in i32")
    return str(value)


def _slice(values: list[int], what: str) -> str:
    return "&[" + ", ".join(_i32(v, what) for v in values) + "][..]"


def _div_hint(divisor: int) -> str:
    return f"DivHint {{ divisor: {min(divisor, 16)}, max: 16 }}"


def _tensor_spec(t: TensorSpec) -> str:
    if t.shape is not None and t.strides is not None:
        return f"compute_spec({t.base_align}u64, {_slice(t.shape, 'shape')}, {_slice(t.strides, 'stride')}, 0)"
    assert t.shape_div is not None and t.stride_div is not None and t.stride_one is not None
    return (
        "SpecializationBits { "
        f"shape_div: vec![{', '.join(_div_hint(d) for d in t.shape_div)}], "
        f"stride_div: vec![{', '.join(_div_hint(d) for d in t.stride_div)}], "
        f"stride_one: vec![{', '.join('true' if b else 'false' for b in t.stride_one)}], "
        f"base_ptr_div: {_div_hint(t.base_align)}, "
        f"elements_disjoint: {'true' if t.elements_disjoint else 'false'} }}"
    )


def _job_fn(index: int, module: str, entry: str, variant: Variant, target: str) -> str:
    lines = [
        f"fn job_{index}() -> Result<CompileArtifacts, JITError> {{",
        f"    KernelCompiler::new({LIB_NAME}::kernel::{module}::__module_ast_self, \"{module}\", \"{entry}\")",
    ]
    if variant.generics:
        lines.append("        .generics(vec![" + ", ".join(f'"{g}".to_string()' for g in variant.generics) + "])")
    if variant.strides:
        items = ", ".join(f'("{k}", {_slice(v, "stride")})' for k, v in variant.strides.items())
        lines.append(f"        .strides(&[{items}])")
    if variant.tensors:
        items = ", ".join(f'("{k}", {_tensor_spec(v)})' for k, v in variant.tensors.items())
        lines.append(f"        .spec_args(&[{items}])")
    if variant.scalar_hints:
        items = ", ".join(f'("{k}", DivHint::from_value({_i32(v, "scalar hint")}))'
                          for k, v in variant.scalar_hints.items())
        lines.append(f"        .scalar_hints(&[{items}])")
    if variant.grid is not None:
        gx, gy, gz = variant.grid
        lines.append(f"        .grid(({gx}u32, {gy}u32, {gz}u32))")
    lines.append(f'        .target("{target}")')
    lines.append("        .compile()")
    lines.append("}")
    return "\n".join(lines)


def render_ir_dump(spec: DumpSpec) -> str:
    fns, table = [], []
    for i, (entry, variant, target) in enumerate(spec.jobs()):
        module = entry.module or spec.module
        fns.append(_job_fn(i, module, entry.name, variant, target))
        stem = job_stem(entry.name, variant.name, target)
        table.append(
            f'    Job {{ entry: "{entry.name}", variant: "{variant.name}", target: "{target}", '
            f'stem: "{stem}", run: job_{i} }},'
        )
    return (_template("ir_dump.rs.tmpl")
            .replace("@JOB_FUNCTIONS@", "\n\n".join(fns))
            .replace("@JOB_TABLE@", "\n".join(table)))


def render_manifest(layout: CrateLayout) -> str:
    extra = ""
    if layout.spec.host:
        extra = f'\n[[bin]]\nname = "{layout.run_bin}"\npath = "src/bin/run.rs"\n'
    return (_template("cargo-manifest.toml")
            .replace("@PACKAGE@", layout.package)
            .replace("@IRDUMP_BIN@", layout.irdump_bin)
            .replace("@EXTRA_BINS@", extra)
            .replace("@CUTILE_VERSION@", CUTILE_VERSION))


def render_lock(layout: CrateLayout) -> str:
    """The pinned Cargo.lock with this crate's package name, in cargo's order (packages sorted by name), so
    `cargo build --locked` accepts it unchanged."""
    text = _template("cargo-lock.toml")
    head, *blocks = text.split("\n[[package]]\n")
    root_marker = f'name = "{PACKAGE_NAME}"\n'
    root = next(b for b in blocks if b.startswith(root_marker))
    others = [b for b in blocks if b is not root]
    root = f'name = "{layout.package}"\n' + root[len(root_marker):]
    names = [b.split('"', 2)[1] for b in others]
    at = next((i for i, n in enumerate(names) if n > layout.package), len(others))
    others.insert(at, root)
    out = "\n[[package]]\n".join([head, *others])
    return out if out.endswith("\n") else out + "\n"


def generated_files(layout: CrateLayout) -> dict[str, str]:
    """Every file tileport owns in the crate, by relative path, with its exact content."""
    files = {
        "Cargo.toml": render_manifest(layout),
        "Cargo.lock": render_lock(layout),
        SPEC_FILENAME: layout.spec.to_json(),
        "src/lib.rs": _template("lib.rs.tmpl").replace("@HOST_MOD@", "pub mod host;" if layout.spec.host else ""),
        "src/bin/ir_dump.rs": render_ir_dump(layout.spec),
    }
    if layout.spec.host:
        files["src/bin/run.rs"] = _template("run.rs.tmpl")
    return files


def _write_if_changed(path: Path, text: str) -> None:
    # Unchanged files keep their mtime, so cargo does not recompile what did not change.
    if path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8") == text:
        return
    if path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_crate(root: str | Path, spec: DumpSpec, kernel_source: str, host_source: str | None = None) -> CrateLayout:
    """Create or update a conversion crate at `root` (generated files + the model-written sources)."""
    root = Path(root)
    if spec.host and host_source is None:
        raise UserError("spec has host = true but no host.rs was given")
    root.mkdir(parents=True, exist_ok=True)
    layout = CrateLayout(root.resolve(), spec)
    for rel, text in generated_files(layout).items():
        _write_if_changed(layout.root / rel, text)
    _write_if_changed(layout.root / KERNEL_FILE, kernel_source)
    host = layout.root / HOST_FILE
    if host_source is not None:
        _write_if_changed(host, host_source)
    elif host.exists() or host.is_symlink():
        host.unlink()
    for rel in OPTIONAL_GENERATED:  # e.g. the runner of a spec that no longer has host = true
        stale = layout.root / rel
        if rel not in generated_files(layout) and (stale.exists() or stale.is_symlink()):
            stale.unlink()
    return layout


def open_crate(root: str | Path) -> CrateLayout:
    """A crate dir tileport generated earlier (it holds tileport-spec.json); bad input if not."""
    root = Path(root)
    spec_path = root / SPEC_FILENAME
    if not spec_path.is_file():
        raise UserError(f"{root} is not a tileport conversion crate (no {SPEC_FILENAME}); "
                        "pass a directory with kernel.rs and spec.json to generate one")
    return CrateLayout(root.resolve(), load_spec(spec_path))


def crate_cache_root() -> Path:
    """Where crates generated from a loose kernel.rs + spec live: outside any clone, reused across runs."""
    return settings.cache_dir() / "crates"


def default_crate_dir(source_dir: str | Path) -> Path:
    source_dir = Path(source_dir).resolve()
    return crate_cache_root() / f"{source_dir.name}-{crate_id(source_dir)}"
