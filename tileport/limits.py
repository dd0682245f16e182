"""Every limit tileport puts on its input, in one place, and the readers that enforce them.

A hostile or mistaken input (a FIFO, a directory or /dev/zero where a file belongs, a 50 MB file, a document
nested 100,000 deep, an import that never returns, a server that drips a byte every 2 s) must end in one line
that names the limit it hit and how to change it, never in a traceback, a hang or a blown memory budget.
Each limit can be raised with the environment variable named in its error.

Part of the contract floor: imports nothing of tileport but `errors`.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tileport.errors import UserError


@dataclass(frozen=True)
class Limit:
    """A named, overridable bound: `value` unless the environment variable `env` says otherwise."""

    env: str
    default: float
    unit: str
    what: str

    @property
    def value(self) -> float:
        raw = os.environ.get(self.env)
        if raw is None or raw == "":
            return self.default
        try:
            v = float(raw)
        except ValueError:
            raise UserError(f"{self.env}={raw!r} is not a number; set it to {self.unit} (default {self.default:g})") \
                from None
        if not math.isfinite(v) or v <= 0:
            raise UserError(f"{self.env}={raw!r} must be a positive finite number of {self.unit}")
        return v

    def describe(self) -> str:
        v = self.value
        shown = f"{v / (1 << 20):g} MiB" if self.unit == "bytes" else f"{v:g} {self.unit}"
        return f"{self.what} limit {shown} ({self.env})"


MiB = 1 << 20
SOURCE_BYTES = Limit("TILEPORT_MAX_SOURCE_BYTES", 8 * MiB, "bytes", "op module size")
IR_BYTES = Limit("TILEPORT_MAX_IR_BYTES", 16 * MiB, "bytes", "Tile IR size")
DOC_BYTES = Limit("TILEPORT_MAX_DOC_BYTES", 16 * MiB, "bytes", "JSON/TOML document size")
CONFIG_BYTES = Limit("TILEPORT_MAX_CONFIG_BYTES", 1 * MiB, "bytes", "config size")
REPLY_BYTES = Limit("TILEPORT_MAX_REPLY_BYTES", 32 * MiB, "bytes", "model server reply size")
DEPTH = Limit("TILEPORT_MAX_DEPTH", 200, "levels", "nesting depth")
IMPORT_TIMEOUT = Limit("TILEPORT_IMPORT_TIMEOUT_S", 120, "s", "op import time")
EXPORT_TIMEOUT = Limit("TILEPORT_EXPORT_TIMEOUT_S", 600, "s", "op export time")
STORE_BUSY = Limit("TILEPORT_STORE_BUSY_S", 60, "s", "store lock wait")

# Numbers an op or config may declare: sizes and counts beyond this are typos or attacks, not problems.
MAX_DECLARED_INT = 1 << 62


# -------------------------------------------------------------------------------------------------- files
def read_bytes(path: str | os.PathLike, what: str, limit: Limit) -> bytes:
    """A regular file's bytes, or one UserError: missing, a directory, a FIFO/device/socket, too big.

    Opens without blocking (a FIFO does not hang the open), checks the kind and size on the open file (no race
    with a swap), and reads at most `limit` + 1 bytes (a file growing while read, or /proc, is still bounded).
    """
    p = Path(path)
    cap = int(limit.value)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise UserError(_open_error(p, what, e)) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"{p}: is a directory; pass {what} (a regular file)")
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                    or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise UserError(f"{p}: is {kind}; pass {what} as a regular file")
        if st.st_size > cap:
            raise UserError(f"{p}: {st.st_size / MiB:.1f} MiB is over the {limit.describe()}; "
                            f"pass a smaller file or raise {limit.env}")
        chunks, n = [], 0
        while n <= cap:
            try:
                b = os.read(fd, min(1 << 20, cap + 1 - n))
            except BlockingIOError:
                continue
            except OSError as e:
                raise UserError(_open_error(p, what, e)) from None
            if not b:
                break
            chunks.append(b)
            n += len(b)
        if n > cap:
            raise UserError(f"{p}: larger than the {limit.describe()}; pass a smaller file or raise {limit.env}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_error(p: Path, what: str, e: OSError) -> str:
    if e.errno == errno.ENOENT:
        return f"{p}: no such file; pass {what}"
    if e.errno == errno.ENOTDIR:
        return f"{p}: a parent of this path is not a directory; pass {what}"
    if e.errno == errno.ELOOP:
        return f"{p}: symbolic link loop; pass {what}"
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"{p}: permission denied; make it readable or pass another file"
    if e.errno == errno.ENXIO:
        return f"{p}: is a socket or device without a reader; pass {what} as a regular file"
    if e.errno == errno.ENAMETOOLONG:
        return f"{str(p)[:80]}...: file name too long; pass {what}"
    return f"{p}: cannot read ({e.strerror}); pass {what}"


def read_text(path: str | os.PathLike, what: str, limit: Limit, *, hint: str = "save it as UTF-8") -> str:
    """`read_bytes` decoded as UTF-8 (a leading BOM is dropped, as Python and TOML readers do)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start}); {hint}") from None


