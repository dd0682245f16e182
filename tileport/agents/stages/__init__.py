"""The stages, one module each: the only code that turns tool results into `StageResult`s.

Each module has `run(ctx: StageContext) -> StageResult`; `STAGES` maps the anchor's letters to them.
"""

from __future__ import annotations

from tileport.agents.stages import (analyze, diagnose, diagnose_perf, host_correctness, performance,
                                    write_kernel)

STAGES = {
    "A": analyze.run,
    "B": write_kernel.run,
    "C": diagnose.run,
    "D": host_correctness.run,
    "E": performance.run,
    "F": diagnose_perf.run,
}
