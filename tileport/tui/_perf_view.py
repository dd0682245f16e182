"""The performance view: per-configuration ratio table and a plot against the gate, and the gate line: what `i`
(ingest results…) and `g` (GPU pack) did or are doing for this conversion (tileport.tui._gpu_actions)."""

from __future__ import annotations

import math

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

from tileport.tui.view import PerfView, launch_text
from tileport.validators.gpu.reports import host_summary


def _fmt(x: float | None, nd: int = 4) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _host(host_us: dict, side: str) -> str:
    """A side's host time per call until it returns (what the caller's thread pays; `call_us` adds the kernel)."""
    v = (host_us.get(side) or {}).get("return_us") if isinstance(host_us.get(side), dict) else None
    return "-" if not isinstance(v, (int, float)) else f"{v:.1f}"


class PerfPanel(Vertical):
    DEFAULT_CSS = "#perf-gate { height: auto; padding: 0 1; }"

    def compose(self):
        yield Static("", id="perf-summary")
        yield Static("", id="perf-gate")
        yield DataTable(id="perf-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="perf-launch")
        yield PlotextPlot(id="perf-plot")

    _rows: list = []

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "perf-table":
            return
        i = event.cursor_row
        row = self._rows[i] if 0 <= i < len(self._rows) else None
        self.query_one("#perf-launch", Static).update(
            Text(f"launch of {row.config}:\n{launch_text(row.launch)}", style="dim") if row else "")

    def row_detail(self, i: int) -> str | None:
        """A row's whole text (enter, tileport.tui._detail): the configuration, every timed sample, the launch."""
        row = self._rows[i] if 0 <= i < len(self._rows) else None
        if row is None:
            return None
        samples = "\n".join(f"{side} samples (ms, {len(xs)}): " + (", ".join(f"{x:.4f}" for x in xs) or "none recorded")
                            for side, xs in (("ref", row.ref_samples), ("port", row.port_samples)))
        host = host_summary(row.host_us)
        return (f"{row.config}\n\nreference {_fmt(row.ref_ms)} ms  port {_fmt(row.port_ms)} ms  port/ref "
                f"{_fmt(row.ratio, 3)}  flags {row.flags or '-'}\n{host}\n\n{samples}\n\nlaunch:\n"
                f"{launch_text(row.launch)}")

    PACK_HINT = "g: pack the port for a GPU host   i: ingest the results.json it wrote"

    def show_pack(self, text: Text | None) -> None:
        """The newest gate line (a pack's progress or result, an ingest), else the keys that make one."""
        hint = None if getattr(self.app, "readonly", False) else Text(self.PACK_HINT, style="dim")
        self.query_one("#perf-gate", Static).update(text if text is not None else (hint or ""))

    def on_mount(self) -> None:
        status = getattr(self.app, "pack_status", None)
        self.show_pack(status(getattr(self.screen, "conversion_id", None)) if status else None)
        t = self.query_one("#perf-table", DataTable)
        for key, label in (("config", "configuration"), ("ref", "reference ms"), ("port", "port ms"),
                           ("ratio", "port/ref"), ("flags", "flags"), ("host_ref", "ref host us/call"),
                           ("host_port", "port host us/call")):
            t.add_column(label, key=key)

    def show(self, pv: PerfView) -> None:
        summary = Text()
        if not pv.rows and pv.verdict is None:
            summary.append("no performance run yet (stage E runs after correctness passes)", style="dim")
        else:
            summary.append(f"E {pv.verdict or '-'}  ", style="bold")
            if pv.geomean is not None:
                summary.append(f"geomean {pv.geomean:.3f} ", style="green" if pv.geomean <= pv.gate else "red")
            summary.append(f"(gate <= {pv.gate:g})")
            if pv.worst:
                summary.append(f"  worst: {pv.worst}")
            for side, value in sorted(pv.hardware.items()):
                summary.append(f"\n  {side}: {value}")
            if pv.tests:
                summary.append(f"\n  D, the op's own tests: {pv.tests}")
            if pv.left_out:
                summary.append(f"\n  {len(pv.left_out)} captured configuration(s) left out, e.g. "
                               f"{pv.left_out[0].get('config', '')[:60]}: {pv.left_out[0].get('why', '')[:80]}",
                               style="dim")
        self.query_one("#perf-summary", Static).update(summary)
        t = self.query_one("#perf-table", DataTable)
        t.clear()
        self._rows = list(pv.rows)
        for r in pv.rows:
            ratio = Text(_fmt(r.ratio, 3), style="green" if r.ratio is not None and r.ratio <= pv.gate else "red")
            t.add_row(Text(r.config), _fmt(r.ref_ms), _fmt(r.port_ms), ratio, Text(r.flags),
                      _host(r.host_us, "ref"), _host(r.host_us, "port"))
        plot = self.query_one("#perf-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        ratios = [r.ratio for r in pv.rows if r.ratio is not None and math.isfinite(r.ratio)]
        if ratios:
            # bars start at parity (1.0), not at 0: above it the port is slower, below it faster; the y range
            # follows the data so a 2 % difference is visible, and always shows parity and the gate
            xs = list(range(1, len(ratios) + 1))
            lo = min(min(ratios), 1.0) - 0.05
            hi = max(max(ratios), pv.gate) + 0.05
            plt.bar(xs, ratios, minimum=1.0, label="port / reference",
                    color=["red" if r > pv.gate else "green" for r in ratios])
            plt.hline(1.0, "white")
            plt.hline(pv.gate, "orange")
            plt.ylim(lo, hi)
            plt.xlim(0.5, len(ratios) + 0.5)
            plt.title(f"device time ratio per configuration (parity 1.0, gate {pv.gate:g})")
            plt.xlabel("configuration # (table order)")
            plt.ylabel("port / reference")
        plot.refresh()