# ---------------------------------------------------------------------------------------------- documents
def check_depth(text: str, where: str, opens: str = "[{(", closes: str = "]})") -> None:
    """Refuse text whose bracket nesting exceeds DEPTH before a recursive parser sees it.

    Brackets in strings count too: an overestimate only matters for text no tool writes.
    """
    cap = int(DEPTH.value)
    depth = 0
    table = {ord(c): "(" for c in opens} | {ord(c): ")" for c in closes}
    # a fast path: most documents are far below the cap
    if sum(text.count(c) for c in opens) <= cap:
        return
    for ch in text.translate(table):
        if ch == "(":
            depth += 1
            if depth > cap:
                raise UserError(f"{where}: nested deeper than the {DEPTH.describe()}; flatten it or raise "
                                f"{DEPTH.env}")
        elif ch == ")":
            depth = max(0, depth - 1)


def _finite(x: str) -> float:
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{x} is not a finite number")
    return v


def loads_json(text: str, where: str) -> Any:
    """JSON with bounded depth, finite numbers only (no NaN/Infinity/1e999) and bounded integers."""
    check_depth(text, where, "[{", "]}")

    def _int(x: str) -> int:
        if len(x.lstrip("-")) > 19:
            raise ValueError(f"integer {x[:20]}... is out of range")
        return int(x)

    try:
        return json.loads(text, parse_float=_finite, parse_int=_int,
                          parse_constant=lambda c: _finite(c))
    except ValueError as e:  # JSONDecodeError is a ValueError
        raise UserError(f"{where}: not valid JSON ({str(e)[:200]})") from None
    except RecursionError:
        raise UserError(f"{where}: nested deeper than the {DEPTH.describe()}") from None


def read_json(path: str | os.PathLike, what: str, limit: Limit = DOC_BYTES) -> Any:
    return loads_json(read_text(path, what, limit), str(path))


def loads_toml(text: str, where: str) -> dict[str, Any]:
    check_depth(text, where, "[{", "]}")
    try:
        return tomllib.loads(text, parse_float=_finite)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{where}: not valid TOML ({e}); fix the syntax") from None
    except ValueError as e:
        raise UserError(f"{where}: {e}; use a finite number") from None
    except RecursionError:
        raise UserError(f"{where}: nested deeper than the {DEPTH.describe()}") from None


# ------------------------------------------------------------------------------------------------ numbers
def finite_number(value: Any, what: str) -> float:
    """For validators: a finite number (no inf, nan, 1e999), else ValueError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number")
    try:
        v = float(value)
    except OverflowError:
        raise ValueError(f"{what} is out of range") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} must be a finite number, not {value!r}")
    return v
