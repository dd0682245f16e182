"""Hostile ports (tests/data/hostile_ports, see its generate.py): every one must be refused by the untrusted-code
policy before cargo runs, with a diagnostic at the file and line of the hostile construct. Fast (no cargo).

The figures (refused / total per class) are printed with `-s`; the goal is all of them refused."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from tileport.errors import UserError
from tileport.validators.rust.build import prepare_crate
from tileport.validators.rust.policy import check_crate

CORPUS = Path(__file__).resolve().parents[2] / "data" / "hostile_ports"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))
GOOD_PORT = Path(__file__).resolve().parents[3] / "ports" / "vector_add"


def judge(port: Path, tmp: Path) -> tuple[bool, list]:
    """(refused, error diagnostics) the way `tileport build-rust PORT` judges it before cargo."""
    try:
        layout = prepare_crate(port, out=tmp / "crate")
    except UserError as e:
        return True, [str(e)]
    errors = [d for d in check_crate(layout) if d.is_error]
    return bool(errors), errors


def test_corpus_is_large_and_covers_every_class():
    assert len(MANIFEST) >= 80
    classes = Counter(m["class"] for m in MANIFEST.values())
    assert set(classes) >= {"unicode", "asm", "symbols", "extern", "macros", "paths", "raw-ident", "items", "files"}
    assert all(n >= 2 for n in classes.values()), classes


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_hostile_port_is_refused_at_its_line(name, tmp_path):
    meta = MANIFEST[name]
    refused, errors = judge(CORPUS / name, tmp_path)
    assert refused, f"{name} ({meta['class']}) passed the policy"
    at = [d for d in errors if d.file == meta["file"] and d.line == meta["line"]]
    assert at, f"{name}: no refusal at {meta['file']}:{meta['line']}: {[d.short() for d in errors]}"
    assert {d.code for d in at} & set(meta["rules"]), f"{name}: {[d.short() for d in at]} not in {meta['rules']}"
    for d in at:  # the location is printed the way compilers print it
        assert f"{d.file}:{d.line}:{d.col}" in d.rendered


SECRET = "tileport-secret-6f1c"


@pytest.mark.parametrize("mutation", ["kernel_symlink", "host_symlink", "spec_symlink", "kernel_fifo",
                                      "kernel_dev_null", "kernel_dir_symlink", "extra_symlink"])
def test_links_and_special_files_in_a_port_are_refused_and_never_read(mutation, tmp_path):
    """Mutations git cannot carry: links out of the port, FIFOs (a reader would hang), devices."""
    port = tmp_path / "port"
    port.mkdir()
    for f in ("kernel.rs", "spec.json", "host.rs"):
        (port / f).write_bytes((GOOD_PORT / f).read_bytes())
    secret = tmp_path / "secret.rs"
    secret.write_text(f"// {SECRET}\n" + (GOOD_PORT / "kernel.rs").read_text())
    target = {"kernel_symlink": "kernel.rs", "host_symlink": "host.rs", "spec_symlink": "spec.json",
              "kernel_fifo": "kernel.rs", "kernel_dev_null": "kernel.rs", "kernel_dir_symlink": "kernel.rs",
              "extra_symlink": "notes.txt"}[mutation]
    if (port / target).exists():
        (port / target).unlink()
    if mutation == "kernel_fifo":
        os.mkfifo(port / target)
    elif mutation == "kernel_dev_null":
        os.symlink("/dev/null", port / target)
    elif mutation == "kernel_dir_symlink":
        os.symlink(tmp_path, port / target)
    elif mutation == "spec_symlink":
        (tmp_path / "spec.json").write_bytes((GOOD_PORT / "spec.json").read_bytes())
        os.symlink(tmp_path / "spec.json", port / target)
    else:
        os.symlink(secret, port / target)
    refused, errors = judge(port, tmp_path)
    assert refused, f"{mutation} passed"
    text = " ".join(str(getattr(e, "rendered", e)) + str(getattr(e, "message", "")) for e in errors)
    assert SECRET not in text and target in text


def test_figures(capsys, tmp_path):
    """Refused / total per class (run with -s to see them)."""
    per = Counter()
    refused = Counter()
    for name, meta in sorted(MANIFEST.items()):
        per[meta["class"]] += 1
        refused[meta["class"]] += judge(CORPUS / name, tmp_path / name)[0]
    with capsys.disabled():
        print("\nhostile ports refused by the policy:",
              ", ".join(f"{c} {refused[c]}/{per[c]}" for c in sorted(per)),
              f"| total {sum(refused.values())}/{sum(per.values())}")
    assert refused == per
