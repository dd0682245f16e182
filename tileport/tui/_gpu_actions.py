"""The dashboard's keys for a GPU elsewhere: `i` ingest a results.json, `g` pack the port for a GPU host.

Both call what `tileport gpu ingest|pack` call (`tileport.service`), in thread workers. The store stays the source
of truth: an ingest records D/E runs and the screens refresh from their events like any other run. Refusals and
errors are one line in the notify area, never a traceback; the perf tab's GPU line shows a pack's progress and
its result (the pack dir and the commands to run with it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text

from tileport import service
from tileport.errors import UserError
from tileport.service.gpu_runs import ToolScope, tool_scope
from tileport.tui.actions import READONLY


def _one_line(text: str, width: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class Pack:
    """A pack under way in this dashboard: when it started, its newest step, and the scope of its tools (cargo),
    killed when the dashboard quits (a pack never keeps the process alive after the screen is gone)."""

    started: float = field(default_factory=time.monotonic)
    step: str = "building the port's cdylib (cargo: minutes on a cold cache)"
    scope: ToolScope = field(default_factory=ToolScope)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class GpuCommands:
    """Mixed into TileportApp: uses its actions, store, readonly, current_id and Textual's App methods."""

    # --- state (created on first use: a mixin has no __init__ of its own) ---------------------------------
    @property
    def _pack_lines(self) -> dict[int, Text]:
        if "_gate_lines_" not in self.__dict__:
            self.__dict__["_gate_lines_"] = {}
        return self.__dict__["_gate_lines_"]

    @property
    def packing(self) -> dict[int, Pack]:
        """conversion -> its pack under way in this dashboard."""
        if "_packing_" not in self.__dict__:
            self.__dict__["_packing_"] = {}
        return self.__dict__["_packing_"]

    def pack_status(self, conversion_id: int | None) -> Text | None:
        """The newest GPU line of this conversion in this dashboard (a pack's progress or result, an ingest)."""
        return self._pack_lines.get(conversion_id) if conversion_id is not None else None

    def _set_pack_status(self, conversion_id: int, text: Text) -> None:
        from tileport.tui._perf_view import PerfPanel

        self._pack_lines[conversion_id] = text
        for screen in self.screen_stack:
            if getattr(screen, "conversion_id", None) == conversion_id and screen.is_mounted:
                for panel in screen.query(PerfPanel):
                    panel.show_pack(text)

    def _from_thread(self, fn, *args, **kw) -> None:
        try:
            self.call_from_thread(fn, *args, **kw)
        except RuntimeError:  # the dashboard closed while the worker ran
            pass

    # --- why not -------------------------------------------------------------------------------------------
    def pack_refusal(self, conversion_id: int | None) -> str | None:
        """One line saying why no GPU pack can be made or ingested for this conversion now, or None."""
        if conversion_id is None:
            return "select a conversion first"
        if self.readonly:
            return READONLY
        if self.actions.running(conversion_id):
            return f"conversion {conversion_id} is running here; stop it (x) or wait for it to end"
        if conversion_id in self.packing:
            return (f"a GPU pack of #{conversion_id} is under way "
                    f"({self.packing[conversion_id].elapsed():.0f} s); wait for its result line")
        try:
            return service.gpu_busy(self.store, conversion_id)
        except UserError as e:
            return str(e)

    def _pack_target(self, label: str) -> int | None:
        """The current conversion, or None after saying in one line why `label` cannot act on it."""
        cid = self.current_id()
        reason = self.pack_refusal(cid)
        if reason:
            self.notify(f"{label}: {reason}", severity="warning", timeout=8)
            return None
        return cid

    # --- i: ingest results… --------------------------------------------------------------------------------
    def action_ingest(self) -> None:
        cid = self._pack_target("ingest")
        if cid is None:
            return
        from tileport.tui._ingest_path import PathScreen

        guess = service.likely_results(self.store, cid, [self.actions.repo])
        self.push_screen(PathScreen(f"Ingest the results of a GPU run for #{cid}: the results.json that "
                                    "`tileport gpu run DIR` wrote on the GPU host (recorded only when it was "
                                    "made for the conversion's current commit)", value=str(guess)),
                         lambda path: self._ingest_chosen(cid, path))

    def _ingest_chosen(self, cid: int, path: str | None) -> None:
        if not path:
            return
        p = Path(path).expanduser()
        p = p if p.is_absolute() else self.actions.repo / p
        self.run_worker(lambda: self._ingest_job(cid, p), thread=True, group=f"gate-{cid}", exit_on_error=False)

    def _ingest_job(self, cid: int, path: Path) -> None:
        try:
            done = service.ingest_results(self.actions.config, path, conversion_id=cid)
        except UserError as e:
            line = f"ingest #{cid}: {_one_line(e)}"
            self._from_thread(self._set_pack_status, cid, Text(line, style="red"))
            self._from_thread(self.notify, line, severity="error", timeout=12)
            return
        except Exception as e:  # noqa: BLE001 - a fault of ours: one line, not a traceback over the screen
            self._from_thread(self.notify, f"ingest #{cid} failed: {type(e).__name__}: {_one_line(e)}",
                              severity="error", timeout=12)
            return
        line = f"ingested {done.path}: {done.text()}"
        self._from_thread(self._set_pack_status, cid, Text(line, style="green"))
        self._from_thread(self.notify, done.text(), timeout=10)

    # --- g: GPU pack --------------------------------------------------------------------------------------
    def action_pack_port(self) -> None:
        cid = self._pack_target("GPU pack")
        if cid is None:
            return
        pack = self.packing[cid] = Pack()

        def show() -> None:
            if self.packing.get(cid) is pack:
                self._set_pack_status(cid, Text(f"packing the port of #{cid} ({pack.elapsed():.0f} s): "
                                                f"{_one_line(pack.step, 160)}", style="yellow"))

        def progress(line: str) -> None:
            pack.step = line
            self._from_thread(show)

        timer = self.set_interval(1.0, show)
        show()
        self.notify(f"GPU pack #{cid}: building the cdylib in the background (minutes on a cold cargo cache); the "
                    "Performance tab (6) shows its progress", timeout=8)

        def job() -> None:
            try:
                with tool_scope(pack.scope):
                    packed = service.pack_port(self.actions.config, str(cid), root=self.actions.repo, log=progress)
            except service.BuildFailed as e:
                first = f": {_one_line(e.errors[0], 160)}" if e.errors else ""
                self._pack_ended(cid, timer, f"GPU pack #{cid}: {e}{first}", ok=False)
            except UserError as e:
                self._pack_ended(cid, timer, f"GPU pack #{cid}: {_one_line(e)}", ok=False)
            except Exception as e:  # noqa: BLE001 - a fault of ours: one line, not a traceback over the screen
                self._pack_ended(cid, timer, f"GPU pack #{cid} failed: {type(e).__name__}: {_one_line(e)}",
                                 ok=False)
            else:
                self._pack_ended(cid, timer, f"{packed.text()}. Next, {packed.next_steps()} (or i here)", ok=True)
        self.run_worker(job, thread=True, group=f"gate-{cid}", exit_on_error=False)

    def on_unmount(self) -> None:
        """Quitting kills the tools of every pack under way (their workers then end at once)."""
        for pack in list(self.packing.values()):
            pack.scope.cancel()

    def _pack_ended(self, cid: int, timer, line: str, ok: bool) -> None:
        def ended() -> None:
            timer.stop()
            self.packing.pop(cid, None)
            self._set_pack_status(cid, Text(line, style="green" if ok else "red"))
            self.notify(line, severity="information" if ok else "error", timeout=20)
        self._from_thread(ended)
