"""A hostile bad-input corpus over every CLI entry, generated from small tables (issue #8).

Each `Case` sets up files in its own scratch directory, runs the real `tileport` CLI on them and is judged by
what a user would notice:

* **traceback**: "Traceback (most recent call last)" on stderr (must be one line: `tileport: error: ...`);
* **hang**: still running after the case's limit (killed, with its whole process group);
* **lost**: a file or directory the case made before the run (the user's) is missing or changed afterwards;
* **wrong**: the exit status is not an allowed one (e.g. bad input accepted with 0, or an ir-diff PASS that
  should fail), or an expected phrase (the limit's name) is missing from the error.

Runner: each case runs `tileport.cli.main(argv)` in a process forked from one that imported tileport already
(a fresh interpreter per case costs ~1.5 s here; a fork costs milliseconds), with the case's cwd, env and
stdio — the same code path `python -m tileport` runs. `python tests/hostile/corpus.py` prints the figures.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import select
import signal
import socket
import socketserver
import sqlite3
import stat
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
IR_TEXT = (HERE / "vector_add.tileir").read_text()

# A valid op with a real kernel: what a user's op looks like (exports in the analysis child).
GOOD_OP = (REPO / "examples" / "vector_add.py").read_text()
# A syntactically fine module without a kernel: analysis refuses it after reading the declaration.
NO_KERNEL_OP = "import cuda.tile as ct\n\nTILEPORT = {decl}\n\n\ndef f():\n    return 1\n"

BIG = 60 << 20  # bytes of the "huge" inputs: above every size limit tileport should have
DEEP = 200_000  # nesting depth of the "deep" inputs

USER_NOTE = b"the user's notes: tileport must never lose these\n"


# --------------------------------------------------------------------------------------------------
# cases
@dataclass
class Case:
    name: str
    argv: list[str]  # tileport arguments; "{root}" is the case's scratch dir
    setup: Callable[[Path], None] = lambda root: None
    expect: tuple[int, ...] = (2,)  # allowed exit statuses
    expect_in_err: str | None = None  # a phrase the stderr must contain (case-insensitive)
    env: dict[str, str] = field(default_factory=dict)
    limit_s: float = 20.0
    group: str = ""
    may_change: tuple[str, ...] = ()  # paths (relative to work/) the run may legitimately rewrite


@dataclass
class Outcome:
    case: Case
    rc: int | None
    seconds: float
    stdout: str
    stderr: str
    traceback: bool
    hang: bool
    lost: list[str]
    wrong: str | None

    @property
    def ok(self) -> bool:
        return not (self.traceback or self.hang or self.lost or self.wrong)


def _w(rel: str, data: bytes | str) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)
    return f


def _all(*fs: Callable[[Path], None]) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        for g in fs:
            g(root)
    return f


def _big_file(rel: str, line: bytes) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as fh:
            chunk = line * max(1, (1 << 20) // len(line))
            n = 0
            while n < BIG:
                fh.write(chunk)
                n += len(chunk)
    return f


# File kinds: (name, maker(root, rel, fmt)) where fmt picks content for the "valid-looking" kinds.
VALID = {
    "py": GOOD_OP,
    "ir": IR_TEXT,
    "toml": 'targets = ["sm_90"]\n',
    "json": '{"a": 1}\n',
    "sqlite": None,  # made by sqlite3 itself
}
DEEP_TEXT = {
    "py": "x = " + "(" * DEEP + "1" + ")" * DEEP + "\n",
    "ir": "entry @k() {\n" + "{" * DEEP + "\n",
    "toml": "a = " + "[" * DEEP + "]" * DEEP + "\n",
    "json": "[" * DEEP + "]" * DEEP,
    "sqlite": "[" * DEEP,
}
BIG_LINE = {
    "py": b"x = 1  # padding padding padding padding padding padding padding padding\n",
    "ir": b"  %0 = make_token : token\n",
    "toml": b"# padding padding padding padding padding padding padding padding\n",
    "json": b" " * 63 + b"\n",
    "sqlite": b"\0" * 64,
}


def _kind_makers() -> dict[str, Callable[[Path, str, str], None]]:
    def missing(root: Path, rel: str, fmt: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)

    def directory(root: Path, rel: str, fmt: str) -> None:
        (root / rel).mkdir(parents=True)
        (root / rel / "inside.txt").write_bytes(USER_NOTE)

    def fifo(root: Path, rel: str, fmt: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / rel)

    def dev_zero(root: Path, rel: str, fmt: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink("/dev/zero", root / rel)

    def dev_urandom(root: Path, rel: str, fmt: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink("/dev/urandom", root / rel)

    def proc_file(root: Path, rel: str, fmt: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink("/proc/self/mem", root / rel)

    def empty(root: Path, rel: str, fmt: str) -> None:
        _w(rel, b"")(root)

    def binary(root: Path, rel: str, fmt: str) -> None:
        _w(rel, bytes(range(256)) * 64)(root)

    def non_utf8(root: Path, rel: str, fmt: str) -> None:
        valid = VALID[fmt] or "x"
        _w(rel, b"\xff\xfe# caf\xe9\n" + valid.encode())(root)

    def bom(root: Path, rel: str, fmt: str) -> None:
        if fmt == "sqlite":
            _w(rel, b"\xef\xbb\xbfSQLite format 3\0")(root)
        else:
            _w(rel, b"\xef\xbb\xbf" + VALID[fmt].encode())(root)

    def nul_inside(root: Path, rel: str, fmt: str) -> None:
        valid = VALID[fmt] or "x"
        _w(rel, valid[: len(valid) // 2].encode() + b"\0" + valid[len(valid) // 2:].encode())(root)

    def truncated(root: Path, rel: str, fmt: str) -> None:
        valid = VALID[fmt] or "SQLite format 3\0"
        _w(rel, valid[: max(1, len(valid) // 3)].encode())(root)

    def huge(root: Path, rel: str, fmt: str) -> None:
        _big_file(rel, BIG_LINE[fmt])(root)

    def long_line(root: Path, rel: str, fmt: str) -> None:
        _w(rel, b"#" + b"x" * (20 << 20) + b"\n")(root)

    def deep(root: Path, rel: str, fmt: str) -> None:
        _w(rel, DEEP_TEXT[fmt])(root)

    def symlink_loop(root: Path, rel: str, fmt: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(rel.rsplit("/", 1)[-1], root / rel)

    def under_a_file(root: Path, rel: str, fmt: str) -> None:
        # the path's parent is a regular file: rel is "notes.txt/<name>" once substituted
        pass

    def unix_socket(root: Path, rel: str, fmt: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        s = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir((root / rel).parent)  # bind by a short relative name: AF_UNIX paths are limited to 107 bytes
        try:
            s.bind((root / rel).name)
        finally:
            os.chdir(here)
            s.close()

    def garbage_text(root: Path, rel: str, fmt: str) -> None:
        _w(rel, "}{ ][ ) ( \"unterminated '\n" * 50)(root)

    return dict(missing=missing, directory=directory, fifo=fifo, dev_zero=dev_zero, dev_urandom=dev_urandom,
                proc_file=proc_file, empty=empty, binary=binary, non_utf8=non_utf8, bom=bom,
                nul_inside=nul_inside, truncated=truncated, huge=huge, long_line=long_line, deep=deep,
                symlink_loop=symlink_loop, under_a_file=under_a_file, unix_socket=unix_socket,
                garbage_text=garbage_text)


KINDS = _kind_makers()
# Kinds whose content is valid: the entry may accept them (0 or its normal failure status).
ACCEPTABLE_KINDS = {"bom"}


def _ok_store(root: Path) -> None:
    """A real, small tileport store, so `status 1` has something to read."""
    from tileport.records import Stage, StageResult, utcnow
    from tileport.store import Store
    s = Store(root / ".tileport" / "tileport.db")
    cid = s.add_conversion(str(root / "op.py"))
    s.record_stage(cid, StageResult(stage=Stage.ANALYZE, attempt=1, verdict="PASS", started_at=utcnow(),
                                    finished_at=utcnow(), summary="ok"))
    s.close()


def file_entry_cases() -> list[Case]:
    """Every CLI entry that reads a file x every hostile kind of file."""
    ir_ok = _w("ok.tileir", IR_TEXT)
    bad_kernel = _w("port/kernel.rs", "#[cutile::module]\npub mod m { fn f() { include_str!(\"/etc/passwd\"); } }\n")
    entries: list[tuple[str, str, str, Callable[[str], list[str]], Callable[[Path], None], tuple[int, ...]]] = [
        # (entry, file name, format, argv(path), extra setup, statuses allowed for a valid file)
        ("analyze", "op.py", "py", lambda p: ["analyze", p, "--no-cubin", "--target", "sm_90", "--out", "res"],
         lambda r: None, (0,)),
        ("ir-diff-ref", "ref.tileir", "ir", lambda p: ["ir-diff", p, "ok.tileir"], ir_ok, (0, 1)),
        ("ir-diff-gen", "gen.tileir", "ir", lambda p: ["ir-diff", "ok.tileir", p], ir_ok, (0, 1)),
        ("ir-diff-bc", "ref.tileirbc", "ir", lambda p: ["ir-diff", p, "ok.tileir"], ir_ok, (0, 1, 2)),
        ("config", "my.toml", "toml", lambda p: ["--config", p, "status"], lambda r: None, (0,)),
        ("store", "db.sqlite", "sqlite",
         lambda p: ["--config", "cfg.toml", "status"], lambda r: None, (0, 2)),
        ("store-detail", "db.sqlite", "sqlite",
         lambda p: ["--config", "cfg.toml", "status", "1", "--json"], lambda r: None, (0, 2)),
        ("build-rust-spec", "port/spec.json", "json",
         lambda p: ["build-rust", "port", "--spec", p, "--timeout", "5", "--no-cubin"], bad_kernel, (1, 2)),
        ("build-rust-ref", "ref/analysis.json", "json",
         lambda p: ["build-rust", "port", "--reference", "ref", "--timeout", "5"], bad_kernel, (1, 2)),
        ("model-serve", "model/config.json", "json",
         lambda p: ["model", "serve", "--model", "model", "--python", "/nonexistent/python", "--port", "1"],
         _w("model/weights.safetensors", b"\0" * 16), (2,)),
    ]
    cases = []
    for entry, rel, fmt, argv, extra, valid_ok in entries:
        for kind, make in KINDS.items():
            if kind == "under_a_file":
                rel_k = "notes.txt/" + rel.rsplit("/", 1)[-1]
                setup = _all(_w("notes.txt", USER_NOTE), extra)
            else:
                rel_k = rel

                def setup(root: Path, make=make, rel_k=rel_k, fmt=fmt, extra=extra) -> None:
                    extra(root)
                    make(root, rel_k, fmt)
            if entry.startswith("store"):
                def setup(root: Path, inner=setup, rel_k=rel_k) -> None:  # noqa: F811
                    inner(root)
                    (root / "cfg.toml").write_text(f'store = "{rel_k}"\n')
            args = argv(rel_k)
            # An empty TOML is a valid config; a 0-byte file is, to SQLite, an empty database it may initialise.
            acceptable = ACCEPTABLE_KINDS | ({"empty"} if entry in ("config", "store", "store-detail") else set())
            may_change = (rel_k,) if entry.startswith("store") and kind == "empty" else ()
            cases.append(Case(f"{entry}/{kind}", args, setup, expect=valid_ok if kind in acceptable else (
                (0, 2) if entry.startswith("store") and kind in ("missing",) else (1, 2)
                if entry.startswith(("build-rust", "ir-diff")) and kind in ("missing", "empty", "truncated")
                and entry != "build-rust-ref" else (2,)), group="files", may_change=may_change))
    return cases


# Config keys x hostile values, through `status` (loads the config) and `analyze` (uses it).
CONFIG_KEYS = [
    # (toml table, key, predicate: is this value legitimate?)
    ("", "targets", lambda v: isinstance(v, list) and v and all(t in ("sm_90", "sm_100") for t in v)),
    ("", "store", lambda v: isinstance(v, str) and 0 < len(v) < 1024 and "\0" not in v),
    ("caps", "A", lambda v: type(v) is int and 1 <= v <= 10),
    ("caps", "E", lambda v: type(v) is int and 1 <= v <= 10),
    ("perf", "geomean_max", lambda v: type(v) in (int, float) and 0 < v < 1e6 and v == v),
    ("perf", "warmup", lambda v: type(v) is int and 0 <= v <= 1_000_000),
    ("perf", "repetitions", lambda v: type(v) is int and 1 <= v <= 1_000_000),
    ("perf", "flush_l2", lambda v: type(v) is bool),
    ("tolerances.float16", "atol", lambda v: type(v) in (int, float) and 0 <= v < 1e6 and v == v),
    ("tolerances.mytype", "rtol", lambda v: False),  # unknown dtype name: refused
    ("model", "base_url", lambda v: False),  # every value in the table is an invalid URL for this key
    ("model", "timeout_s", lambda v: type(v) in (int, float) and 0 < v <= 86400 and v == v),
    ("model", "max_retries", lambda v: type(v) is int and 0 <= v <= 10),
    ("toolchain", "bytecode_version", lambda v: False),
]
# (toml literal, python value)
CONFIG_VALUES = [
    ("-1", -1), ("0", 0), ("1e999", float("inf")), ("-inf", float("-inf")), ("nan", float("nan")),
    ("99999999999999999999", 99999999999999999999), ("9223372036854775807", 9223372036854775807),
    ('"x"', "x"), ("[]", []), ("{}", {}), ("true", True), ('"' + "x" * 100_000 + '"', "x" * 100_000),
    ('"\\u0000"', "\0"), ('"http://[::1"', "http://[::1"),
]


def config_cases() -> list[Case]:
    cases = []
    for table, key, legit in CONFIG_KEYS:
        for lit, val in CONFIG_VALUES:
            body = (f"[{table}]\n" if table else "") + f"{key} = {lit}\n"
            if table.startswith("tolerances"):
                other = "rtol" if key == "atol" else "atol"
                body += f"{other} = 0.01\n"
            ok = bool(legit(val))
            cases.append(Case(f"config/{table or 'top'}.{key}={lit[:24]}", ["status"], _w("tileport.toml", body),
                              expect=(0,) if ok else (2,), expect_in_err=None if ok else key, group="config"))
    return cases


def _decl_op(decl: str) -> Callable[[Path], None]:
    return _w("op.py", NO_KERNEL_OP.format(decl=decl))


DECLARATIONS = [
    # (name, TILEPORT literal, phrase the error must name)
    ("shape-negative", '{"shapes": [{"n": -4096}]}', "shapes"),
    ("shape-zero", '{"shapes": [{"n": 0}]}', "shapes"),
    ("shape-pow-overflow", '{"shapes": [{"n": (10**250)**20}]}', "shapes"),
    ("shape-1e999", '{"shapes": [{"n": 1e999}]}', "shapes"),
    ("shape-float", '{"shapes": [{"n": 3.5}]}', "shapes"),
    ("shape-huge-int", '{"shapes": [{"n": 10**40}]}', "shapes"),
    ("shape-shift-overflow", '{"shapes": [{"n": 1 << 10**9}]}', "shapes"),
    ("shape-string", '{"shapes": [{"n": "big"}]}', "shapes"),
    ("shapes-not-list", '{"shapes": 4}', "shapes"),
    ("atol-1e999", '{"tolerances": {"float16": {"atol": 1e999, "rtol": 1e-2}}}', "atol"),
    ("atol-negative", '{"tolerances": {"float16": {"atol": -1e-2, "rtol": 1e-2}}}', "atol"),
    ("rtol-nan", '{"tolerances": {"float16": {"atol": 1e-2, "rtol": 1e999 - 1e999}}}', "rtol"),
    ("atol-pow", '{"tolerances": {"float16": {"atol": (10**250)**20, "rtol": 1e-2}}}', "atol"),
    ("dtype-unknown", '{"dtypes": ["float17"]}', "dtype"),
    ("dtype-int", '{"dtypes": [10**100]}', "dtype"),
    ("constants-huge", '{"constants": {"TILE": [2**10**7]}}', "constants"),
    ("constants-pow", '{"constants": {"TILE": [(10**250)**20]}}', "constants"),
    ("ndim-huge", '{"params": {"x": {"ndim": 10**100}}}', "ndim"),
    ("deep-dict", "{" + '"shapes": ' + "[" * 5000 + "]" * 5000 + "}", "TILEPORT"),
    ("div-zero", '{"shapes": [{"n": 1 // 0}]}', "shapes"),
    ("mult-string-bomb", '{"dtypes": ["x" * 10**12]}', "dtypes"),
    ("unknown-key", '{"shape": [{"n": 4}]}', "shape"),
]


def declaration_cases() -> list[Case]:
    return [Case(f"declaration/{n}", ["analyze", "op.py", "--no-cubin", "--target", "sm_90"], _decl_op(d),
                 expect=(2,), expect_in_err=phrase, group="declaration") for n, d, phrase in DECLARATIONS]


def source_cases() -> list[Case]:
    """Whole-module inputs: BOM (accepted, as Python does), import-time hangs (bounded, named), odd names."""
    analyze = ["analyze", "op.py", "--no-cubin", "--target", "sm_90", "--out", "res"]
    limit_env = {"TILEPORT_IMPORT_TIMEOUT_S": "4"}
    return [
        Case("source/bom-module", analyze, _w("op.py", b"\xef\xbb\xbf" + GOOD_OP.encode()), expect=(0,),
             limit_s=120, group="source"),
        Case("source/import-sleeps-forever", analyze, _w("op.py", "import time\ntime.sleep(10**6)\n" + GOOD_OP),
             expect=(2,), expect_in_err="TILEPORT_IMPORT_TIMEOUT_S", env=limit_env, limit_s=60, group="source"),
        Case("source/import-spins-forever", analyze, _w("op.py", "while True:\n    pass\n" + GOOD_OP),
             expect=(2,), expect_in_err="TILEPORT_IMPORT_TIMEOUT_S", env=limit_env, limit_s=60, group="source"),
        Case("source/import-reads-stdin", analyze, _w("op.py", "import sys\nsys.stdin.read()\n" + GOOD_OP),
             expect=(0, 2), env=limit_env, limit_s=60, group="source"),
        Case("source/deep-source", analyze, _w("op.py", "x = " + "-" * DEEP + "1\n@ct.kernel\ndef k(): pass\n"),
             group="source"),
        Case("source/many-kernels-no-decl", analyze,
             _w("op.py", "import cuda.tile as ct\n" + "".join(f"@ct.kernel\ndef k{i}(x):\n    pass\n"
                                                              for i in range(20000))),
             # bounded by the import limit, or (when the import is quick) by the export limit: 20,000 kernels to plan
             expect=(0, 2), env={**limit_env, "TILEPORT_EXPORT_TIMEOUT_S": "20"}, limit_s=180, group="source"),
    ]


def int_arg_cases() -> list[Case]:
    """Out-of-range integers and numbers in every numeric argument."""
    values = ["99999999999999999999", "-1", "0", "9223372036854775808", "1e999", "nan", "abc", "0x10"]
    cases = []
    ir = _w("ok.tileir", IR_TEXT)
    no_vllm = {"TILEPORT_VLLM_PYTHON": "/nonexistent/python"}
    model_dir = _all(_w("model/config.json", "{}"), _w("model/w.safetensors", b"\0" * 16))
    for v in values:
        cases.append(Case(f"int/status-id={v}", ["status", v], _ok_store, expect=(2,), group="ints"))
        cases.append(Case(f"int/analyze-jobs={v}", ["analyze", "op.py", "--jobs", v, "--no-cubin"],
                          _w("op.py", GOOD_OP), expect=(2,), group="ints"))
        cases.append(Case(f"int/ir-diff-width={v}", ["ir-diff", "ok.tileir", "ok.tileir", "--side-by-side",
                                                      "--width", v], ir, expect=(2,), group="ints"))
        for flag in ("--port", "--gpus", "--max-model-len", "--startup-timeout"):
            cases.append(Case(f"int/model-serve{flag}={v}", ["model", "serve", "--model", "model", flag, v,
                                                             "--python", "/nonexistent/python"],
                              model_dir, expect=(2,), env=no_vllm, group="ints"))
    return cases


def url_cases() -> list[Case]:
    urls = ["http://", "ftp://127.0.0.1/v1", "http://[::1", "http://127.0.0.1:99999/v1", "http://a b/v1", "",
            "http://" + "a" * 10000 + "/v1", "http://127.0.0.1:0/v1", "http://127.0.0.1:-5/v1", "not a url",
            "http://user:pw@127.0.0.1:1/v1", "http://\x00/v1"]
    cases = []
    for u in urls:
        cases.append(Case(f"url/status-url={u[:30]!r}", ["model", "status", "--url", u], expect=(1, 2), group="urls"))
        toml_u = json.dumps(u)
        cases.append(Case(f"url/config-base_url={u[:30]!r}", ["model", "status"],
                          _w("tileport.toml", f"[model]\nbase_url = {toml_u}\n"), expect=(1, 2), group="urls"))
    return cases


# --------------------------------------------------------------------------------------------------
# hostile model servers (run in the corpus process; a case's fork talks to them over TCP)
class _Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    behaviour = "ok"

    def log_message(self, *a) -> None:  # quiet
        pass

    def _send(self, code: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        b = self.server.behaviour  # type: ignore[attr-defined]
        models = {"object": "list", "data": [{"id": "tileport-coder", "max_model_len": 4096}]}
        try:
            if b == "redirect-health" and self.path.endswith("/health"):
                return self._send(302, b"", {"Location": "http://127.0.0.1:1/health"})
            if b == "redirect-all":
                return self._send(302, b"", {"Location": self.path})
            if b == "drip":
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(100000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(2)
                return
            if b == "silent":
                time.sleep(600)
                return
            if self.path.endswith("/health"):
                if b == "health-500":
                    return self._send(500, b"no")
                return self._send(200, b"")
            if b == "models-deep":
                return self._send(200, b"[" * DEEP + b"]" * DEEP)
            if b == "models-huge":
                self.send_response(200)
                self.send_header("Content-Length", str(BIG))
                self.end_headers()
                chunk = b" " * (1 << 20)
                for _ in range(BIG >> 20):
                    self.wfile.write(chunk)
                return
            if b == "models-not-json":
                return self._send(200, b"<html>hello</html>")
            if b == "max-len-1e999":
                return self._send(200, b'{"data": [{"id": "tileport-coder", "max_model_len": 1e999}]}')
            if b == "max-len-negative":
                return self._send(200, b'{"data": [{"id": "tileport-coder", "max_model_len": -5}]}')
            if b == "max-len-huge":
                return self._send(200, b'{"data": [{"id": "tileport-coder", "max_model_len": ' + b"9" * 5000 + b"}]}")
            if b == "models-wrong-types":
                return self._send(200, b'{"data": {"id": 5}}')
            if b == "models-ids-not-str":
                return self._send(200, b'{"data": [{"id": [1, 2]}, 7, null]}')
            if b == "reset":
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            return self._send(200, json.dumps(models).encode())
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    do_POST = do_GET


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


SERVER_BEHAVIOURS = {
    # behaviour: statuses allowed for `model status` (0 only for a healthy server serving the configured model)
    "redirect-health": (1,), "redirect-all": (1,), "drip": (1,), "silent": (1,), "health-500": (1,),
    "models-deep": (1,), "models-huge": (1,), "models-not-json": (1,), "max-len-1e999": (1,),
    "max-len-negative": (1,), "max-len-huge": (1,), "models-wrong-types": (1,), "models-ids-not-str": (1,),
    "reset": (1,),
}


def start_server(behaviour: str) -> tuple[_Server, str]:
    srv = _Server(("127.0.0.1", 0), _Hostile)
    srv.behaviour = behaviour  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"


def server_cases() -> list[Case]:
    cases = []
    for b, ok in SERVER_BEHAVIOURS.items():
        for fmt in ("text", "json"):
            argv = ["model", "status", "--url", "{url:" + b + "}"] + (["--json"] if fmt == "json" else [])
            cases.append(Case(f"server/{b}/{fmt}", argv, expect=ok, limit_s=30, group="servers"))
    return cases


# --------------------------------------------------------------------------------------------------
# data loss: output paths tileport did not create
def _user_tree(root: Path) -> None:
    (root / "op.py").write_text(GOOD_OP)
    (root / "notes.txt").write_bytes(USER_NOTE)
    (root / "mine").mkdir()
    (root / "mine" / "thesis.tex").write_bytes(USER_NOTE)
    (root / "vector_add").mkdir()
    (root / "vector_add" / "keep.txt").write_bytes(USER_NOTE)
    os.mkfifo(root / "pipe")
    os.symlink("mine", root / "link-to-mine")


def out_path_cases() -> list[Case]:
    a = ["analyze", "op.py", "--no-cubin", "--target", "sm_90"]
    outs = [".", "..", "notes.txt", "mine", "link-to-mine", "op.py", "pipe", "/proc/self/tileport-out",
            "/dev/null", "mine/..", "./", "/", "notes.txt/sub", "", "/proc/1/cwd"]
    cases = [Case(f"out/--out {o!r}", a + ["--out", o], _user_tree, expect=(0, 2), limit_s=120, group="out")
             for o in outs]
    cases.append(Case("out/op-named-..py", ["analyze", "..py", "--no-cubin", "--target", "sm_90"],
                      _all(_user_tree, _w("..py", GOOD_OP), _w("out/other/analysis.json", "{}")), expect=(0, 2),
                      limit_s=120, group="out"))
    cases.append(Case("out/op-named-.py", ["analyze", ".py", "--no-cubin", "--target", "sm_90"],
                      _all(_user_tree, _w(".py", GOOD_OP), _w("out/keep.txt", USER_NOTE)), expect=(0, 2),
                      limit_s=120, group="out"))
    cases.append(Case("out/corpus --out . over user dir vector_add", ["analyze", "--no-cubin", "--target", "sm_90",
                                                                      "--out", "."],
                      _user_tree, expect=(0, 2), limit_s=400, group="out"))
    cases.append(Case("out/build-rust --out notes.txt", ["build-rust", "port", "--out", "notes.txt", "--timeout", "5"],
                      _all(_user_tree, _w("port/kernel.rs", "pub mod m {}\n"),
                           _w("port/spec.json", '{"module": "m", "entries": []}')), expect=(1, 2), group="out"))
    cases.append(Case("out/build-rust --artifacts mine", ["build-rust", "port", "--artifacts", "mine",
                                                          "--timeout", "5"],
                      _all(_user_tree, _w("port/kernel.rs", "pub mod m {}\n"),
                           _w("port/spec.json", '{"module": "m", "entries": []}')), expect=(1, 2), group="out"))
    cases.append(Case("out/model serve --log pipe", ["model", "serve", "--model", "model", "--log", "pipe",
                                                     "--python", "/nonexistent/python"],
                      _all(_user_tree, _w("model/config.json", "{}"), _w("model/w.safetensors", b"\0")),
                      expect=(2,), env={"TILEPORT_VLLM_PYTHON": "/nonexistent/python"}, group="out"))
    cases.append(Case("out/ir-diff-self", ["ir-diff", "notes.txt", "notes.txt"], _user_tree, expect=(2,),
                      group="out"))
    return cases


def ir_semantic_cases() -> list[Case]:
    """IR inputs that parse but must not PASS, and inputs that must."""
    def extra_entries(n: int) -> str:
        one = IR_TEXT
        name = one.split("(", 1)[0].split("@", 1)[1]
        return one + "".join(one.replace("@" + name, f"@{name}_extra{i}", 1) for i in range(n))

    def module(text: str) -> str:
        return "cuda_tile.module @kernels {\n" + text + "}\n" if not text.startswith("cuda_tile") else text

    return [
        Case("ir/9679-extra-entries", ["ir-diff", "ref.tileir", "gen.tileir"],
             _all(_w("ref.tileir", IR_TEXT), _w("gen.tileir", extra_entries(9679))), expect=(1, 2), limit_s=60,
             group="ir"),
        Case("ir/9679-missing-entries", ["ir-diff", "ref.tileir", "gen.tileir"],
             _all(_w("ref.tileir", extra_entries(9679)), _w("gen.tileir", IR_TEXT)), expect=(1, 2), limit_s=60,
             group="ir"),
        Case("ir/1-extra-entry", ["ir-diff", "ref.tileir", "gen.tileir"],
             _all(_w("ref.tileir", IR_TEXT), _w("gen.tileir", extra_entries(1))), expect=(1,), group="ir"),
        Case("ir/same", ["ir-diff", "ref.tileir", "gen.tileir"],
             _all(_w("ref.tileir", IR_TEXT), _w("gen.tileir", IR_TEXT)), expect=(0,), group="ir"),
        Case("ir/huge-constant", ["ir-diff", "ref.tileir", "gen.tileir"],
             _all(_w("ref.tileir", IR_TEXT), _w("gen.tileir", IR_TEXT.replace("tile=(1024)", "tile=(1" + "0" * 100000 + ")"))),
             expect=(1, 2), group="ir"),
        Case("ir/huge-shape", ["ir-diff", "ref.tileir", "gen.tileir"],
             _all(_w("ref.tileir", IR_TEXT), _w("gen.tileir", IR_TEXT.replace("1024xf32", "9" * 5000 + "xf32"))),
             expect=(1, 2), group="ir"),
        Case("ir/module-wrapped", ["ir-diff", "ref.tileir", "gen.tileir"],
             _all(_w("ref.tileir", IR_TEXT), _w("gen.tileir", module(IR_TEXT))), expect=(0, 1, 2), group="ir"),
    ]


def store_cases() -> list[Case]:
    """Stores that are damaged, newer, or not stores, through every command that opens one."""
    def malformed_page(root: Path) -> None:
        _ok_store(root)
        db = root / ".tileport" / "tileport.db"
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        data = bytearray(db.read_bytes())
        page = int.from_bytes(data[16:18], "big") or 65536
        for off in range(page, len(data), page):  # every page after the header page: b-tree headers smashed
            data[off:off + 12] = b"\xff" * 12
        db.write_bytes(bytes(data))

    def newer(root: Path) -> None:
        _ok_store(root)
        con = sqlite3.connect(root / ".tileport" / "tileport.db")
        con.execute("PRAGMA user_version = 999")
        con.commit()
        con.close()

    def header_only(root: Path) -> None:
        _w(".tileport/tileport.db", b"SQLite format 3\0" + b"\xff" * 84)(root)

    def huge_user_version(root: Path) -> None:
        _ok_store(root)
        con = sqlite3.connect(root / ".tileport" / "tileport.db")
        con.execute("PRAGMA user_version = 2147483647")
        con.commit()
        con.close()

    def row_garbage(root: Path) -> None:
        _ok_store(root)
        con = sqlite3.connect(root / ".tileport" / "tileport.db")
        con.execute("update stage_runs set seconds = 'x', details = '{{{' , attempt = 'many'")
        con.execute("update conversions set created_at = 99")
        con.commit()
        con.close()

    def dir_store(root: Path) -> None:
        (root / ".tileport" / "tileport.db").mkdir(parents=True)

    def wal_garbage(root: Path) -> None:
        _ok_store(root)
        _w(".tileport/tileport.db-wal", b"\xff" * 4096)(root)

    def readonly_dir(root: Path) -> None:
        _ok_store(root)
        os.chmod(root / ".tileport", 0o500)

    kinds = dict(malformed_page=malformed_page, newer=newer, header_only=header_only,
                 huge_user_version=huge_user_version, row_garbage=row_garbage, dir_store=dir_store,
                 wal_garbage=wal_garbage, readonly_dir=readonly_dir)
    cmds = {"status": ["status"], "status-json": ["status", "--json"], "status-1": ["status", "1"],
            "status-1-json": ["status", "1", "--json"]}
    return [Case(f"store/{k}/{c}", argv, mk, expect=(0, 2), group="store")
            for k, mk in kinds.items() for c, argv in cmds.items()]


def workflow_cases() -> list[Case]:
    """The conversion workflow's commands (run, approve, reject, merge, worktrees) on hostile arguments."""
    cases = []
    ints = ["99999999999999999999", "-1", "0", "9223372036854775808", "7", "abc"]
    for v in ints:
        for cmd in (["approve", v], ["approve", v, "--override", "perf", "--reason", "x"],
                    ["reject", v, "--reason", "bad"], ["merge", v, "--check"], ["run", "--resume", v],
                    ["worktrees", "prune", v]):
            cases.append(Case(f"workflow/{' '.join(cmd)}", cmd, _ok_store, expect=(1, 2), group="workflow"))
    for v in ("nan", "inf", "-1", "1e999", "0"):
        cases.append(Case(f"workflow/worktrees --lock-age {v}", ["worktrees", "recover", "--lock-age", v],
                          _ok_store, expect=(2,), group="workflow"))
    for v in ("0", "-1", "99999999999999999999"):
        for flag in ("--jobs", "--model-jobs", "--cargo-jobs", "--gpu-jobs"):
            cases.append(Case(f"workflow/run {flag} {v}", ["run", "op.py", flag, v, "--model", "none"],
                              _w("op.py", GOOD_OP), expect=(2,), group="workflow"))
    for kind in ("missing", "directory", "fifo", "dev_zero", "binary", "huge", "deep", "symlink_loop",
                 "unix_socket"):
        make = KINDS[kind]
        cases.append(Case(f"workflow/run op {kind}", ["run", "op.py", "--model", "none"],
                          lambda root, make=make: make(root, "op.py", "py"), expect=(2,), group="workflow"))
        cases.append(Case(f"workflow/run --model scripted:{kind}", ["run", "op.py", "--model", "scripted:t.json"],
                          lambda root, make=make: (_w("op.py", GOOD_OP)(root), make(root, "t.json", "json")),
                          expect=(2,), group="workflow"))
    for repo in ("notes.txt", "pipe", "missing-dir", "/proc/self", "/dev/null"):
        cases.append(Case(f"workflow/run --repo {repo}", ["run", "op.py", "--repo", repo, "--model", "none"],
                          _user_tree, expect=(2,), group="workflow"))
    for url in ("http://[::1", "ftp://x", "http://127.0.0.1:99999/v1", "scripted:", "http://" + "a" * 5000):
        cases.append(Case(f"workflow/run --model {url[:30]}", ["run", "op.py", "--model", url],
                          _w("op.py", GOOD_OP), expect=(2,), group="workflow"))
    return cases


