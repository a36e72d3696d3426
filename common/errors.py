"""Error types every package raises for bad input.

Every error names the offending field so the command line and the dashboard can show a
one-line, specific message instead of a traceback.
"""
from __future__ import annotations

__all__ = ["ProjectError", "ConfigError", "InputError"]


class ProjectError(ValueError):
    """Base class for every user-facing error raised by the project's libraries."""


class ConfigError(ProjectError):
    """A configuration value is invalid.

    Parameters
    ----------
    field : str
        Name of the offending field (for example ``"eps_safe"``).
    message : str
        What is wrong with it, in plain words.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class InputError(ProjectError):
    """Input data (confusion matrices, loss, prior, reports, files) is invalid."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")
