"""Conversions handed off when the dashboard quits with "leave them running in the background".

The dashboard stops its own drives (each running attempt is recorded as interrupted), then starts this module
as a detached process (its own session, output to a log file) that resumes them with the same config and
model, so the terminal is free and `tileport stop ID`, `tileport status` and a new `tileport tui` see them.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tileport
from tileport.config import Config


JUDGE_EDIT = "judge-edit"  # in `forced`: B's judge of a person's edit was running (the hand-off runs it again)


@dataclass(frozen=True)
class Handoff:
    pid: int
    log: Path
    ids: list[int]
    store: Path | None = None

    def text(self) -> str:
        ids = " ".join(f"#{i}" for i in self.ids)
        # the store named: the default run's store is not the one `tileport stop` finds in the working directory
        where = f" --store {shlex.quote(str(self.store))}" if self.store else ""
        return (f"tileport: {ids} continue in the background (process {self.pid}, log {self.log}); "
                f"`tileport stop ID{where}` stops one, `tileport tui{where}` watches them")


def spawn(config: Config, model: str | None, ids: list[int], log_dir: Path, jobs: int = 2,
          forced: dict[int, str] | None = None) -> Handoff:
    """`forced`: conversion -> stage, for a rerun that was running (the hand-off reruns that stage), or JUDGE_EDIT for
    B's gates on a person's edit (the hand-off runs them)."""
    forced = forced or {}
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    cfg = log_dir / f"background-{stamp}.config.json"
    cfg.write_text(config.model_dump_json(), encoding="utf-8")
    log = log_dir / f"background-{stamp}.log"
    root = str(Path(tileport.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "tileport.tui._background", str(cfg), model or "", str(jobs),
                                 *(f"{i}:{forced[i]}" if i in forced else str(i) for i in ids)], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
    return Handoff(proc.pid, log, list(ids), Path(config.store))


def main(argv: list[str]) -> int:
    from tileport import service
    from tileport.errors import UserError

    cfg, model, jobs, *ids = argv
    config = Config.model_validate_json(Path(cfg).read_text(encoding="utf-8"))
    # the runner the dashboard and `tileport run` get (worked examples for the writer included)
    runner = service.runner(config, model=model or None, out=lambda line: print(line, flush=True))
    todo = [(int(i.split(":")[0]), i.split(":")[1] if ":" in i else None) for i in ids]

    def drive(cid: int, force: str | None):
        try:
            return runner.judge_edit(cid) if force == JUDGE_EDIT else runner.drive(cid, force=force)
        except UserError as e:  # one conversion's refusal (run elsewhere meanwhile) must not end the others
            print(f"#{cid}: not run: {e}", flush=True)
            return None

    with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
        finished = [f for f in pool.map(lambda t: drive(*t), todo) if f is not None]
    for f in finished:
        print(f"#{f.conversion_id}: {f.status.upper()}" + (f" ({f.reason})" if f.reason else ""), flush=True)
    return service.exit_code(finished)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
