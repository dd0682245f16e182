"""Compiler output as data: one `Diagnostic` list for rustc, the cutile JIT frontend, tileiras and tileport's own
refusals. This list is exactly what a kernel-writer agent is fed, so every entry carries the location in the
model's file, the offending source line and the compiler's own rendering.

Parsers here are pure functions of the tools' output; running the tools is `tileport.validators.rust.build`'s job.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, Field


class DiagnosticSource(str, Enum):
    RUSTC = "rustc"  # cargo build --message-format=json
    CUTILE = "cutile"  # the cutile JIT frontend (KernelCompiler), run on the CPU by the IR dump
    TILEIRAS = "tileiras"  # Tile IR bytecode -> cubin
    POLICY = "policy"  # tileport refused the source before building (untrusted-code policy)
    TILEPORT = "tileport"  # tileport itself: timeouts, missing dependency cache, cargo failures without rustc output


class Diagnostic(BaseModel):
    """One problem, located where the writer must edit."""

    source: DiagnosticSource
    level: str  # error | warning
    code: str | None = None  # E0308 for rustc; JIT, JIT-PANIC, ... for cutile; TP-... for policy/tileport
    message: str
    file: str | None = None  # relative to the crate root when inside it (src/kernel.rs)
    line: int | None = None  # 1-based
    col: int | None = None  # 1-based
    snippet: str | None = None  # the offending source line, verbatim
    rendered: str = ""  # the tool's own text (rustc's rendered diagnostic, the JIT's message, tileiras' stderr)
    notes: list[str] = Field(default_factory=list)
    entry: str | None = None  # cutile/tileiras: which job it came from
    variant: str | None = None
    target: str | None = None

    @property
    def is_error(self) -> bool:
        return self.level == "error"

    def location(self) -> str:
        if not self.file:
            return ""
        where = self.file
        if self.line:
            where += f":{self.line}"
            if self.col:
                where += f":{self.col}"
        return where

    def short(self) -> str:
        """One line: `src/kernel.rs:13:45: error[E0308] (rustc): mismatched types`."""
        code = f"[{self.code}]" if self.code else ""
        loc = self.location()
        job = f" [{self.entry}/{self.variant}/{self.target}]" if self.entry else ""
        return f"{loc + ': ' if loc else ''}{self.level}{code} ({self.source.value}){job}: {self.message}"


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diags)


# ------------------------------------------------------------------------------------------------------- helpers


def relative_file(file: str | None, crate_root: Path | None) -> str | None:
    """Paths inside the crate become crate-relative (`src/kernel.rs`); others stay as given."""
    if not file:
        return None
    if crate_root is None:
        return file
    p = Path(file)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(crate_root.resolve()).as_posix()
        except ValueError:
            return file
    return p.as_posix()


def source_line(crate_root: Path | None, file: str | None, line: int | None) -> str | None:
    """The text of `line` in `file` (crate-relative or absolute), or None."""
    if not file or not line or line < 1:
        return None
    p = Path(file)
    if not p.is_absolute():
        if crate_root is None:
            return None
        p = crate_root / p
    try:
        with open(p, encoding="utf-8", errors="replace") as f:
            for i, text in enumerate(f, 1):
                if i == line:
                    return text.rstrip("\n")
    except OSError:
        return None
    return None


# --------------------------------------------------------------------------------------------------------- rustc

_SKIP_RUSTC = re.compile(r"^(aborting due to|For more information about|Some errors have detailed explanations|"
                         r"\d+ warnings? emitted|warning: build failed)")


def _user_span(span: dict[str, Any]) -> dict[str, Any]:
    """Follow macro expansions back to the span the user wrote (a relative path inside the crate)."""
    seen = 0
    while span.get("expansion") and (span["file_name"].startswith("<") or Path(span["file_name"]).is_absolute()):
        span = span["expansion"]["span"]
        seen += 1
        if seen > 32:
            break
    return span


def _span_label(span: dict[str, Any]) -> str:
    return f"{span['file_name']}:{span['line_start']}:{span['column_start']}"


def rustc_diagnostic(message: dict[str, Any], crate_root: Path | None = None) -> Diagnostic | None:
    """One `compiler-message` payload (the `message` object) as a Diagnostic; None for summaries."""
    level = message.get("level", "")
    if level not in ("error", "warning") or _SKIP_RUSTC.match(message.get("message", "")):
        return None
    spans = message.get("spans") or []
    primary = next((s for s in spans if s.get("is_primary")), spans[0] if spans else None)
    file = line = col = snippet = None
    if primary is not None:
        span = _user_span(primary)
        file = relative_file(span["file_name"], crate_root)
        line, col = span.get("line_start"), span.get("column_start")
        text = span.get("text") or []
        snippet = text[0]["text"] if text else source_line(crate_root, file, line)
    notes = []
    for child in message.get("children") or []:
        note = f"{child.get('level', 'note')}: {child.get('message', '')}"
        child_spans = child.get("spans") or []
        for s in child_spans:
            if s.get("suggested_replacement") is not None:
                note += f" [{_span_label(s)}: replace with `{s['suggested_replacement']}`]"
                break
        else:
            if child_spans:
                note += f" [{_span_label(child_spans[0])}]"
        notes.append(note)
    for s in spans:
        if s is not primary and s.get("label"):
            notes.append(f"label at {_span_label(_user_span(s))}: {s['label']}")
    code = (message.get("code") or {}).get("code")
    return Diagnostic(
        source=DiagnosticSource.RUSTC, level=level, code=code, message=message.get("message", ""),
        file=file, line=line, col=col, snippet=snippet, rendered=message.get("rendered") or "", notes=notes,
    )


def parse_cargo_json(stdout: str, crate_root: Path | None = None) -> tuple[list[Diagnostic], list[dict[str, Any]]]:
    """Diagnostics and `compiler-artifact` records from `cargo build --message-format=json` stdout."""
    diags: list[Diagnostic] = []
    artifacts: list[dict[str, Any]] = []
    seen: set[tuple] = set()
    for raw in stdout.splitlines():
        if not raw.startswith("{"):
            continue
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError:
            continue
        reason = msg.get("reason")
        if reason == "compiler-artifact":
            artifacts.append(msg)
        elif reason == "compiler-message":
            d = rustc_diagnostic(msg.get("message") or {}, crate_root)
            if d is None:
                continue
            key = (d.level, d.code, d.message, d.file, d.line, d.col)
            if key not in seen:  # lib and bin targets can report the same error twice
                seen.add(key)
                diags.append(d)
    return diags, artifacts


def cargo_failure(stderr: str, returncode: int) -> Diagnostic:
    """cargo failed without a rustc diagnostic (build script, resolution, offline cache miss): keep its words."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    first = next((l for l in lines if l.startswith("error")), lines[-1] if lines else f"cargo exited {returncode}")
    message = first.removeprefix("error: ").strip()
    code = "TP-CARGO"
    notes = []
    if "--offline" in stderr or "offline" in message or "failed to download" in stderr or "no matching package" in stderr:
        code = "TP-DEPS-MISSING"
        notes.append("help: the crates are not in the local cargo registry; run once with network "
                     "(tileport build-rust --fetch) or `cargo fetch` in a conversion crate")
    tail = "\n".join(lines[-40:])
    return Diagnostic(source=DiagnosticSource.TILEPORT, level="error", code=code, message=message,
                      rendered=tail, notes=notes)


