"""The stages, one module each: the only code that turns tool results into `StageResult`s.

Each module has `run(ctx: StageContext) -> StageResult`. The runner is given its stages (`ConversionRunner(stages=...)`);
`default_stages()` is the real set, keyed by the anchor's letters. A test gives named fakes instead.
"""

from __future__ import annotations

from typing import Callable, Mapping

from tileport.records import StageResult

StageFn = Callable[..., StageResult]  # (ctx: StageContext) -> StageResult


def default_stages() -> Mapping[str, StageFn]:
    from tileport.pipeline.stages import (analyze, diagnose, diagnose_perf, host_correctness, performance,
                                        write_kernel)

    return {"A": analyze.run, "B": write_kernel.run, "C": diagnose.run, "D": host_correctness.run,
            "E": performance.run, "F": diagnose_perf.run}
