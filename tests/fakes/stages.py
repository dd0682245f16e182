"""Named fake stages for driving the real runner (real git worktree, commits and store) in milliseconds.

Each fake writes a file into the conversion's port directory, as a real stage would, and returns a verdict from a
script. `python -m tests.fakes.stages REPO STORE POINT` starts a conversion of REPO/op.py with these stages and
SIGKILLs itself at POINT ("committed:B:1"): a real kill -9 at a named point of an attempt.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from tileport.records import FailClass, Stage, StageResult, utcnow

# The happy path with one host failure: A PASS -> B COMPILED -> D FAIL(host) -> D ALL_PASS -> E DONE.
SCRIPT = {"A": ["PASS"], "B": ["COMPILED"], "D": ["FAIL", "ALL_PASS"], "E": ["DONE"]}


def fake_stage(letter: str):
    def run(ctx) -> StageResult:
        verdicts = SCRIPT[letter]
        verdict = verdicts[min(ctx.attempt, len(verdicts)) - 1]
        ctx.paths.port.mkdir(parents=True, exist_ok=True)
        (ctx.paths.port / f"{letter}-{ctx.attempt}.txt").write_text(f"{letter} {ctx.attempt} {verdict}\n")
        writer = getattr(ctx.writer, "name", type(ctx.writer).__name__)
        return StageResult(stage=Stage(letter), verdict=verdict, started_at=utcnow(), finished_at=utcnow(),
                           fail_class=FailClass.HOST if verdict == "FAIL" else None,
                           details={"writer": writer}, summary=f"fake {letter} {verdict}")
    run.__name__ = f"fake_{letter}"
    return run


FAKE_STAGES = {s.value: fake_stage(s.value) for s in Stage if s.value in SCRIPT}


def op_repo(root: Path) -> Path:
    """A fresh git repository at `root` holding op.py in one commit on main (what the fake stages convert)."""
    import subprocess

    root.mkdir(parents=True)
    (root / "op.py").write_text("# a cuTile op\n")
    for argv in (["init", "-q", "--initial-branch=main"], ["add", "op.py"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]):
        subprocess.run(["git", *argv], cwd=root, check=True)
    return root


def kill_at(point: str):
    def checkpoint(at: str, stage: str, attempt: int) -> None:
        if f"{at}:{stage}:{attempt}" == point:
            os.kill(os.getpid(), signal.SIGKILL)
    return checkpoint


if __name__ == "__main__":
    from tileport import service
    from tileport.config import Config

    repo, store, point = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    runner = service.runner(Config(), repo=repo, store=store, model="none", stages=FAKE_STAGES,
                            checkpoint=kill_at(point), out=lambda line: None)
    cid = service.start(runner, [repo / "op.py"], repo=repo)[0]
    runner.drive(cid)
    sys.exit(5)  # never reached when the point is on the path
