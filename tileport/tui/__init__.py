"""The Textual dashboard: renders the store, holds no pipeline logic.

Screens: the conversions table (main), one conversion (timeline, retry counters, commands,
artifacts, live log, IR diff, performance), help. Actions go through `tui.actions.Actions`, which
calls the same runner and approval functions as the CLI and reports why an action is not allowed.
"""

from tileport.tui.app import TileportApp

__all__ = ["TileportApp"]
