"""Error types raised by the D-CEM library (the project-wide ones, under D-CEM's names).

Every error names the offending field so the command line and the dashboard can show a
one-line, specific message instead of a traceback.
"""
from __future__ import annotations

from common.errors import ConfigError, InputError, ProjectError

__all__ = ["DcemError", "ConfigError", "InputError"]

DcemError = ProjectError
