"""Conversions: where a repository's store is, start or reuse, resume, rerun, stop, the exit code, and why an
action is not possible now (`why_not`: the rules the dashboard and the CLI refuse by).

- The store path rule: `--store` wins (as given); else the config's `store`, a relative one taken relative to the
  repository (`--repo`, else the working directory). So `run --repo R` and `tui --repo R` open the same store.
- The exit-code rule is `records.exits` (the one place); `exit_code` applies it to several conversions.
- Resume takes the model asked for now (`--resume ID --model X` runs X and records it on the conversion); without
  one it keeps the model the conversion was started with.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from tileport.pipeline.control import StopOutcome, conversion_holder, run_files, stop_conversion
from tileport.config import Config
from tileport.errors import UserError
from tileport.store import Store, queries

if TYPE_CHECKING:
    from tileport.pipeline.runner import ConversionRunner, EditJudged, Finished

# the runner's types, imported when first asked for (the runner pulls in every stage: a second at start-up)
_LAZY = {"ConversionRunner": "tileport.pipeline.runner", "EditJudged": "tileport.pipeline.runner",
         "Finished": "tileport.pipeline.runner", "Limits": "tileport.pipeline.context"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["Store", "Limits", "StopOutcome", "ConversionRunner", "EditJudged", "Finished", "READONLY", "WRITES",
           "store_path", "configured", "open_store", "exit_code", "runner", "reusable", "start_or_reuse", "start",
           "resume", "rerun", "stop", "stop_conversion", "conversion_holder", "live_file", "worked_examples",
           "with_tests", "why_not", "read_git", "examples_repo", "list_worktrees", "prune", "recover"]

READONLY = "read-only dashboard (started with --readonly): use the CLI or a writable dashboard"
WRITES = {"start", "resume", "stop", "rerun", "approve", "reject", "merge"}


def store_path(config: Config, repo: str | Path | None = None, store: str | Path | None = None) -> Path:
    """The one rule for where a repository's store is (see the module docstring); absolute."""
    if store:
        return Path(store).absolute()
    p = Path(config.store)
    return (p if p.is_absolute() else Path(repo or ".") / p).absolute()


def configured(config: Config, repo: str | Path | None = None, store: str | Path | None = None) -> Config:
    """The config with its store resolved by the one rule (what runners and the dashboard are given)."""
    return config.model_copy(update={"store": str(store_path(config, repo, store))})


def open_store(config: Config, repo: str | Path | None = None, store: str | Path | None = None) -> Store:
    """The repository's store (a context manager: `with open_store(config) as store:`)."""
    return Store(store_path(config, repo, store))


def exit_code(finished: Iterable["Finished"]) -> int:
    """Several conversions' ends as one exit status (`records.exits.combined`)."""
    from tileport.records import exits

    return exits.combined(f.exit_code for f in finished)


def with_tests(config: Config, tests) -> Config:
    """The config with the op's own tests given on the command line (`--tests`), checked."""
    from tileport.analysis.testfind import with_tests as given

    return given(config, tests)


def runner(config: Config, *, repo: str | Path | None = None, store: str | Path | None = None,
           model: str | None = None, **kw) -> "ConversionRunner":
    """A runner on the repository's store (kw: limits, out, stages, checkpoint: see pipeline.runner)."""
    from tileport.pipeline.runner import ConversionRunner

    kw.setdefault("examples_dir", worked_examples())
    return ConversionRunner(configured(config, repo, store), model=model, **kw)


def reusable(store: Store) -> dict[Path, int]:
    """op file -> the newest `tileport run` conversion of it (one with a worktree), to pick up instead of starting
    a second one."""
    out: dict[Path, int] = {}
    for c in queries.conversion_summaries(store):
        if c.worktree:
            out[Path(c.op_path).resolve()] = c.id
    return out


def start_or_reuse(run: "ConversionRunner", ops: Iterable[str | Path], *, repo: str | Path = ".",
                   kernel: str | None = None) -> list[int]:
    """A conversion id per op: the existing one of that op when there is one, else a new one (every new op's bad
    input is refused before any is created)."""
    ops = [Path(op) for op in ops]
    with run.store() as s:
        existing = reusable(s)
    new = [op for op in ops if op.resolve() not in existing]
    for op in new:
        run.check(op, repo)
    return [existing.get(op.resolve()) or run.start(op, kernel=kernel, repo=repo) for op in ops]


def start(run: "ConversionRunner", ops: Iterable[str | Path], *, repo: str | Path = ".", kernel: str | None = None,
          triton: str | Path | None = None) -> list[int]:
    """New conversions, one per op: every op's bad input is refused before any conversion exists. `triton`: the
    Triton twin of the (one) op, saved with its conversion: stage A pairs with it wherever it runs."""
    ops = list(ops)
    for op in ops:
        run.check(op, repo, triton=triton)
    return [run.start(op, kernel=kernel, repo=repo, triton=triton) for op in ops]


