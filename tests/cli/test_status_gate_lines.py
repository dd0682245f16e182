"""`tileport status ID` after a gate judged by the op's own tests: one line per test (reference verdict, port
verdict, port launches, seconds) and per timed configuration (device ratio, each side's host time per call), and
what E left out; D's summary counts only the evaluated tests."""

from __future__ import annotations

import json

from gitconv import conversion_at
from tests.conftest import run_cli
from tileport import service
from tileport.config import Config
from tileport.store import queries


def results(cid, commit) -> dict:
    tests = [
        {"id": "tests/test_op.py::test_a", "reference": "passed", "port": "passed", "port_launches": 2,
         "status": "PASS", "fail_class": None, "message": "ok (2 port launch(es))", "seconds": {"port": 0.5}},
        {"id": "tests/test_op.py::test_bad_shape", "reference": "passed", "port": "passed", "port_launches": 0,
         "status": "NOT_EVALUATED", "fail_class": None, "message": "not evaluated (no port launch)",
         "seconds": {"port": 0.01}},
        {"id": "tests/test_op.py::test_f64", "reference": "skipped: no float64", "port": "skipped: no float64",
         "port_launches": 0, "status": "NOT_EVALUATED", "fail_class": None,
         "message": "not evaluated (reference: skipped: no float64)", "seconds": {"port": 0.0}},
    ]
    cases = [{"name": t["id"], "dtype": "", "shape": {}, "status": t["status"], "fail_class": None,
              "message": t["message"], "source": "tests", "reference": t["reference"],
              "port_launches": t["port_launches"], "seconds": t["seconds"]["port"]} for t in tests]
    row = {"config": "k float16 grid(64, 1, 1) (float16[64x4096], float16[64x4096])", "ref_ms": 0.01,
           "port_ms": 0.0102, "ratio": 1.02, "ref_samples": [0.01] * 20, "port_samples": [0.0102] * 20, "flags": [],
           "source": "capture", "host_us": {"ref": {"call_us": 20.5, "return_us": 7.0},
                                            "port": {"call_us": 512.25, "return_us": 490.0}}}
    return {"gate": {"conversion_id": cid, "commit": commit}, "tests": tests, "cases": cases,
            "perf": {"rows": [row], "hw": {"flush": {"verified": True}},
                     "left_out": [{"config": "k float16 grid(1, 1, 1) (float16[1x8])", "why": "over the bound"}]}}


def test_a_failed_test_keeps_its_own_printed_diagnostics_through_ingest_to_status(tmp_path):
    conv = conversion_at(tmp_path)
    try:
        res = results(conv.cid, conv.head())
        printed = "\n".join(["10-1 Persistent Softmax: FAIL", "   matched: 1040000/1048576 [99.18%]",
                              "   First 10 mismatched indices: [(4095, 0), (4095, 1)]"])
        res["tests"][0].update(status="FAIL", port="failed: torch.allclose returned False", fail_class="kernel",
                               message="port: failed: torch.allclose returned False at utils.py:74", output=printed)
        res["cases"][0].update(status="FAIL", fail_class="kernel", message=res["tests"][0]["message"], output=printed)
        path = tmp_path / "results.json"
        path.write_text(json.dumps(res))
        done = service.ingest_results(Config().model_copy(update={"store": str(conv.store.path)}), path)
        assert [r.verdict for r in done.runs] == ["FAIL"]
        d = queries.stage_runs(conv.store, conv.cid, "D")[-1]
        assert queries.cases(conv.store, d.id)[0].output == printed  # typed through the store
        (tmp_path / "tileport.toml").write_text(f'store = "{conv.store.path}"\n')
        out = run_cli("status", str(conv.cid), cwd=tmp_path).stdout
        assert "FAIL          tests/test_op.py::test_a" in out
        assert "    |    First 10 mismatched indices: [(4095, 0), (4095, 1)]" in out
    finally:
        conv.store.close()


def test_status_shows_each_test_and_each_configurations_host_time(tmp_path):
    conv = conversion_at(tmp_path)
    try:
        path = tmp_path / "results.json"
        path.write_text(json.dumps(results(conv.cid, conv.head())))
        cfg = Config().model_copy(update={"store": str(conv.store.path)})
        done = service.ingest_results(cfg, path)
        assert [r.verdict for r in done.runs] == ["ALL_PASS", "DONE"]
        d = queries.stage_runs(conv.store, conv.cid, "D")[-1]
        assert d.summary == "1 of 1 evaluated pass; 2 not evaluated (1 no port launch; 1 reference skipped)"
        (tmp_path / "tileport.toml").write_text(f'store = "{conv.store.path}"\n')
        out = run_cli("status", str(conv.cid), cwd=tmp_path).stdout
        assert "PASS          tests/test_op.py::test_a  reference passed  port launches 2  0.50 s" in out
        assert "NOT_EVALUATED tests/test_op.py::test_bad_shape" in out and "not evaluated (no port launch)" in out
        assert "reference skipped: no float64" in out
        assert "port/ref 1.020  host per call until it returns: ref 7.0 us, port 490.0 us" in out
        assert "1 captured configuration(s) left out: k float16 grid(1, 1, 1) (float16[1x8]) (over the bound)" in out
        js = json.loads(run_cli("status", str(conv.cid), "--json", cwd=tmp_path).stdout)
        e = [r for r in js["stage_runs"] if r["stage"] == "E"][-1]
        assert e["perf_rows"][0]["host_us"]["port"]["call_us"] == 512.25
        assert e["details"]["host_us"] == {"ref": 7.0, "port": 490.0}  # until the call returns, not the kernel
    finally:
        conv.store.close()
