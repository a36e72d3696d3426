"""bm25s for the project's two retrievers (SAG passages, few-shot CAL cases), imported with
its logger quieted: bm25s sets its own logger to DEBUG, which floods any program that logs
at INFO or lower (a "Building index from tokens" line on every run)."""
from __future__ import annotations

import logging

import bm25s
from bm25s.stopwords import STOPWORDS_EN_PLUS

__all__ = ["bm25s", "STOPWORDS_EN_PLUS"]

logging.getLogger("bm25s").setLevel(logging.WARNING)
