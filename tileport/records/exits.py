"""The one exit-code rule of tileport's commands (the CLI, the dashboard's background hand-off, `build-rust`).

- 0: done, or the judged stage passed.
- 1: a conversion failed, hit a cap, was stopped or crashed; or a judged stage did not pass.
- 2: bad input: a `UserError`, raised before anything runs (`errors.UserError.exit_code`).
- 3: stopped BLOCKED: the environment must be fixed first.

Several conversions: a failure outranks an environment stop (fixing the environment would not make a failed
conversion pass), then an environment stop, else 0.
"""

from __future__ import annotations

from typing import Iterable

from tileport.records.verdicts import PASSING

EXIT_OK, EXIT_FAILED, EXIT_USER, EXIT_BLOCKED = 0, 1, 2, 3
PRECEDENCE = (EXIT_FAILED, EXIT_BLOCKED)  # the first of these any outcome ended with wins
_STATUS = {"done": EXIT_OK, "blocked": EXIT_BLOCKED}  # failed, stopped, error and anything unknown: EXIT_FAILED


def of_status(status: str) -> int:
    """How a conversion ended (done | blocked | failed | stopped | error) as an exit status."""
    return _STATUS.get(status, EXIT_FAILED)


def of_verdict(verdict: str) -> int:
    """One judged stage run (B's gates on a person's edit): a passing verdict 0, BLOCKED 3, any other 1."""
    return EXIT_OK if verdict in PASSING else EXIT_BLOCKED if verdict == "BLOCKED" else EXIT_FAILED


def combined(codes: Iterable[int]) -> int:
    """Several outcomes' exit statuses as one (see the module docstring)."""
    codes = set(codes)
    return next((c for c in PRECEDENCE if c in codes), EXIT_OK)