def resume(run: "ConversionRunner", conversion_id: int) -> "Finished":
    """Continue a stopped conversion; a model given to the runner now replaces the stored one (see docstring). A
    person's edit committed without B's gates (or with its gates stopped) is gated first, then the route goes on
    from that B run; the Finished says so (`gated`, and its reason)."""
    return run.resume(conversion_id)


def rerun(run: "ConversionRunner", conversion_id: int, stage: str) -> "Finished":
    return run.rerun_stage(conversion_id, stage)


def stop(run: "ConversionRunner", conversion_id: int) -> None:
    run.stop(conversion_id)


def live_file(worktree: str | Path) -> Path:
    """The file the running stage's tools print to (the dashboard's live view reads it)."""
    return run_files(worktree).live


def read_git(worktree: str | Path, *args: str) -> tuple[bool, str]:
    """A read-only git command in a conversion's worktree (the code view): (ok, its output, or git's error)."""
    from tileport.exec.proc import run_command

    r = run_command(["git", *args], cwd=worktree, timeout=30)
    return r.ok, (r.stdout if r.ok else r.stderr.strip())


def examples_repo(scratch: str | Path) -> tuple[Path, list[Path]]:
    """(a scratch repository holding the bundled examples, their op files): what `tileport` alone converts."""
    from tileport.analysis.corpus import find_examples
    from tileport.worktrees.scratch import examples_repo as make

    return make(Path(scratch), find_examples())


def list_worktrees(store: Store):
    """`tileport worktrees list`: each conversion's branch, worktree and store state, with the problems found."""
    from tileport.worktrees.lifecycle import list_worktrees as listed

    return listed(store)


def prune(store: Store, config: Config, *args, **kw):
    """`tileport worktrees prune`: remove merged and rejected conversions' worktrees (work saved first)."""
    from tileport.worktrees.lifecycle import prune as pruned

    return pruned(store, config, *args, **kw)


def recover(store: Store, config: Config, *args, **kw):
    """`tileport worktrees recover`: branches, worktrees and the store brought back into agreement after a crash."""
    from tileport.worktrees.lifecycle import recover as recovered

    return recovered(store, config, *args, **kw)


def worked_examples() -> Path | None:
    """The hand-written ports the kernel writer shows as worked examples: the package's copy when installed with
    one, else a source checkout's `ports/`; None when neither exists (the writer then works without examples)."""
    import tileport

    pkg = Path(tileport.__file__).resolve().parent
    for cand in (pkg / "agents" / "worked_ports", pkg.parent / "ports"):
        if cand.is_dir():
            return cand
    return None


def why_not(store: Store, config: Config, action: str, conversion_id: int | None = None, *,
            running_here: bool = False, readonly: bool = False, closing: bool = False, **_: Any) -> str | None:
    """One line saying why `action` on the conversion is not possible now, or None when it is. The caller says
    what only it knows: whether it drives the conversion itself (`running_here`), is read-only, or is closing."""
    if readonly and action in WRITES:
        return READONLY
    if action == "start":
        return None
    if conversion_id is None:
        return "select a conversion first"
    try:
        conv = store.conversion(conversion_id)
    except UserError as e:
        return str(e)
    status = conv.get("status")
    if action in ("resume", "rerun"):
        if closing:
            return "the dashboard is quitting"
        if running_here:
            return f"conversion {conversion_id} is running; stop it first (x)"
        if not conv.get("worktree"):
            return f"conversion {conversion_id} has no worktree (it was recorded by `tileport analyze`)"
        pid = conversion_holder(conv)
        if pid is not None:
            return f"conversion {conversion_id} is run by another tileport process ({pid}); stop it first (x)"
        if action == "resume" and status in ("done", "blocked", "failed") and _ungated(store, conversion_id):
            return None  # a person's edit at HEAD has no B run: resuming gates it, then routes on from it
        if action == "resume" and status in ("done", "merged", "rejected"):
            return f"conversion {conversion_id} is {status}; rerun a stage (r) to change it"
        if action == "resume" and status in ("blocked", "failed"):
            why = f": {conv['error']}" if conv.get("error") else ""
            return (f"conversion {conversion_id} stopped {status.upper()}{why}; resuming would stop at the same "
                    "verdict: fix the cause and rerun a stage (r)")
        return None
    if action == "stop":
        if running_here or conversion_holder(conv) is not None:
            return None
        return f"conversion {conversion_id} is not running (status {status or '?'})"
    if action in ("approve", "reject", "merge"):
        from tileport.service.decisions import refusal

        if not conv.get("branch") or not conv.get("repo"):
            return f"conversion {conversion_id} has no branch to {action}"
        if running_here:
            return f"conversion {conversion_id} is running; decide once it stops on a commit"
        return refusal(store, config, action, conversion_id)
    return f"unknown action {action!r}"


def _ungated(store: Store, conversion_id: int) -> bool:
    from tileport.service.edits import ungated_head

    try:
        return ungated_head(store, conversion_id) is not None
    except UserError:  # its worktree is gone or moved: resume says so itself
        return False
