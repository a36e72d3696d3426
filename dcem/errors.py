"""Error types raised by the D-CEM library.

Every error names the offending field so the command line and the dashboard can show a
one-line, specific message instead of a traceback.
"""
from __future__ import annotations

__all__ = ["DcemError", "ConfigError", "InputError"]


class DcemError(ValueError):
    """Base class for every user-facing error raised by :mod:`dcem`."""


class ConfigError(DcemError):
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


class InputError(DcemError):
    """Input data (confusion matrices, loss, prior, reports, files) is invalid."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")