FAMILIES = (file_entry_cases, config_cases, declaration_cases, source_cases, int_arg_cases, url_cases, server_cases,
            out_path_cases, ir_semantic_cases, store_cases, workflow_cases)


def all_cases() -> list[Case]:
    cases = [c for family in FAMILIES for c in family()]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def sampled_cases(stride: int = 3) -> list[Case]:
    """Every family and every group of the corpus, each thinned to one case in `stride` (the first of each group
    always in): the default suite's share; `pytest -m heavy` runs the whole corpus."""
    out: list[Case] = []
    for family in FAMILIES:
        seen: set[str] = set()
        for i, c in enumerate(family()):
            if i % stride == 0 or c.group not in seen:
                out.append(c)
            seen.add(c.group)
    return out


# --------------------------------------------------------------------------------------------------
# runner
def _snapshot(root: Path) -> dict[str, str]:
    """What the user has before the run: every file (content hash), dir, link and FIFO under root."""
    snap: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if name.endswith(("-wal", "-shm", "-journal")):
                continue  # SQLite's own files: it may reset a garbage WAL, which holds no committed data
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                snap[rel] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                snap[rel] = "dir"
            elif stat.S_ISREG(st.st_mode):
                snap[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if st.st_size < (1 << 20) else f"size:{st.st_size}"
            else:
                snap[rel] = f"mode:{stat.S_IFMT(st.st_mode)}"
    return snap


def _lost(before: dict[str, str], root: Path) -> list[str]:
    lost = []
    for rel, what in before.items():
        p = root / rel
        try:
            st = os.lstat(p)
        except OSError:
            lost.append(f"{rel} (gone)")
            continue
        if what == "dir" and not stat.S_ISDIR(st.st_mode):
            lost.append(f"{rel} (no longer a directory)")
        elif what.startswith("link:") and (not stat.S_ISLNK(st.st_mode) or "link:" + os.readlink(p) != what):
            lost.append(f"{rel} (link replaced)")
        elif len(what) == 64 and (not stat.S_ISREG(st.st_mode) or hashlib.sha256(p.read_bytes()).hexdigest() != what):
            lost.append(f"{rel} (changed)")
    return lost


def _child(argv: list[str], cwd: Path, env: dict[str, str], out: int, err: int) -> None:
    """In the forked process: become `python -m tileport` with this cwd, env and stdio."""
    try:
        os.setpgid(0, 0)
        os.chdir(cwd)
        os.environ.update(env)
        os.dup2(out, 1)
        os.dup2(err, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        sys.argv = ["tileport", *argv]
        from tileport.cli import main
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            rc = 1
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        traceback.print_exc()
        rc = 1
    os._exit(rc if isinstance(rc, int) else 1)


def _kill_tree(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_case(case: Case, scratch: Path, servers: dict[str, str] | None = None, index: int = 0) -> Outcome:
    root = scratch / (f"{index:04d}-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in case.name)[:120])
    work = root / "work"
    work.mkdir(parents=True)
    case.setup(work)
    before = _snapshot(root)
    argv = [a.replace("{root}", str(work)) for a in case.argv]
    for b, url in (servers or {}).items():
        argv = [a.replace("{url:" + b + "}", url) for a in argv]
    env = {"TILEPORT_CACHE_DIR": str(root / "cache"), "HOME": os.environ.get("HOME", "/root"), **case.env}
    out_p, err_p = root / "stdout", root / "stderr"
    with open(out_p, "wb") as fo, open(err_p, "wb") as fe:
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(argv, work, env, fo.fileno(), fe.fileno())
        hang = False
        status = None
        while True:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid:
                status = st
                break
            if time.monotonic() - t0 > case.limit_s:
                hang = True
                _kill_tree(pid)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.02)
        seconds = time.monotonic() - t0
    _kill_tree(pid)  # anything the case left in its process group
    rc = None if hang else (os.waitstatus_to_exitcode(status) if status is not None else None)
    stdout = out_p.read_bytes()[-20000:].decode("utf-8", "replace")
    stderr = err_p.read_bytes()[-20000:].decode("utf-8", "replace")
    for p in (out_p, err_p):
        p.unlink()
    tb = "Traceback (most recent call last)" in stderr
    for rel in case.may_change:
        before.pop(str(Path("work") / rel), None)
    lost = _lost(before, root)
    wrong = None
    if not hang and not tb:
        if rc not in case.expect:
            wrong = f"exit status {rc}, expected {' or '.join(map(str, case.expect))}"
        elif case.expect_in_err and rc != 0 and case.expect_in_err.lower() not in stderr.lower():
            wrong = f"error does not name {case.expect_in_err!r}"
    # leave the scratch dir writable for cleanup
    for dirpath, dirnames, _ in os.walk(root):
        for d in dirnames:
            try:
                os.chmod(Path(dirpath) / d, 0o755)
            except OSError:
                pass
    return Outcome(case, rc, seconds, stdout, stderr, tb, hang, lost, wrong)


def run_corpus(scratch: Path, cases: list[Case] | None = None, log: Callable[[str], None] | None = None
               ) -> list[Outcome]:
    import tileport.cli  # noqa: F401  (imported once; every case forks from here)
    from tileport.cli import build_parser
    build_parser()
    cases = cases if cases is not None else all_cases()
    servers: dict[str, str] = {}
    live = []
    for b in SERVER_BEHAVIOURS:
        srv, url = start_server(b)
        live.append(srv)
        servers[b] = url
    outcomes = []
    try:
        for i, c in enumerate(cases):
            o = run_case(c, scratch, servers, i)
            outcomes.append(o)
            if log and not o.ok:
                last = (o.stderr.strip().splitlines() or [""])[-1][:160]
                log(f"FAIL {c.name}: rc={o.rc} {o.seconds:.1f}s tb={o.traceback} hang={o.hang} "
                    f"lost={o.lost[:3]} wrong={o.wrong} | {last}")
    finally:
        for srv in live:
            srv.shutdown()
            srv.server_close()
    return outcomes


def figures(outcomes: list[Outcome]) -> dict[str, int]:
    return {
        "cases": len(outcomes),
        "tracebacks": sum(o.traceback for o in outcomes),
        "hangs": sum(o.hang for o in outcomes),
        "paths_lost": sum(len(o.lost) for o in outcomes),
        "cases_losing_paths": sum(bool(o.lost) for o in outcomes),
        "wrong": sum(bool(o.wrong) for o in outcomes),
        "ok": sum(o.ok for o in outcomes),
    }


if __name__ == "__main__":
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="run the hostile corpus and print its figures")
    ap.add_argument("--only", help="substring of case names to run")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--skip-group", action="append", default=[], help="leave out a group (e.g. files)")
    ns = ap.parse_args()
    sys.path.insert(0, str(REPO))
    cs = all_cases()
    if ns.only:
        cs = [c for c in cs if ns.only in c.name]
    cs = [c for c in cs if c.group not in ns.skip_group]
    if ns.list:
        for c in cs:
            print(c.name)
        raise SystemExit(0)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tileport-hostile-", ignore_cleanup_errors=True) as tmp:
        res = run_corpus(Path(tmp), cs, log=lambda s: print(s, flush=True))
    by_group: dict[str, list[Outcome]] = {}
    for o in res:
        by_group.setdefault(o.case.group, []).append(o)
    for g, os_ in by_group.items():
        print(f"{g:12} {figures(os_)}")
    print(f"TOTAL        {figures(res)}  in {time.monotonic() - t0:.0f} s")
