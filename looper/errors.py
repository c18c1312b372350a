"""Errors a user can cause: they name the file, line, column and construct, never a traceback."""
from __future__ import annotations


class LooperError(Exception):
    """Base of every error that is the user's to fix (bad input, bad option)."""

    exit_status = 2

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 col: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
            if self.line is not None:
                where.append(str(self.line))
                if self.col is not None:
                    where.append(str(self.col))
        prefix = ":".join(where)
        return f"{prefix}: error: {self.message}" if prefix else f"error: {self.message}"


class LooperSyntaxError(LooperError):
    """The input program uses a construct outside looper's language."""


class LooperUsageError(LooperError):
    """A command-line option or value that cannot be honoured (unknown size, unknown -D name)."""