# -------------------------------------------------------------------------------------------------------- cutile

# `error: <message>\n  --> file:L:C` (what JITError::Located displays, with or without the `error:` prefix).
_ARROW = re.compile(r"-->\s*(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?P<col>\d+)")
_JOB_PREFIX = "TILEPORT-JOB "


def parse_cutile_text(text: str, crate_root: Path | None = None, **job: str | None) -> list[Diagnostic]:
    """JIT-frontend errors printed as text (`error: msg` / `  --> file:L:C`, column 0-based as cutile counts)."""
    diags = []
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        m = _ARROW.search(raw)
        if not m:
            continue
        msg = ""
        for back in range(i - 1, max(-1, i - 4), -1):
            candidate = lines[back].strip()
            if candidate:
                msg = candidate.removeprefix("error:").strip()
                break
        file = relative_file(m["file"], crate_root)
        line, col = int(m["line"]), int(m["col"]) + 1
        diags.append(Diagnostic(
            source=DiagnosticSource.CUTILE, level="error", code="JIT", message=msg, file=file, line=line, col=col,
            snippet=source_line(crate_root, file, line), rendered="\n".join(lines[max(0, i - 1): i + 1]), **job,
        ))
    return diags


_KIND_CODES = {"located": "JIT", "generic": "JIT", "anyhow": "JIT", "panic": "JIT-PANIC", "io": "JIT-IO"}


