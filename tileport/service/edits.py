"""A person's edit of a port: what changed, commit it as a human attempt, and stage B's gates on it (the dashboard's
`e`, `tileport build-rust --conversion ID [--commit]`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tileport.errors import UserError
from tileport.store import Store, queries

if TYPE_CHECKING:
    from tileport.pipeline.runner import ConversionRunner, EditJudged


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


def why_not_edit(store: Store, conversion_id: int, *, running_here: bool = False) -> str | None:
    """Why a person may not edit the port now (a stage that may rewrite kernel.rs runs), or None."""
    from tileport.pipeline.control import conversion_holder

    conv = store.conversion(conversion_id)
    if running_here or conv.get("status") == "running" or conversion_holder(conv) is not None:
        return (f"conversion {conversion_id} is running a stage that may rewrite kernel.rs; stop it first (x), "
                "then edit")
    return None


def commit_human_edit(store: Store, conversion_id: int) -> str:
    """Commit a person's edit of the port on the conversion branch as a human attempt (`Tileport-Human: edit`, no
    stage trailers: not a stage attempt; it leaves A standing, B, D and E recorded before it no longer cover it); the
    new HEAD."""
    from tileport.pipeline.control import holder, run_files
    from tileport.worktrees.conversion import commit_human

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
    gates, or its gates stopped), else None: what a resume gates first (`ConversionRunner.ungated`, the same
    rule)."""
    from tileport.worktrees.conversion import ungated_edit

    if not store.conversion(conversion_id).get("worktree"):
        return None  # recorded by `tileport analyze`: no port to edit
    wt, _ = _port_paths(store, conversion_id)
    return ungated_edit(wt, [r.commit for r in queries.stage_runs(store, conversion_id, "B")])


def judge_edit(run: "ConversionRunner", conversion_id: int, *, commit: bool = False) -> "EditJudged":
    """Stage B's gates on the conversion's committed HEAD (a person's edit), recorded as a B run of it on that
    commit, with the live output and stop of any running stage (`ConversionRunner.judge_edit`); `commit`: first
    commit the port's uncommitted edit (`commit_human_edit`). The dashboard's `e` and `tileport build-rust
    --conversion ID` both call this."""
    if commit:
        with run.store() as store:
            commit_human_edit(store, conversion_id)
    return run.judge_edit(conversion_id)
