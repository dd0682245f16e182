"""The Textual app: renders the store, sends the user's commands to the runner and the approval rules.

Live updates come from the store's append-only event log: every `poll_interval` the app reads the
events after the last one it saw and refreshes only the conversions they touch, so another process
(`tileport run`, a second dashboard) shows up live and 1,000 events a second cost one query per tick.
Long work (a conversion, an IR diff) runs in thread workers, one exclusive group per conversion.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from textual import work
from textual.app import App, SuspendNotSupported
from textual.binding import Binding
from textual.message import Message

from tileport.config import Config
from tileport.errors import UserError
from tileport import service
from tileport.store import queries
from tileport.tui._conversion_screen import ConversionScreen, event_line
from tileport.tui._gpu_actions import GpuCommands
from tileport.tui._main_screen import MainScreen
from tileport.tui._modals import HelpScreen, QuitScreen, ReasonScreen, StoppingScreen
from tileport.tui._palette import TileportCommands
from tileport.tui.actions import Actions, describe
from tileport.tui.view import (STAGE_NAMES, changed_conversions, conversion_rows, elapsed_text, newest_event_id,
                               next_step, running_stages)

EVENTS_PER_TICK = 20_000  # events read per poll; more than that waits for the next tick
READONLY_KEYS = {"s": "start", "x": "stop", "r": "rerun", "a": "approve", "j": "reject", "m": "merge", "e": "edit",
                 "c": "convert", "i": "ingest", "g": "GPU pack"}
WRITE_ACTIONS = {"start", "stop", "rerun", "approve", "reject", "merge", "edit", "convert", "ingest", "pack_port"}


def _clip_words(text: str, width: int) -> str:
    """`text` cut at a word boundary (never inside a word like `ConnectError`), with … when cut."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return text[: cut if cut > width // 2 else width].rstrip(",;:") + " …"


class DrivesChanged(Message):
    """A drive of this dashboard started or ended (posted from its thread): what "running here" means changed."""

    def __init__(self, conversion_id: int) -> None:
        super().__init__()
        self.conversion_id = conversion_id


