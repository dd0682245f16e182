"""How tests/data/stores/v3-main.db was made: ONCE, with main's code at bcdbecc (store schema v3), before the store became a
package. Kept as documentation; do not re-run it with newer code (the point is a store written by the old code)."""
import sys
from pathlib import Path
from datetime import datetime, timezone
from tileport.store import Store
from tileport.records import StageResult, Stage, FailClass, CommandRecord
from tileport.pipeline.stages import performance, host_correctness
from tileport.validators.gpu.reports import PerfReport, PerfRow, CorrectnessReport, Case

out = Path(sys.argv[1])
s = Store(out)
t = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
cid = s.add_conversion("/repo/examples/vector_add.py", None)
s.update_conversion(cid, branch="tileport/vector_add-1", worktree="/repo/.tileport/worktrees/vector_add-1",
                    repo="/repo", base_branch="main", base_commit="a" * 40, model="none", status="done",
                    head_commit="e" * 40)
cmd = CommandRecord(argv=["cargo", "build"], cwd="/repo/.tileport/worktrees/vector_add-1", exit_code=0, seconds=1.5)
runs = [
    StageResult(stage=Stage.ANALYZE, verdict="PASS", started_at=t, finished_at=t, cap=2,
                details={"kernels": 1, "variants": 1, "instances": 2, "targets": ["sm_90"], "out_dir": "/x"},
                summary="vector_add: 1 kernels"),
    StageResult(stage=Stage.WRITE_KERNEL, verdict="FAIL_COMPILE", fail_class=FailClass.KERNEL, started_at=t,
                finished_at=t, cap=4, commands=[cmd.model_copy(update={"exit_code": 101})],
                details={"errors": 2, "feedback": "error[E0308]: mismatched types", "model_requests": 1}),
    StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", started_at=t, finished_at=t, cap=4, attempt=2,
                commands=[cmd], details={"self_check": "PASS", "model_requests": 2,
                "ir_pairs": [{"label": "vector_add sm_90 f32", "reference": "ref ir", "port": "port ir",
                              "verdict": "PASS"}]}),
]
for i, r in enumerate(runs):
    s.record_stage(cid, r, commit=f"{i}" * 40, routed_to="B" if i < 2 else "D", route_reason="fixture")
corr = CorrectnessReport(cases=[Case("f32 n=1024", "float32", {"n": 1024}, "PASS", 0.0),
                                Case("f16 n=4096", "float16", {"n": 4096}, "PASS", 1e-3)])
d = host_correctness.result_from_report(corr, attempt=1, started_at=t)
rid = s.record_stage(cid, d, "3" * 40, routed_to="E", route_reason="fixture")
s.add_cases(rid, corr.cases)
rows = [PerfRow("n=1024 f32", 0.010, 0.0115, 1.15, [0.01] * 3, [0.0115] * 3, [], {}, False, False,
                {"ref": [{"name": "k", "grid": [4, 1, 1]}], "port": [{"name": "k", "grid": [4, 1, 1]}]}),
        PerfRow("n=4096 f32", 0.020, 0.018, 0.90, [0.02] * 3, [0.018] * 3)]
rep = PerfReport(rows=rows, hw={"arch": "sm_90", "name": "H200", "flush": {"verified": True}})
# recorded when [perf] config_max was 1.25: the worst row (1.15) is under it, so E was DONE
e = performance.result_from_report(rep, attempt=1, started_at=t, geomean_max=1.1, config_max=1.25)
rid = s.record_stage(cid, e, "4" * 40, routed_to="DONE", route_reason="fixture")
s.add_perf_rows(rid, rep.rows)
s.record_approval(cid, "4" * 40, "alice", "approve", comment="fine", gate_snapshot=[{"name": "A"}])
# an `analyze` conversion with no worktree
cid2 = s.add_conversion("/repo/examples/softmax.py", "softmax_kernel")
s.record_stage(cid2, StageResult(stage=Stage.ANALYZE, verdict="FAIL_FIXABLE", started_at=t, finished_at=t,
                                 details={"error": "no kernel"}, summary="no kernel"))
s.log_event("log", cid, text="#1 vector_add: done")
print(s.schema_version, e.verdict, e.details["worst"], e.details["config_max"])
s.close()
