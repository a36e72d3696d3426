"""Strict JSON for user input: the project-wide reader of :mod:`common.strict_json`,
under the name the D-CEM command line has always imported."""
from __future__ import annotations

from common.strict_json import MAX_DEPTH, NotJson, check_depth, loads

__all__ = ["loads", "check_depth", "MAX_DEPTH", "NotJson"]
