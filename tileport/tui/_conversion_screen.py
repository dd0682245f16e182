"""One conversion: stage timeline, retry counters, commands, artifacts, live log, IR diff, performance, code and
the model transcript of the picked stage run.

Only the active tab is drawn: a store change (a stage run finished, a new one started) bumps the screen's revision
and redraws the header, the timeline and the tab on screen; another tab is drawn when it is switched to, and only
when what it shows changed since it was last drawn (its key: the revision, or the stage run it shows). A log line
only appends to the log. So a tab switch while 4 conversions run costs one tab's drawing, not every tab's.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.text import Text
from tileport.analysis.triton.record import reference_summary
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, RichLog, Static, TabbedContent, TabPane, Tabs

from tileport.exec.sandbox import tool_argv
from tileport.store import queries
from tileport.tui._code_view import MODES, CodeView
from tileport.tui._detail import RowDetails
from tileport.tui._ir_diff_view import IRDiffView
from tileport.tui._perf_view import PerfPanel
from tileport.tui._transcript_view import TranscriptView
from tileport.tui.view import (STAGE_NAMES, STAGE_ORDER, AttemptRow, LiveTail, conversion_rows, elapsed_text,
                               ir_pairs, perf_view, timeline, verdict_style)

LOG_LINES = 2000  # bounded scrollback; `l` opens the whole log in $PAGER
LIVE_LINES = 500  # the running stage's tool output kept on screen


LAZY_TABS = (("irdiff", "IR diff"), ("perf", "Performance"), ("code", "Code"), ("transcript", "Transcript"))


def lazy_content(tab: str):
    """A lazy tab's widgets, mounted the first time it is shown: opening a conversion composes only the rest."""
    if tab == "irdiff":
        return Horizontal(DataTable(id="ir-pair-list", cursor_type="row"), IRDiffView(id="ir-view"), id="ir-layout")
    return {"perf": lambda: PerfPanel(id="perf-panel"), "code": lambda: CodeView(id="code-view"),
            "transcript": lambda: TranscriptView(id="transcript-view")}[tab]()


TIMELINE_KEYS = ("n", "stage", "attempt", "verdict", "class", "secs", "tokens", "next", "why", "commit", "summary")


def event_line(ev: dict) -> Text:
    payload = ev.get("payload") or {}  # decoded by the store (store.events, queries.events_after)
    line = Text(f"{(ev.get('ts') or '')[11:19]} ", style="dim")
    kind = ev.get("kind", "")
    if kind == "log":
        line.append(str(payload.get("text", "")))
        return line
    line.append(kind, style="bold")
    verdict = payload.get("verdict")
    if verdict:
        line.append(f" {payload.get('stage', '')}{payload.get('attempt', '')} ")
        line.append(str(verdict), style=verdict_style(verdict))
        if payload.get("routed_to"):
            line.append(f" -> {payload['routed_to']}")
    rest = {k: v for k, v in payload.items() if k not in ("verdict", "stage", "attempt", "routed_to", "stage_run_id")}
    if rest:
        line.append(" " + " ".join(f"{k}={v}" for k, v in rest.items()), style="dim")
    return line


