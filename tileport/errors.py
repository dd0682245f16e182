"""Errors a user can act on. The CLI prints them as one line and exits 2 (`records.exits.EXIT_USER`), never a
traceback."""

from tileport.records.exits import EXIT_USER


class UserError(Exception):
    """Bad input or a missing tool: the message says what is wrong and what to do."""

    exit_code = EXIT_USER

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class EnvironmentBlocked(UserError):
    """A toolchain part the requested work needs is missing: stop instead of guessing (verdict BLOCKED)."""
