"""Tests of the SAG evaluation data (paper seed tables)."""
