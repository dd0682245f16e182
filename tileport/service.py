"""What the CLI and the dashboard both call: open a repository's store, start or reuse conversions, stop, resume,
rerun, and the one exit-code rule. Entry points parse and render; the decisions are here, once.

- The store path rule: `--store` wins (as given); else the config's `store`, a relative one taken relative to the
  repository (`--repo`, else the working directory). So `run --repo R` and `tui --repo R` open the same store.
- The exit-code rule (`records.exits`, the one place): 2 bad input (raised as UserError before anything runs),
  else 1 if any conversion failed or hit a cap, else 3 if any stopped at BLOCKED (the environment), else 0.
- Gates on a GPU elsewhere (`tileport gate pack|ingest`, the dashboard's `g` / `i`): `pack_gate` and
  `ingest_results` open the store by the same rule and call `tileport.agents.gate_service`, which returns typed
  results (PackedGate, IngestedResults) for the caller to print or render.
- Resume takes the model asked for now (`--resume ID --model X` runs X and records it on the conversion); without
  one it keeps the model the conversion was started with.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from tileport.config import Config
from tileport.errors import UserError
from tileport.store import Store, queries

from tileport.agents import gate_service

if TYPE_CHECKING:
    from tileport.agents.runner import EditJudged, Finished, Runner


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
    return Store(store_path(config, repo, store))


def exit_code(finished: Iterable["Finished"]) -> int:
    """Several conversions' ends as one exit status (`records.exits.combined`)."""
    from tileport.records import exits

    return exits.combined(f.exit_code for f in finished)


def runner(config: Config, *, repo: str | Path | None = None, store: str | Path | None = None,
           model: str | None = None, **kw) -> "Runner":
    """A runner on the repository's store (kw: limits, out, stages, checkpoint: see agents.runner.Runner)."""
    from tileport.agents.runner import Runner

    kw.setdefault("examples_dir", worked_examples())
    return Runner(configured(config, repo, store), model=model, **kw)


def reusable(store: Store) -> dict[Path, int]:
    """op file -> the newest `tileport run` conversion of it (one with a worktree), to pick up instead of starting
    a second one."""
    out: dict[Path, int] = {}
    for c in queries.conversion_summaries(store):
        if c.worktree:
            out[Path(c.op_path).resolve()] = c.id
    return out


