"""A named fake of stage B's gates on a person's edit (`write_kernel.judge_port`) for routing tests that need no real
cargo build: the verdict is what the edited file says (`COMPILED` unless the port's edit.txt names another), with
the same `source` in its details as the real gates record."""

from __future__ import annotations

from tileport.records import FailClass, Stage, StageResult, utcnow


def fake_edit_judge(ctx, source: str, runs_dir=None) -> StageResult:
    edit = ctx.paths.port / "edit.txt"
    verdict = edit.read_text().split()[0] if edit.is_file() and edit.read_text().split() else "COMPILED"
    return StageResult(stage=Stage.WRITE_KERNEL, verdict=verdict, started_at=utcnow(), finished_at=utcnow(),
                       fail_class=FailClass.KERNEL if verdict == "FAIL_COMPILE" else None,
                       details={"source": source, "self_check": "PASS"}, summary=f"fake judge {verdict}")