def cutile_job_diagnostic(job: dict[str, Any], crate_root: Path | None = None) -> Diagnostic:
    """A failed job line from the generated IR-dump program."""
    err = job.get("error") or {}
    kind = err.get("kind", "generic")
    code = "JIT-BYTECODE" if kind.startswith("bytecode-") else _KIND_CODES.get(kind, "JIT")
    message = err.get("message") or "unknown JIT failure"
    rendered = err.get("rendered") or message
    file, line, col = err.get("file") or None, err.get("line") or None, err.get("column")
    if kind == "panic":
        col = col or None  # Rust panic locations are 1-based already
    elif line:
        col = (col or 0) + 1  # cutile's SourceLocation column is 0-based
    else:
        col = None
    if not file:  # a message that embeds its own `--> file:L:C`
        m = _ARROW.search(rendered) or _ARROW.search(message)
        if m:
            file, line, col = m["file"], int(m["line"]), int(m["col"]) + 1
    file = relative_file(file, crate_root)
    message = message.strip().removeprefix("error: ")
    first, *rest = message.splitlines() or [message]
    in_crate = bool(file) and not Path(file).is_absolute()
    return Diagnostic(
        source=DiagnosticSource.CUTILE, level="error", code=code, message=first, file=file, line=line, col=col,
        snippet=source_line(crate_root, file, line) if in_crate else None, rendered=rendered,
        notes=[l for l in rest if l.strip()],
        entry=job.get("entry"), variant=job.get("variant"), target=job.get("target"),
    )


def parse_ir_dump_output(stdout: str) -> list[dict[str, Any]]:
    """The per-job JSON objects the IR-dump program prints (other lines, e.g. print_ir output, are skipped)."""
    jobs = []
    for raw in stdout.splitlines():
        if raw.startswith(_JOB_PREFIX):
            try:
                jobs.append(json.loads(raw[len(_JOB_PREFIX):]))
            except json.JSONDecodeError:
                continue
    return jobs


# ------------------------------------------------------------------------------------------------------ tileiras

# MLIR-style `file:L:C: error: msg`, also with `loc("file":L:C)`; and bare `error: msg`.
_TI_LOCATED = re.compile(
    r'^(?:loc\()?"?(?P<file>[^\s:"][^:"]*)"?:(?P<line>\d+):(?P<col>\d+)\)?:\s*(?P<level>error|warning):\s*(?P<msg>.*)$')
_TI_BARE = re.compile(r"^(?:tileiras:\s*)?(?P<level>error|warning)?:?\s*(?P<msg>.*)$")


_TI_HINTS = (
    ("power of two", "help: Tile IR tile dimensions must be powers of two; check the tile-size generics of this "
                     "variant and the shapes the kernel builds"),
    ("bytecode version", "help: the bytecode is newer than this tileiras accepts; set the spec's bytecode_version"),
)