class ConversionScreen(RowDetails, Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("1", "tab('timeline')", "timeline", show=False),
        Binding("2", "tab('commands')", "commands", show=False),
        Binding("3", "tab('artifacts')", "artifacts", show=False),
        Binding("4", "tab('log')", "log", show=False),
        Binding("5", "tab('irdiff')", "IR diff"),
        Binding("6", "tab('perf')", "perf"),
        Binding("7", "tab('code')", "code"),
        Binding("8", "tab('transcript')", "transcript", show=False),
        Binding("v", "code_mode", "code view", show=False),
        Binding("left", "scroll_x(-1)", "scroll left", show=False, priority=True),
        Binding("right", "scroll_x(1)", "scroll right", show=False, priority=True),
        Binding("n", "ir('next')", "next diff", show=False),
        Binding("N", "ir('prev')", "prev diff", show=False),
        Binding("d", "ir('differences')", "differences only", show=False),
        Binding("r", "app.rerun", "rerun stage"),
        Binding("a", "app.approve", "approve"),
        Binding("j", "app.reject", "reject"),
        Binding("m", "app.merge", "merge"),
        Binding("e", "app.edit", "edit kernel.rs"),
        Binding("o", "app.shell", "worktree shell", show=False),
        Binding("l", "app.pager", "full log"),
        Binding("i", "app.ingest", "ingest results…", show=False),  # the perf tab's gate line names them
        Binding("g", "app.pack_port", "GPU pack", show=False),
    ]

    def __init__(self, conversion_id: int) -> None:
        super().__init__()
        self.conversion_id = conversion_id
        self._attempts: list[AttemptRow] = []
        self._pairs = []
        self._live: LiveTail | None = None
        self._code_mode = 0
        self._interrupted: set[str] = set()  # timeline keys of the interrupted attempts shown
        self._code_gen = 0  # bumped by every code view request (_load_code)
        self._commands: list[queries.CommandRow] = []
        self._artifacts: list[queries.ArtifactRow] = []
        self._selected_run: int | None = None
        self._running_row = False
        self._running_cells: dict[str, object] = {}
        self._ready = False  # on_mount has made the tables' columns
        self._rev = 0  # bumped by every store change to this conversion other than a log line
        self._drawn: dict[str, object] = {}  # tab -> the key it was last drawn for (see _draw_tab)
        self._shown: dict[str, object] = {}  # widget id -> the text it shows (an unchanged text is not re-laid out)
        self._log_upto: int | None = None  # the newest event in the log tab; None until it is first shown
        self._mounted: dict[str, bool] = {}  # lazy tab -> mounted yet (False while it mounts)

    def compose(self) -> ComposeResult:
        yield Static("", id="conv-head")
        yield Static("", id="conv-counters")
        with TabbedContent(initial="timeline"):
            with TabPane("Timeline", id="timeline"):
                with Vertical():
                    yield DataTable(id="timeline-table", cursor_type="row", zebra_stripes=True)
                    yield Static("", id="now")
                    yield RichLog(id="live", max_lines=LIVE_LINES, wrap=False)
            with TabPane("Commands", id="commands"):
                with Vertical():
                    yield Static("", id="commands-of", classes="run-of")
                    yield DataTable(id="commands-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Artifacts", id="artifacts"):
                with Vertical():
                    yield Static("", id="artifacts-of", classes="run-of")
                    yield DataTable(id="artifacts-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Log", id="log"):
                yield RichLog(id="conv-log", max_lines=LOG_LINES, wrap=False)
            for tab, label in LAZY_TABS:  # their content is mounted when first shown (_mount_tab)
                yield TabPane(label, id=tab)
        yield Static("", id="why-not")
        yield Static("", id="keys")

    def on_mount(self) -> None:
        t = self.query_one("#timeline-table", DataTable)
        for key, label in zip(TIMELINE_KEYS, ("#", "stage", "attempt/cap", "verdict", "class", "seconds", "tokens",
                                              "routed to", "why", "commit", "summary")):
            t.add_column(label, key=key)
        c = self.query_one("#commands-table", DataTable)
        for key, label in (("seq", "#"), ("exit", "exit"), ("secs", "seconds"), ("argv", "command"), ("cwd", "cwd")):
            c.add_column(label, key=key)
        a = self.query_one("#artifacts-table", DataTable)
        for key, label in (("kind", "kind"), ("bytes", "bytes"), ("sha", "sha256"), ("path", "path")):
            a.add_column(label, key=key)
        self._ready = True
        self.refresh_all()
        self.query_one("#timeline-table", DataTable).focus()
        self._show_keys()
        self._tick_running()
        self.set_interval(0.5, self._tick_running)

    # --- data ------------------------------------------------------------------------------
    def _update(self, selector: str, text) -> None:
        """Static.update only when the text changed: every update re-lays the screen out."""
        if self._shown.get(selector) != text:
            self._shown[selector] = text
            self.query_one(selector, Static).update(text)

    def refresh_all(self) -> None:
        self._rev += 1
        app = self.app
        rows = conversion_rows(app.store, app.caps, [self.conversion_id])
        if not rows:
            self._update("#conv-head", f"conversion {self.conversion_id} is not in the store")
            return
        row = rows[0]
        head = Text(no_wrap=True, overflow="ellipsis")  # two lines at any width; enter on a row has the rest
        head.append(f"#{row.id} {row.op} {row.kernel}  ", style="bold")
        head.append(row.status, style=verdict_style(row.verdict) if row.status != "running" else "yellow")
        head.append(f"  approval {row.approval}  head {(row.head_commit or '-')[:10]}")
        head.append(f"\nbranch {row.branch or '-'}  worktree {row.worktree or '-'}", style="dim")
        ref = reference_summary(queries.stage_runs(app.store, self.conversion_id, "A"))
        if ref:
            head.append(f"\n{ref}", style="yellow" if "IR gate" in ref else "")
        self._update("#conv-head", head)
        since = f" since edit {row.round_commit[:10]}" if row.round_commit else ""  # the caps' round, as routed
        counters = Text(f"retries{since}: ", no_wrap=True, overflow="ellipsis")
        for s in STAGE_ORDER:
            n, cap = row.attempts[s]
            label = f"{s} {n}/{cap}  " if self.size.width and self.size.width < 120 else f"{s} {STAGE_NAMES[s]} {n}/{cap}  "
            counters.append(label, style="red" if cap and n >= cap else "")
        self._update("#conv-counters", counters)
        self._refresh_timeline()
        self._refresh_why_not()
        self._draw_tab(self.query_one(TabbedContent).active)

    def drives_changed(self, conversion_id: int) -> None:
        """This dashboard's drive of the conversion started or ended: the merge line says "running" by that."""
        if conversion_id == self.conversion_id and self._ready:
            self._refresh_why_not()

    def _refresh_why_not(self) -> None:
        reason = self.app.actions.why_not("merge", self.conversion_id)
        self._update("#why-not", Text(f"merge: {'ready (every gate passed on HEAD, approved)' if reason is None else reason}",
                                      style="dim"))

    # --- each tab drawn when it is on screen and what it shows changed -------------------------------------
    def _tab_key(self, tab: str) -> object:
        if tab in ("commands", "artifacts", "transcript"):
            return self._selected_run
        if tab == "code":
            return (self._rev, self._code_mode, self._selected_run)
        if tab == "log":
            return "loaded"  # read once, on first show; then each new event appends (store_changed)
        return self._rev  # irdiff, perf: whatever the newest runs say

    def _draw_tab(self, tab: str) -> None:
        if tab in dict(LAZY_TABS) and tab not in self._mounted:
            self._mounted[tab] = False
            self.run_worker(self._mount_tab(tab), group=f"mount-{tab}")
        if self._mounted.get(tab) is False:
            return  # drawn once mounted
        key = self._tab_key(tab)
        if self._drawn.get(tab, ()) == key:
            return
        self._drawn[tab] = key
        draw = {"log": self._draw_log, "commands": self._draw_commands, "artifacts": self._draw_artifacts, "irdiff": self._refresh_pairs,
                "perf": self._draw_perf, "code": self._load_code, "transcript": self._draw_transcript}.get(tab)
        if draw is not None:
            draw()

    async def _mount_tab(self, tab: str) -> None:
        await self.query_one(f"#{tab}", TabPane).mount(lazy_content(tab))
        self._mounted[tab] = True
        if self.query_one(TabbedContent).active == tab:
            self._draw_tab(tab)
            self._focus_tab(tab)

    def _focus_tab(self, tab: str) -> None:
        for widget in self.query(self.FOCUS[tab]):  # none yet while a lazy tab mounts: it focuses itself then
            widget.focus()

    def _draw_log(self) -> None:
        """The conversion's events so far, in one write (a line per event would lay out 2,000 times)."""
        events = self.app.store.events(self.conversion_id)[-LOG_LINES:]
        if events:
            self.query_one("#conv-log", RichLog).write(Text("\n").join(event_line(ev) for ev in events))
        self._log_upto = events[-1]["id"] if events else 0

    def _draw_perf(self) -> None:
        pv = perf_view(self.app.store, self.conversion_id, self.app.gate)
        if pv != self._shown.get("#perf-panel"):
            self._shown["#perf-panel"] = pv
            self.query_one("#perf-panel", PerfPanel).show(pv)

    def _run_label(self, run_id: int | None) -> str:
        run = next((a for a in self._attempts if a.run_id == run_id), None)
        return (f"{run.stage} {STAGE_NAMES.get(run.stage, '')} attempt {run.attempt} ({run.verdict})" if run
                else f"run {run_id}")

    def _draw_transcript(self) -> None:
        from tileport.agents.transcripts import load_transcript

        view = self.query_one("#transcript-view", TranscriptView)
        run_id = self._selected_run
        if run_id is None:
            view.show("pick a stage run in the timeline (1)", message="no stage run yet")
            return
        what = self._run_label(run_id)
        kept = [a for a in queries.artifacts(self.app.store, run_id) if a.kind == "transcript"]
        if not kept:
            view.show(f"model transcript of {what}; pick another run in the timeline (1)",
                      message=f"{what} asked no model (or kept no transcript): A, D, E and F run tools only, and a "
                              "B that a draft completed or `--model none` wrote asks none")
            return
        transcript = load_transcript(kept[-1].path)
        if transcript is None:
            view.show(f"model transcript of {what}", message=f"cannot read {kept[-1].path}")
            return
        view.show(f"model transcript of {what}: {len(transcript.messages)} messages, {len(transcript.calls)} model "
                  f"calls ({kept[-1].path}); pick another run in the timeline (1)", transcript)

    # --- the running attempt: a timeline row with elapsed time and what it does now, and its tools' output -----
    def _tick_running(self) -> None:
        rows = conversion_rows(self.app.store, self.app.caps, [self.conversion_id])
        row = rows[0] if rows else None
        run = row.running if row else None
        t = self.query_one("#timeline-table", DataTable)
        if self._live is None and row is not None and row.worktree:
            from tileport import service

            self._live = LiveTail(service.live_file(row.worktree))
        live = self.query_one("#live", RichLog)
        if self._live is not None and run is not None:
            fresh, lines = self._live.read_new()
            if fresh:
                live.clear()
            if lines:  # one write per tick, not per line: a chatty build must not flood the UI
                chunk = Text()
                for i, line in enumerate(lines[-LIVE_LINES:]):
                    chunk.append(("\n" if i else "") + line, style="dim" if line.startswith(LiveTail.NOTE) else "")
                live.write(chunk)
        now = self._live.now if (self._live is not None and run is not None) else ""
        self._update("#now", Text(f"now: {now}", style="yellow") if run else
                     Text("no stage running" + (f" (status {row.status})" if row else ""), style="dim"))
        if run is None:
            if self._running_row:
                t.remove_row("running")
                self._running_row = False
                self._running_cells = {}
            return
        cells = (str(len(self._attempts) + 1), f"{run.stage} {STAGE_NAMES.get(run.stage, '')}",
                 f"{run.attempt}/{run.cap if run.cap is not None else '-'}", Text("RUNNING", style="yellow"), "",
                 elapsed_text(run.elapsed()), "", "", "", "", Text(f"now: {now}" if now else "started", style="yellow"))
        if not self._running_row:
            t.add_row(*cells, key="running")
            self._running_row = True
        else:
            for key, value in zip(TIMELINE_KEYS, cells):
                if self._running_cells.get(key) != value:
                    t.update_cell("running", key, value)
        self._running_cells = dict(zip(TIMELINE_KEYS, cells))

    def _refresh_timeline(self) -> None:
        t = self.query_one("#timeline-table", DataTable)
        attempts = timeline(self.app.store, self.conversion_id)
        if self._running_row and len(attempts) > len(self._attempts):
            t.remove_row("running")  # the finished attempt takes its place; the next running row follows it
            self._running_row = False
            self._running_cells = {}
        for i, r in enumerate(attempts[len(self._attempts):], start=len(self._attempts)):
            t.add_row(str(i + 1), f"{r.stage} {STAGE_NAMES.get(r.stage, '')}",
                      f"{r.attempt}/{r.cap if r.cap is not None else '-'}",
                      Text(r.verdict, style=verdict_style(r.verdict)), r.fail_class or "",
                      "-" if r.seconds is None else f"{r.seconds:.1f}", str(r.tokens or ""),
                      r.routed_to or "", Text(r.route_reason or ""), (r.commit or "")[:10], Text(r.summary[:120]),
                      key=str(r.run_id))
        for x in queries.interrupted_attempts(self.app.store, self.conversion_id):
            key = f"int-{x.event_id}"
            if key not in self._interrupted:  # an attempt stopped before it recorded a run
                self._interrupted.add(key)
                t.add_row("-", f"{x.stage} {STAGE_NAMES.get(x.stage, '')}", str(x.attempt),
                          Text("INTERRUPTED", style="yellow"), "", "-" if x.seconds is None else f"{x.seconds:.1f}",
                          "", "", Text(x.why), "", Text(f"interrupted at {x.ts[11:19]}"), key=key)
        if len(attempts) > len(self._attempts) and attempts:
            t.move_cursor(row=t.get_row_index(str(attempts[-1].run_id)))
            self._show_run(attempts[-1].run_id)
        self._attempts = attempts

    def _show_run(self, run_id: int) -> None:
        """The run picked in the timeline: commands, artifacts, transcript and the attempt diff show it."""
        self._selected_run = run_id
        self._draw_tab(self.query_one(TabbedContent).active)

    def _of(self, n: int, kind: str) -> Text:
        return Text(f"{n} {kind} of {self._run_label(self._selected_run)}; pick another run in the timeline (1); "
                    "enter: full text", style="dim")

    def _draw_commands(self) -> None:
        self._commands = queries.commands(self.app.store, self._selected_run) if self._selected_run else []
        self._update("#commands-of", self._of(len(self._commands), "commands"))
        c = self.query_one("#commands-table", DataTable)
        c.clear()
        for cmd in self._commands:
            c.add_row(str(cmd.seq), Text(str(cmd.exit_code), style="green" if cmd.exit_code == 0 else "red"),
                      f"{cmd.seconds or 0:.2f}", Text(" ".join(tool_argv(cmd.argv))), Text(cmd.cwd or ""))

    def _draw_artifacts(self) -> None:
        self._artifacts = queries.artifacts(self.app.store, self._selected_run) if self._selected_run else []
        self._update("#artifacts-of", self._of(len(self._artifacts), "artifacts"))
        a = self.query_one("#artifacts-table", DataTable)
        a.clear()
        for art in self._artifacts:
            a.add_row(art.kind, str(art.bytes), (art.sha256 or "")[:16], Text(art.path))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "ir-pair-list" and event.row_key.value is not None:
            self._open_pair(int(event.row_key.value))
        if event.data_table.id == "timeline-table" and event.row_key.value and event.row_key.value.isdigit():
            self._show_run(int(event.row_key.value))

    def _refresh_pairs(self) -> None:
        pairs = ir_pairs(self.app.store, self.conversion_id)
        if [(p.label, p.reference, p.port) for p in pairs] == [(p.label, p.reference, p.port) for p in self._pairs]:
            return
        self._pairs = pairs
        lst = self.query_one("#ir-pair-list", DataTable)
        if not lst.columns:
            lst.add_column("IR pair", key="label")
            lst.add_column("verdict", key="verdict")
        lst.clear()
        for i, p in enumerate(pairs):
            lst.add_row(Text(p.label), Text(p.verdict or "?", style=verdict_style(p.verdict)), key=str(i))
        if not pairs:
            self.query_one("#ir-view", IRDiffView).show_message(
                "no IR self-check yet: stage B writes the kernel, then compares its Tile IR with the reference's")

    def _open_pair(self, i: int) -> None:
        if 0 <= i < len(self._pairs) and getattr(self, "_pair_shown", None) != i:
            self._pair_shown = i
            pair = self._pairs[i]
            self.query_one("#ir-view", IRDiffView).show_message(f"diffing {pair.label} ...")
            self._diff(pair)

    def action_ir(self, what: str) -> None:
        if self.query_one(TabbedContent).active != "irdiff" or not self._mounted.get("irdiff"):
            return
        view = self.query_one("#ir-view", IRDiffView)
        if what == "differences":
            view.toggle_differences()
        else:
            view.jump(1 if what == "next" else -1)

    # --- the whole text of a row (enter): tileport.tui._detail ------------------------------------------------
    def on_row_selected(self, table: DataTable, key: str | None, index: int) -> bool:
        if table.id == "ir-pair-list" and key is not None:
            self._open_pair(int(key))  # enter on a pair opens its diff
            return True
        return False

    def row_detail(self, table: DataTable, key: str | None, index: int) -> str | None:
        tid = table.id
        if tid == "timeline-table" and key and key.isdigit():
            run = next((a for a in self._attempts if a.run_id == int(key)), None)
            if run is not None:
                return (f"{run.stage} {STAGE_NAMES.get(run.stage, '')} attempt {run.attempt}/{run.cap}: {run.verdict}"
                        f"{f' ({run.fail_class})' if run.fail_class else ''}\ncommit {run.commit or '-'}\n"
                        f"seconds {run.seconds}  tokens {run.tokens}\nrouted to {run.routed_to or '-'}: "
                        f"{run.route_reason or ''}\n\n{run.summary}\n\ndetails:\n"
                        + json.dumps(run.details, indent=1, default=str)[:20000])
        if tid == "timeline-table" and key == "running":
            return "running now: " + (self._live.now if self._live else "") + "\n\n" + "\n".join(
                str(line.text) for line in self.query_one("#live", RichLog).lines[-200:])
        if tid == "commands-table" and 0 <= index < len(self._commands):
            cmd = self._commands[index]
            own = tool_argv(cmd.argv)
            return (f"$ {' '.join(own)}\n\nexit {cmd.exit_code}  {cmd.seconds} s\ncwd {cmd.cwd or '-'}"
                    + (f"\n\nas run (sandbox wrapper included):\n{' '.join(cmd.argv)}" if own != cmd.argv else ""))
        if tid == "artifacts-table" and 0 <= index < len(self._artifacts):
            art = self._artifacts[index]
            return f"{art.kind}  {art.bytes} bytes\nsha256 {art.sha256}\n{art.path}"
        if tid == "ir-findings" and key is not None:
            return self.query_one("#ir-view", IRDiffView).finding_text(int(key))
        if tid == "ir-rows" and key is not None:
            return self.query_one("#ir-view", IRDiffView).row_text(key)
        if tid == "perf-table":
            return self.query_one("#perf-panel", PerfPanel).row_detail(index)
        return None

    @work(thread=True, exclusive=True, group="ir-diff")
    def _diff(self, pair) -> None:
        from tileport import service
        from tileport.errors import UserError

        try:
            report = service.ir_diff(pair.reference, pair.port)
        except (UserError, OSError) as e:
            self.app.call_from_thread(self.query_one("#ir-view", IRDiffView).show_message, f"cannot diff: {e}")
            return
        self.app.call_from_thread(self.query_one("#ir-view", IRDiffView).show_report, report, pair.label)

    # --- live updates ------------------------------------------------------------------------
    def store_changed(self, touched: set, events: list[dict]) -> None:
        if self.conversion_id not in touched or not self._ready:
            return  # not yet mounted (just pushed): on_mount reads the store afresh
        log = self.query_one("#conv-log", RichLog)
        changed = False
        for ev in events:
            if ev["conversion_id"] == self.conversion_id:
                if self._log_upto is not None and ev["id"] > self._log_upto:
                    log.write(event_line(ev))
                    self._log_upto = ev["id"]
                changed |= ev["kind"] != "log"  # a log line changes nothing but the log
        if changed:
            self.refresh_all()

    FOCUS = {"timeline": "#timeline-table", "commands": "#commands-table", "artifacts": "#artifacts-table",
             "log": "#conv-log", "irdiff": "#ir-rows", "perf": "#perf-table", "code": "#code-left",
             "transcript": "#transcript-log"}

    def _show_keys(self) -> None:
        """The key hints, drawn once: Textual's Footer recomposes on every focus change, which made a tab
        switch cost a second on a loaded machine (benchmarks/bench_tui.py --latency). Writes are left out of a
        read-only dashboard, as check_action refuses them."""
        hints = Text(no_wrap=True, overflow="ellipsis")
        for b in [*self.BINDINGS, *self.app.BINDINGS]:
            if not b.show:
                continue
            action = b.action.removeprefix("app.").split("(")[0]
            if self.app.check_action(action, ()) is False:
                continue
            key = {"escape": "esc", "question_mark": "?"}.get(b.key, b.key)
            hints.append(f" {key} ", style="bold reverse")
            hints.append(f" {b.description}  ")
        self.query_one("#keys", Static).update(hints)

    def on_resize(self, event) -> None:
        self.set_class(event.size.width < 120, "narrow")  # IR diff and code view stack instead of side by side
        if self.is_mounted:
            self.refresh_all()

    def action_tab(self, tab: str) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = tab
        if not self.query(self.FOCUS[tab]):
            # a lazy tab still mounting: the tab bar holds the focus meanwhile (the hidden tab's widget keeping it
            # would make Textual move it to a widget of another pane, whose pane then becomes the active one)
            tabs.query_one(Tabs).focus()
        self._draw_tab(tab)
        # the tab's content takes the focus (enter opens its rows; no Footer to recompose on focus changes)
        self.call_after_refresh(self._focus_tab, tab)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if self._ready and event.pane.id:
            self._draw_tab(event.pane.id)  # a tab picked with the mouse is drawn too

    def action_scroll_x(self, step: int) -> None:
        """left/right scroll the active tab's table or text sideways (they never switch tabs)."""
        for target in self.query(self.FOCUS[self.query_one(TabbedContent).active]):
            target.scroll_relative(x=8 * step, animate=False)

    def action_code_mode(self) -> None:
        self._code_mode = (self._code_mode + 1) % len(MODES)
        self.action_tab("code")

    def _load_code(self) -> None:
        self._code_gen += 1  # the newest request: an older worker's result is dropped (_code_worker)
        self._code_worker(self._code_gen, self._code_mode, self._selected_run)

    @work(thread=True, exclusive=True, group="code")
    def _code_worker(self, gen: int, mode: int, selected: int | None) -> None:
        from textual.worker import get_current_worker

        from tileport.tui import code

        view = self.query_one("#code-view", CodeView)
        store = self.app.store
        conv = store.conversion(self.conversion_id)
        wt = Path(conv["worktree"]) if conv.get("worktree") else None
        worker = get_current_worker()

        def call(show, *args):  # only the current request updates the view
            if worker.is_cancelled or gen != self._code_gen:
                return
            self.app.call_from_thread(lambda: gen == self._code_gen and show(*args))
        if wt is None or not wt.is_dir():
            call(view.show_message, "no worktree on disk for this conversion: nothing to show")
            return
        head = conv.get("head_commit") or "HEAD"
        op = Path(conv["op_path"]).stem
        if mode == 0:
            call(view.show_sides, code.sides(wt, head, conv["op_path"]), op)
        elif mode == 1:
            base = conv.get("base_commit") or "HEAD"
            call(view.show_diff, 1, f"{conv.get('branch') or 'branch'} {head[:10]} against its base {base[:10]}",
                 code.branch_diff(wt, base, head, conv["op_path"]))
        else:
            runs = [a for a in self._attempts if a.commit]
            chosen = next((a for a in runs if a.run_id == selected), runs[-1] if runs else None)
            older = next((a for a in reversed(runs[: runs.index(chosen)]) if a.stage == chosen.stage), None) \
                if chosen else None
            if chosen is None or older is None:
                alone = (f"only one attempt of {chosen.stage} so far; nothing to compare" if chosen is not None
                         and sum(a.stage == chosen.stage for a in runs) == 1 else "no earlier attempt of its stage; "
                         "nothing to compare")
                call(view.show_diff, 2, "highlight an attempt in the timeline (1) that has an earlier attempt of its "
                                        "stage", "", alone if chosen is not None else "no attempt with a commit yet")
                return
            call(view.show_diff, 2, f"{chosen.stage}{chosen.attempt} ({chosen.commit[:10]}) against "
                                    f"{older.stage}{older.attempt} ({older.commit[:10]})",
                 code.attempt_diff(wt, older.commit, chosen.commit, conv["op_path"]))

    def kernel_path(self) -> Path | None:
        """The port's kernel.rs in the worktree (ports/<op>/kernel.rs, what stage B commits), not the build copy."""
        conv = self.app.store.conversion(self.conversion_id)
        if not conv.get("worktree"):
            return None
        from tileport.tui.code import port_dir

        path = Path(conv["worktree"]) / port_dir(conv["op_path"]) / "kernel.rs"
        return path if path.is_file() else None