def start_or_reuse(run: "Runner", ops: Iterable[str | Path], *, repo: str | Path = ".",
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


def start(run: "Runner", ops: Iterable[str | Path], *, repo: str | Path = ".", kernel: str | None = None,
          triton: str | Path | None = None) -> list[int]:
    """New conversions, one per op: every op's bad input is refused before any conversion exists. `triton`: the
    Triton twin of the (one) op, saved with its conversion: stage A pairs with it wherever it runs."""
    ops = list(ops)
    for op in ops:
        run.check(op, repo, triton=triton)
    return [run.start(op, kernel=kernel, repo=repo, triton=triton) for op in ops]


def resume(run: "Runner", conversion_id: int) -> "Finished":
    """Continue a stopped conversion; a model given to the runner now replaces the stored one (see docstring). A
    person's edit committed without B's gates (or with its gates stopped) is gated first, then the route goes on
    from that B run; the Finished says so (`gated`, and its reason)."""
    return run.resume(conversion_id)


def rerun(run: "Runner", conversion_id: int, stage: str) -> "Finished":
    return run.rerun_stage(conversion_id, stage)


def stop(run: "Runner", conversion_id: int) -> None:
    run.stop(conversion_id)


# --- a person's edit of a port ---------------------------------------------------------------------------------
def _port_paths(store: Store, conversion_id: int):
    from tileport.worktrees.conversion import open_conversion_worktree, person_paths

    conv = store.conversion(conversion_id)
    if not conv.get("worktree"):
        raise UserError(f"conversion {conversion_id} has no worktree (it was recorded by `tileport analyze`); "
                        "only a `tileport run` conversion has a port to edit")
    return open_conversion_worktree(conv), person_paths(f"ports/{Path(conv['op_path']).stem}")


def edited_files(store: Store, conversion_id: int) -> list[str]:
    """The port files of a conversion's worktree a person changed and has not committed."""
    from tileport.worktrees.git import uncommitted

    wt, port = _port_paths(store, conversion_id)
    return uncommitted(wt.path, *port, untracked=True)


def commit_human_edit(store: Store, conversion_id: int) -> str:
    """Commit a person's edit of the port on the conversion branch as a human attempt (`Tileport-Human: edit`, no
    stage trailers: not a stage attempt; it leaves A standing, B, D and E recorded before it no longer cover it); the
    new HEAD."""
    from tileport.worktrees.conversion import commit_human

    from tileport.agents.control import holder, run_files

    wt, port = _port_paths(store, conversion_id)
    if (pid := holder(run_files(wt.path))) is not None:
        raise UserError(f"conversion {conversion_id} is run by process {pid}, which may rewrite {port[0]}; stop it "
                        f"first (tileport stop {conversion_id}), then commit the edit")
    if not edited_files(store, conversion_id):
        raise UserError(f"conversion {conversion_id}: {port[0]} has no uncommitted change to commit")
    sha, _ = commit_human(wt, port, f"human edit of {port[0]}")
    store.update_conversion(conversion_id, head_commit=sha)
    store.log_event("human.edit", conversion_id, commit=sha, path=port[0])
    return sha


def ungated_head(store: Store, conversion_id: int) -> str | None:
    """The conversion's HEAD when a person's edit committed after B's newest run has no B run (committed without its
    gates, or its gates stopped), else None: what a resume gates first (`Runner.ungated`, the same rule)."""
    from tileport.worktrees.conversion import ungated_edit

    if not store.conversion(conversion_id).get("worktree"):
        return None  # recorded by `tileport analyze`: no port to edit
    wt, _ = _port_paths(store, conversion_id)
    return ungated_edit(wt, [r.commit for r in queries.stage_runs(store, conversion_id, "B")])


def gate_human_edit(run: "Runner", conversion_id: int, *, commit: bool = False) -> "EditJudged":
    """Stage B's gates on the conversion's committed HEAD (a person's edit), recorded as a B run of it on that
    commit, with the live output and stop of any running stage (`Runner.judge_edit`); `commit`: first commit the
    port's uncommitted edit (`commit_human_edit`). The dashboard's `e` and `tileport build-rust --conversion ID`
    both call this."""
    if commit:
        with run.store() as store:
            commit_human_edit(store, conversion_id)
    return run.judge_edit(conversion_id)


def worked_examples() -> Path | None:
    """The hand-written ports the kernel writer shows as worked examples: the package's copy when installed with
    one, else a source checkout's `ports/`; None when neither exists (the writer then works without examples)."""
    import tileport

    pkg = Path(tileport.__file__).resolve().parent
    for cand in (pkg / "agents" / "worked_ports", pkg.parent / "ports"):
        if cand.is_dir():
            return cand
    return None


# --- gates on a GPU elsewhere ------------------------------------------------------------------------------------
BuildFailed, PackedGate = gate_service.BuildFailed, gate_service.PackedGate
IngestedResults = gate_service.IngestedResults


def pack_gate(config: Config, target: str, *, repo: str | Path | None = None, store: str | Path | None = None,
              op_path: str | None = None, out: str | Path | None = None, commit: str | None = None,
              root: str | Path | None = None, log=None) -> PackedGate:
    """`tileport gate pack TARGET`: a conversion ID (read from the repository's store) or a port / crate dir."""
    if not target.isdigit():
        return gate_service.pack(config, target, store=None, op_path=op_path, out=out, commit=commit, root=root,
                                 log=log)
    with open_store(config, repo, store) as s:
        return gate_service.pack(config, target, store=s, op_path=op_path, out=out, commit=commit, root=root, log=log)


def ingest_results(config: Config, path: str | Path, *, repo: str | Path | None = None,
                   store: str | Path | None = None, conversion_id: int | None = None) -> IngestedResults:
    """`tileport gate ingest results.json`: record D (and E) for the conversion the gate names, only for its
    current head commit (else a one-line UserError and nothing recorded)."""
    with open_store(config, repo, store) as s:
        return gate_service.ingest(s, config, path, conversion_id=conversion_id)


def gate_busy(store: Store, conversion_id: int) -> str | None:
    """Why no gate can be packed or ingested for the conversion now (a stage runs), or None."""
    return gate_service.busy(store, conversion_id)


def likely_results(store: Store, conversion_id: int, roots=()) -> Path:
    """The results.json to offer for ingesting (the newest pack's gate dir, else gates/<op>/ under `roots`)."""
    return gate_service.likely_results(store, conversion_id, roots)


# -- A whole library: `tileport analyze DIR`, `tileport run DIR` -----------------------------------------------------

def find_library(root: str | Path):
    """The library's op files (modules defining @ct.kernel / @triton.jit kernels; see validators.analysis.library)."""
    from tileport.validators.analysis.library import find_library as find

    return find(root)


def analyze_library(config: Config, lib, *, out_root: str | Path, parallel: int = 1, on_done=None, **kw):
    """Stage A on every op of the library, `parallel` at a time, each recorded in the store as `tileport analyze OP`
    records it; returns the library.OpResult per op, in the library's order."""
    from tileport.agents.stages.analyze import result_from_analysis
    from tileport.validators.analysis.library import analyze_library as analyze

    def done(r) -> None:
        if r.analysis is not None:
            from contextlib import closing

            from tileport.agents.record import record_standalone

            with closing(open_store(config)) as store_:
                record_standalone(store_, str(Path(r.path).resolve()), None, result_from_analysis(r.analysis))
        if on_done is not None:
            on_done(r)

    kw["config"] = config
    return analyze(lib, out_root=Path(out_root), jobs=parallel, on_done=done, **kw)


GATE_ORDER = ("A", "B", "D", "E")


def library_rows(config: Config, lib, results=None, *, repo: str | Path | None = None, draft: bool = True) -> list[dict]:
    """Per op of the library: analysed (and why not), whether the deterministic draft is complete, and from the
    repository's store the newest conversion of that op: B's verdict (compiled + IR self-check) and the merge gates
    passed. A plain dict per op, as `--json` writes it."""
    from tileport.records import GATE_PASSES, Stage

    by_path = {Path(r.path).resolve(): r for r in results or []}
    newest: dict[Path, object] = {}
    store_file = store_path(config, repo)
    if store_file.exists():
        from contextlib import closing

        with closing(open_store(config, repo)) as s:
            for c in queries.conversion_summaries(s):
                p = Path(c.op_path).resolve()
                if p not in newest or c.id > newest[p].id:
                    newest[p] = c
    rows = []
    for f in lib.ops:
        p = f.path.resolve()
        r = by_path.get(p)
        row: dict = {"op": str(f.path.relative_to(lib.root)), "kind": f.kind, "kernels": f.kernels,
                     "analysed": None, "why": None, "tests": [], "configurations": None, "seconds": None,
                     "draft": None, "conversion": None, "compiled": None, "gates": None}
        if r is not None:
            row["seconds"] = round(r.seconds, 2)
            if r.analysis is None:
                row["analysed"], row["why"] = "no", r.error
            else:
                a = r.analysis
                missing = [u.kernel for u in getattr(a, "unresolved", []) or []]
                row["analysed"] = "partial" if missing else "yes"
                row["why"] = ("not analysed: " + ", ".join(missing)) if missing else None
                row["tests"] = [str(t) for t in getattr(a, "tests", []) or []]
                cap = getattr(a, "capture", None)
                row["configurations"] = len([c for c in cap.configurations if c.source != "guess"]) if cap else 0
                if draft and f.kind == "cutile":
                    row["draft"] = _draft_state(a)
        c = newest.get(p)
        if c is not None and row["analysed"] is None and c.stages.get("A"):  # `run DIR`: stage A's verdict
            row["analysed"] = "yes" if c.stages["A"] in GATE_PASSES[Stage.ANALYZE] else "no"
            row["why"] = None if row["analysed"] == "yes" else (c.summary or c.error or "")[:300]
        if c is not None:
            row["conversion"] = c.id
            row["compiled"] = c.stages.get("B")
            row["gates"] = {g: (c.stages.get(g) in GATE_PASSES[Stage(g)]) for g in GATE_ORDER}
        rows.append(row)
    return rows


def _draft_state(analysis) -> str:
    """"complete", "N holes" or "no: why" for the deterministic draft of an analysis (nothing written)."""
    from tileport.agents.draft.port import draft_port

    try:
        d = draft_port(analysis)
    except UserError as e:
        return "no: " + " ".join(str(e).split())[:160]
    except Exception as e:  # the translator's own bug on this op: said, not raised
        return f"no: {type(e).__name__}: {' '.join(str(e).split())[:140]}"
    return "complete" if not d.holes else f"{len(d.holes)} hole{'s' * (len(d.holes) != 1)}"


def library_conversions(run: "Runner", lib, *, repo: str | Path = ".") -> list[int]:
    """A conversion per cuTile op of the library (the existing one of an op when there is one): queued for
    `drive_many`. Triton ops are analysed, not converted (convert their cuTile twin)."""
    ops = [f.path for f in lib.ops if f.kind == "cutile"]
    if not ops:
        raise UserError(f"{lib.root}: no cuTile Python op to convert (only Triton kernels); tileport analyze "
                        f"{lib.root} analyses them")
    return start_or_reuse(run, ops, repo=repo)