def live_line(raw: str) -> str | None:
    """A line of a build's output as a person reads it (the dashboard's live view): cargo's JSON messages
    (`--message-format=json`) become rustc's rendered diagnostic or `cargo: build succeeded/failed`, or nothing (an
    up-to-date crate, a build script run: cargo's own output shows neither); the IR dump's job records one short
    line each; any other line (cargo's `Compiling ...`, a tool's text) is returned as it is."""
    if raw.startswith('{"reason":'):
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        reason = msg.get("reason")
        if reason == "compiler-message":
            return ((msg.get("message") or {}).get("rendered") or "").rstrip("\n") or None
        if reason == "build-finished":
            return "cargo: build " + ("succeeded" if msg.get("success") else "failed")
        return None
    if raw.startswith(_JOB_PREFIX):
        try:
            job = json.loads(raw[len(_JOB_PREFIX):])
        except json.JSONDecodeError:
            return raw
        return (f"IR dump {job.get('entry')} {job.get('variant')} {job.get('target')}: "
                f"{'ok' if job.get('ok') else 'FAILED'} in {float(job.get('seconds') or 0):.1f} s")
    return raw

def parse_tileiras(stderr: str, returncode: int, crate_root: Path | None = None, *, tool: str = "tileiras",
                   **job: str | None) -> list[Diagnostic]:
    """tileiras / tileirdisasm failures. A located error (`file:L:C: error: msg`) is one Diagnostic each; the
    unlocated cascade (`error at offset N: ...` then `failed to read ...`) becomes one Diagnostic whose message is
    the first (root-cause) line and whose notes are the rest."""
    code = f"{tool.upper()}-{returncode}"
    lines = [l.rstrip() for l in stderr.splitlines() if l.strip()]
    located: list[Diagnostic] = []
    bare: list[str] = []
    for raw in lines:
        stripped = raw.strip()
        m = _TI_LOCATED.match(stripped)
        if m:
            file = relative_file(m["file"], crate_root)
            line = int(m["line"])
            located.append(Diagnostic(
                source=DiagnosticSource.TILEIRAS, level=m["level"], code=code, message=m["msg"], file=file,
                line=line, col=int(m["col"]), snippet=source_line(crate_root, file, line), rendered=stripped, **job))
            continue
        idx = stripped.find("error:")
        if idx >= 0:
            bare.append(stripped[idx + len("error:"):].strip())
        elif stripped.startswith("error "):
            bare.append(stripped[len("error "):].strip())
    rendered = "\n".join(lines)[-4000:]
    diags = list(located)
    if bare and not located:
        diags.append(Diagnostic(source=DiagnosticSource.TILEIRAS, level="error", code=code, message=bare[0],
                                rendered=rendered, notes=bare[1:], **job))
    elif bare:
        diags[0] = diags[0].model_copy(update={"notes": diags[0].notes + bare})
    if returncode != 0 and not any(d.is_error for d in diags):
        diags.append(Diagnostic(
            source=DiagnosticSource.TILEIRAS, level="error", code=code,
            message=(lines[-1].strip() if lines else f"{tool} exited with status {returncode}"),
            rendered=rendered, **job))
    for d in diags:
        for needle, hint in _TI_HINTS:
            if needle in d.message and hint not in d.notes:
                d.notes.append(hint)
    return diags


def render_text(diags: Iterable[Diagnostic], verbose: bool = True) -> str:
    """Human-readable listing: the compiler's rendering when it has one, else a compact block."""
    out = []
    for d in diags:
        if verbose and d.source == DiagnosticSource.RUSTC and d.rendered:
            out.append(d.rendered.rstrip())
            continue
        block = [d.short()]
        if d.snippet is not None and d.line:
            block.append(f"  {d.line:>4} | {d.snippet}")
            if d.col:
                block.append(f"       | {' ' * (d.col - 1)}^")
        if verbose:
            block.extend(f"  = {n}" for n in d.notes)
        out.append("\n".join(block))
    return "\n\n".join(out)
