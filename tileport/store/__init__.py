"""The store: the only SQL and JSON in tileport. `Store` (the connection, conversions, events, approvals,
evidence), `runs.record_run` (the one write path of a stage run), `queries` (the one read model, typed rows)."""

from tileport.store import queries, runs
from tileport.store._db import json_column
from tileport.store._schema import MIGRATIONS, SCHEMA_VERSION
from tileport.store._store import Store
from tileport.store.runs import RecordedRun, record_run, record_standalone

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "RecordedRun", "Store", "json_column", "queries", "record_run",
           "record_standalone", "runs"]