class TileportApp(GpuCommands, App):
    TITLE = "tileport"
    SUB_TITLE = "cuTile Python -> cuTile Rust"
    CSS_PATH = "tileport.tcss"
    COMMANDS = App.COMMANDS | {TileportCommands}
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("ctrl+c", "interrupt", "quit", show=False, priority=True),
        Binding("question_mark", "help", "help"),
        Binding("s", "start", "start/resume"),
        Binding("x", "stop", "stop"),
        Binding("c", "convert", "convert…"),
        Binding("u", "summary", "summary", show=False),
        Binding("ctrl+p", "command_palette", "commands", show=False),
    ]

    def __init__(self, store_path: str | Path, config: Config | None = None, *, repo: str | Path | None = None,
                 readonly: bool = False, poll_interval: float = 0.25, doctor: bool = True,
                 autostart: list[str] | None = None, model: str | None = None) -> None:
        super().__init__()
        self.store_path = Path(store_path)
        self.config = config or Config()
        self.repo = Path(repo) if repo else None
        self.readonly = readonly
        self.poll_interval = poll_interval
        self.run_doctor = doctor
        self.autostart = list(autostart or [])
        self.caps = self.config.caps.model_dump()
        self.gate = self.config.perf.geomean_max
        self.actions = Actions(self.store_path, self.config, self.repo, readonly, model=model)
        self.actions.on_change = lambda cid: self.post_message(DrivesChanged(cid))  # thread-safe, never blocks
        self.store = service.open_store(self.config, store=self.store_path)  # the read model's connection
        self._last_event = newest_event_id(self.store)
        self.toolchain_text = "toolchain: checking ..."
        self.events_seen = 0  # for the benchmark and tests: events rendered so far
        self.exit_text: str | None = None  # printed by the CLI after the screen is gone (what quitting did)
        self.gpu_detail: str | None = None  # the doctor's word on the GPU, for the next-step line
        self._work_since: float | None = None  # when this dashboard's current batch of work started
        self._a_run = False  # whether that batch started conversions (a run), not only resumed or reran one
        self.summary_text: str | None = None

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """A read-only dashboard does not offer writes in the footer (pressing one still says why, on_key)."""
        if self.readonly and action in WRITE_ACTIONS:
            return False
        return True

    def on_key(self, event) -> None:
        if self.readonly and event.key in READONLY_KEYS:
            self.notify(f"{READONLY_KEYS[event.key]}: read-only dashboard (started with --readonly): use the CLI "
                        "or a writable dashboard", severity="warning")

    # --- lifecycle ---------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.readonly:
            self.sub_title += "  [read-only]"
        self.push_screen(MainScreen())
        self.set_interval(self.poll_interval, self.poll_store)
        if self.run_doctor:
            self._doctor()
        else:
            self._set_toolchain("toolchain: not checked")
        if self.autostart and not self.readonly:
            self.run_worker(self._autostart, thread=True, group="start", exit_on_error=False)
        self.set_interval(0.5, self._watch_work)
        self._signals = self._catch_signals()

    def _catch_signals(self) -> list:
        """SIGINT/SIGTERM from outside (kill, a closing terminal's session leader) mean stop: the work is stopped
        (the attempts recorded as interrupted) before the screen goes, never left converting unseen behind it."""
        import asyncio
        import signal

        loop, caught = asyncio.get_running_loop(), []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._signalled)
                caught.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal here
                pass
        return caught

    def _signalled(self) -> None:
        if self.actions.closing:
            return  # already stopping: it ends within seconds
        if self.actions.running_here() or self.actions.queued_here():
            self._quit_chosen("stop")
        else:
            self.actions.closing = True
            self.exit()

    def _watch_work(self) -> None:
        """When a run this dashboard started (the default run, `c`) has all ended, show the end-of-run summary once.
        A single resume or rerun is not a run: its own line says how it ended, and no summary covers it up."""
        import time

        starting = any(w.group == "start" and w.is_running for w in self.workers)
        busy = starting or bool(set(self.actions.running_here()) - self.actions.judging)  # a person's gates: no summary
        if busy and self._work_since is None:
            self._work_since, self._a_run = time.monotonic(), False
        if starting:
            self._a_run = True
        elif not busy and self._work_since is not None and not self.actions.closing:
            seconds, self._work_since = time.monotonic() - self._work_since, None
            if self._a_run:
                self.show_summary(seconds)

    def _mark_run(self) -> None:
        """Called by a start job (any thread): this batch is a run, even one that ends before the watcher's tick."""
        import time

        if self._work_since is None:
            self._work_since = time.monotonic()
        self._a_run = True

    def show_summary(self, seconds: float | None = None) -> None:
        from tileport.tui._modals import SummaryScreen
        from tileport.tui.view import run_summary

        rows = conversion_rows(self.store, self.caps)
        summary = run_summary(rows, seconds or 0.0)
        text = summary.text()
        if seconds is None:
            text = text.replace(f" in {elapsed_text(0)}", "", 1)
        step = next_step(rows, list(self.config.targets), self.gpu_detail, self.config.gpu.command_prefix)
        if step:  # above the per-conversion list: the one thing to do first, visible without scrolling at 80x24
            counts, _, needs = text.partition("\nneeds a person")
            text = f"{counts}\n\n{step}\n\nneeds a person{needs}"
        self.summary_text = text
        if not isinstance(self.screen, SummaryScreen):
            self.push_screen(SummaryScreen(text))

    def action_summary(self) -> None:
        self.show_summary()

    def action_convert(self) -> None:
        if self.readonly:
            self.notify("convert: read-only dashboard (started with --readonly)", severity="warning")
            return

        def chosen(path: str | None) -> None:
            if not path:
                return
            op = Path(path).expanduser()

            def job():
                self._mark_run()
                try:
                    ops = [str(op)]
                    if op.is_dir():  # a library: every cuTile op file in it (tileport run DIR)
                        from tileport import service

                        ops = [str(f.path) for f in service.find_library(op).ops if f.kind == "cutile"]
                    cids = self.actions.start(ops, background_note=self.notify_from_thread)
                except UserError as e:
                    self.call_from_thread(self.notify, f"convert: {e}", severity="error", timeout=10)
                else:
                    self.call_from_thread(self.notify, f"convert {op.name}: conversion "
                                          f"{', '.join(f'#{c}' for c in cids)} ran; see the list", timeout=8)
            self.run_worker(job, thread=True, group="start", exit_on_error=False)
        repo = self.actions.repo
        self.push_screen(ReasonScreen(f"Convert which op? The path of a cuTile Python file, or a library's directory "
                                      f"for every op file in it (its conversion branches from the repository {repo}; "
                                      f"another repository: `tileport tui --repo DIR`)",
                                      placeholder="path/to/op.py or path/to/library",
                                      required="type the path of a .py file or a directory, or escape"),
                         chosen)

    def notify_from_thread(self, text: str) -> None:
        self.call_from_thread(self.notify, text, timeout=8)

    def _autostart(self) -> None:
        self._mark_run()
        try:
            self.actions.start(self.autostart)
        except UserError as e:
            self.call_from_thread(self.notify, f"start: {e}", severity="error", timeout=10)

    def on_unmount(self) -> None:
        import asyncio

        for sig in getattr(self, "_signals", []):
            asyncio.get_running_loop().remove_signal_handler(sig)
        self.store.close()

    def _set_toolchain(self, text: str) -> None:
        self.toolchain_text = text
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen) and screen.is_mounted:
                screen.show_toolchain(text)

    @work(thread=True, group="doctor")
    def _doctor(self) -> None:
        from tileport.service.environment import run_checks

        checks = {c.name: c for c in run_checks(self.config)}
        gpu = checks.get("gpu")
        if gpu is not None and gpu.status != "ok":
            self.gpu_detail = _clip_words(gpu.detail, 90)
        keys = ("model-endpoint", "gpu", "cargo", "tileiras", "cutile-crates")
        parts = []
        for k in keys:
            c = checks.get(k)
            if c is not None:
                parts.append(f"{k} {c.status}" + (f" ({_clip_words(c.detail, 90)})" if k in ("model-endpoint", "gpu")
                                                  else ""))
        self.call_from_thread(self._set_toolchain, "toolchain: " + "  ".join(parts))

    # --- live updates ------------------------------------------------------------------------
    def poll_store(self) -> None:
        if not self.is_running:
            return  # shutting down: the screens lose their widgets while a tick can still land
        last, touched, events = changed_conversions(self.store, self._last_event, EVENTS_PER_TICK)
        if not events:
            return
        self._last_event = last
        self.events_seen += len(events)
        for screen in self.screen_stack:
            handler = getattr(screen, "store_changed", None)
            # a screen pushed but not composed yet has no widgets to update (it reads the store when it mounts);
            # calling it crashed the dashboard when events arrived right after enter opened a conversion; nor one
            # of a dashboard on its way out (exit asked: not attached), whose widgets are going away
            if handler is not None and screen.is_mounted and screen.is_attached:
                handler(touched, events)
        for ev in events:
            if ev["kind"] == "stage.finished" and isinstance(self.screen, MainScreen):
                pass  # the table shows it; toasts are for the conversion the user watches

    def on_drives_changed(self, message: DrivesChanged) -> None:
        """A drive ended after its last store event (or started): redraw what depends on "running here", which
        would otherwise keep saying "running" until the next store change."""
        for screen in self.screen_stack:
            handler = getattr(screen, "drives_changed", None)
            if handler is not None and screen.is_mounted:
                handler(message.conversion_id)
        if isinstance(self.screen, QuitScreen) and not self.actions.closing:
            running, queued = self.actions.running_here(), self.actions.queued_here()
            self.screen.show(self._running_lines(running), len(queued))

    # --- navigation --------------------------------------------------------------------------
    def open_conversion(self, conversion_id: int) -> None:
        self.push_screen(ConversionScreen(conversion_id))

    def palette_conversions(self):
        return conversion_rows(self.store, self.caps)[:200]

    def current_id(self) -> int | None:
        screen = self.screen
        if isinstance(screen, ConversionScreen):
            return screen.conversion_id
        if isinstance(screen, MainScreen):
            return screen.selected_id()
        return None

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # --- actions: each asks the owning layer first and says why not -------------------------------
    def _refuse(self, action: str, cid: int | None) -> bool:
        if cid is None and action not in ("start",):
            self.notify(f"{action}: select a conversion first", severity="warning")
            return True
        reason = self.actions.why_not(action, cid)
        if reason:
            self.notify(f"{action}: {reason}", severity="warning", timeout=6)
            return True
        return False

    def _background(self, action: str, cid: int, *args) -> None:
        def job():
            try:
                result = self.actions.do(action, cid, *args)
            except UserError as e:
                self.call_from_thread(self.notify, f"{action}: {e}", severity="error", timeout=8)
            else:
                if not self.actions.closing:
                    self.call_from_thread(self.notify, describe(action, cid, result), timeout=8)
        group = f"stop-{cid}" if action == "stop" else f"conv-{cid}"
        self.run_worker(job, thread=True, group=group, exclusive=action != "stop", exit_on_error=False)

    # --- quitting: never leave work running unseen --------------------------------------------
    def _running_lines(self, ids: list[int]) -> list[str]:
        rows = {r.id: r for r in conversion_rows(self.store, self.caps, ids)}
        now = running_stages(self.store, ids)
        out = []
        for cid in ids:
            r, st = rows.get(cid), now.get(cid)
            where = (f"{st.stage} {STAGE_NAMES.get(st.stage, '')} attempt {st.attempt}, {elapsed_text(st.elapsed())}"
                     if st else "between stages")
            out.append(f"#{cid} {r.op if r else '?'}: {where}")
        return out

    def action_quit(self) -> None:
        running, queued = self.actions.running_here(), self.actions.queued_here()
        if not running and not queued:
            self.actions.closing = True
            self.exit()
            return
        if isinstance(self.screen, (QuitScreen, StoppingScreen)):
            return
        self.push_screen(QuitScreen(self._running_lines(running), queued=len(queued)), self._quit_chosen)

    def action_interrupt(self) -> None:
        """ctrl+c: the quit question; a second ctrl+c while it is open answers it: stop them (never a traceback)."""
        if isinstance(self.screen, QuitScreen):
            self.screen.dismiss("stop")
        else:
            self.action_quit()

    def _quit_chosen(self, choice: str | None) -> None:
        if choice in ("stop", "background"):
            # what runs and waits at the moment of choosing (not when q was pressed); from here nothing new starts
            ids, queued = self.actions.close()
            if not ids and not (queued and choice == "background"):
                self.exit_text = self._not_started(queued)  # it finished while the dialog was open
                self.exit(None, 0, self.exit_text)
                return
            self.push_screen(StoppingScreen(f"stopping {len(ids)} conversion{'s' * (len(ids) != 1)}: killing their "
                                            "tools, recording the attempts as interrupted ..."))
            self.run_worker(lambda: self._stop_and_exit(ids, choice == "background", queued), thread=True,
                            group="quit", exit_on_error=False)

    @staticmethod
    def _not_started(queued: list[int]) -> str | None:
        if not queued:
            return None
        return (f"tileport: {' '.join(f'#{c}' for c in queued)} not started (pending; "
                "`tileport run --resume ID` or s in the dashboard starts one)")

    def _stop_and_exit(self, ids: list[int], background: bool, queued: list[int] = (), wait_s: float = 20.0,
                       ) -> None:
        """Stop this dashboard's drives; with `background`, hand them and the queued ones (never started here) to a
        detached process, so "leave them running" finishes the whole run, not only the conversions running now."""
        import time

        runner = self.actions._runner
        forced = dict(self.actions.forced)  # a rerun stopped here is a rerun in the background too
        for cid in ids:
            if runner is not None:
                runner.stop(cid)
        deadline = time.monotonic() + wait_s
        while self.actions.running_here() and time.monotonic() < deadline:
            time.sleep(0.05)
        left = self.actions.running_here()
        stopped = [c for c in ids if c not in left]
        lines = [f"tileport: stopped {' '.join(f'#{c}' for c in stopped)} (attempts recorded as interrupted; "
                 "resume: `tileport run --resume ID` or s in the dashboard)"] if stopped else []
        if left:
            lines.append(f"tileport: {' '.join(f'#{c}' for c in left)} still finishing a step after {wait_s:g} s")
        handed = [*stopped, *(c for c in queued if c not in ids)]
        if background and handed:
            from tileport.tui._background import spawn

            handoff = spawn(self.actions.config, self.actions.model, handed, self.store_path.parent / "background",
                            forced=forced)
            lines = [handoff.text()] + lines[1:]
        elif queued:
            lines.append(self._not_started(queued))
        text = "\n".join(lines) or None
        self.exit_text = text
        self.call_from_thread(self.exit, None, 0, text)

    def action_start(self) -> None:
        cid = self.current_id()
        if cid is None:
            self.notify("start: select a conversion (new ones: `tileport run OP.py` or the palette)",
                        severity="warning")
            return
        if not self._refuse("resume", cid):
            self._background("resume", cid)
            self.notify(f"resuming #{cid}")

    def action_stop(self) -> None:
        cid = self.current_id()
        if not self._refuse("stop", cid):
            self.notify(f"stopping #{cid}: killing its running tool ...")
            self._background("stop", cid)

    def action_rerun(self) -> None:
        cid = self.current_id()
        if self._refuse("rerun", cid):
            return

        def chosen(stage: str | None) -> None:
            if not stage:
                return
            stage = stage.strip().upper()
            reason = self.actions.why_not("rerun", cid, stage=stage)
            if reason:
                self.notify(f"rerun {stage}: {reason}", severity="warning")
            else:
                self._background("rerun", cid, stage)
        self.push_screen(ReasonScreen("Rerun which stage? (A, B, C, D, E or F)", placeholder="stage letter: A-F",
                                      required="type a stage letter (A-F), or escape"), chosen)

    def action_approve(self) -> None:
        cid = self.current_id()
        if not self._refuse("approve", cid):
            self._background("approve", cid)

    def action_reject(self) -> None:
        cid = self.current_id()
        if self._refuse("reject", cid):
            return

        def chosen(reason: str | None) -> None:
            if reason:
                self._background("reject", cid, reason)
        self.push_screen(ReasonScreen(f"Reject conversion #{cid}: why? (stored with the rejection)"), chosen)

    def action_merge(self) -> None:
        cid = self.current_id()
        if not self._refuse("merge", cid):
            self._background("merge", cid)

    # --- hand-offs to the user's tools ---------------------------------------------------------
    def _external(self, argv: list[str], cwd: Path | None = None) -> None:
        def hand_off() -> None:
            try:
                subprocess.run(argv, cwd=cwd)
            except OSError as e:
                self.notify(f"cannot run {argv[0]}: {e}", severity="error")
        try:
            with self.suspend():
                hand_off()
        except SuspendNotSupported:  # no terminal to hand over (headless, the web): the program runs without one
            hand_off()

    def action_edit(self) -> None:
        screen = self.screen
        cid = self.current_id()
        path = screen.kernel_path() if isinstance(screen, ConversionScreen) else None
        if path is None or cid is None:
            self.notify("edit: this conversion has no kernel.rs in its worktree yet (stage B writes it)",
                        severity="warning")
            return
        if self.readonly:
            self.notify(f"read-only: kernel.rs is at {path}", severity="warning")
            return
        reason = self.actions.why_not_edit(cid)
        if reason:
            self.notify(f"edit: {reason}", severity="warning", timeout=8)
            return
        self._external([*shlex.split(os.environ.get("EDITOR", "vi")), str(path)])
        if not self.actions.edited(cid):
            self._offer_gates(cid)
            return

        def chosen(answer: str | None) -> None:
            answer = (answer or "").strip().lower()
            if answer not in ("y", "c"):
                self.notify(f"#{cid}: your edit stays uncommitted in {path.parent} (a resume or rerun discards "
                            "uncommitted changes; press e again to commit it)", severity="warning", timeout=10)
                return
            self._edit_job(cid, commit=True, judge=answer == "y")
        self.push_screen(ReasonScreen(f"kernel.rs of #{cid} changed. y: commit it as a human attempt and re-run "
                                      "B's gates on it; c: commit only; n: leave it uncommitted",
                                      placeholder="y / c / n", required="type y, c or n (escape: n)"), chosen)

    def _offer_gates(self, cid: int) -> None:
        """kernel.rs unchanged: offer B's gates when HEAD (an edit committed earlier) has none yet."""
        head = self.actions.ungated_head(cid)
        if head is None:
            self.notify(f"edit #{cid}: kernel.rs unchanged; nothing to commit")
            return
        self.push_screen(ReasonScreen(f"kernel.rs unchanged, but HEAD {head[:10]} of #{cid} has no B run. y: run B's "
                                      "gates on it (build, Tile IR, self-check); n: leave it",
                                      placeholder="y / n", required="type y or n (escape: n)"),
                         lambda answer: (answer or "").strip().lower() == "y" and self._edit_job(cid, judge=True))

    def _edit_job(self, cid: int, *, commit: bool = False, judge: bool = False) -> None:
        """Commit the edit as a human attempt and/or run B's gates on HEAD (a B run on it, shown running, then in
        the timeline), in a worker of this conversion's group; each step says what it did."""
        def job():
            try:
                if commit:
                    sha = self.actions.commit_human_edit(cid)
                    self.call_from_thread(self.notify, f"#{cid}: committed your edit as a human attempt {sha[:10]}"
                                          + ("; running B's gates (build, Tile IR, self-check) ..." if judge else ""),
                                          timeout=8)
                if judge:
                    judged = self.actions.judge_edit(cid)
                    self.call_from_thread(self.notify, judged.text, timeout=15,
                                          severity="information" if judged.exit_code == 0 else "error")
            except UserError as e:
                self.call_from_thread(self.notify, f"edit #{cid}: {e}", severity="error", timeout=10)
        self.run_worker(job, thread=True, group=f"conv-{cid}", exclusive=True, exit_on_error=False)

    def action_shell(self) -> None:
        cid = self.current_id()
        rows = conversion_rows(self.store, self.caps, [cid]) if cid is not None else []
        if not rows or not rows[0].worktree or not Path(rows[0].worktree).is_dir():
            self.notify("this conversion has no worktree on disk", severity="warning")
            return
        self._external([os.environ.get("SHELL", "/bin/sh")], cwd=Path(rows[0].worktree))

    def action_pager(self) -> None:
        cid = self.current_id()
        if cid is None:
            return
        lines = [event_line(ev).plain for ev in self.store.events(cid)]
        for run in queries.stage_runs(self.store, cid):
            lines.append(f"--- {run.stage}{run.attempt} {run.verdict}: {run.summary}")
        with tempfile.NamedTemporaryFile("w", suffix=f"-conversion-{cid}.log", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        self._external([*shlex.split(os.environ.get("PAGER", "less")), f.name])
        Path(f.name).unlink(missing_ok=True)
