"""Calibration CSV files of a given shape and size, for the scaling and fuzz tests.

Each builder returns the bytes of a file of about ``size`` bytes (never more) with
the four required columns; the shape names say what is large.
"""
from __future__ import annotations

from typing import Callable, Iterator

HEADER = "case_id,agent,reported_label,true_label\n"
FIVE_MB = 5_000_000


def _fill(rows: Iterator[str], size: int, max_rows: int | None = None) -> bytes:
    """The header and as many rows as fit in ``size`` bytes (and ``max_rows``, if given)."""
    parts, total, n = [HEADER], len(HEADER), 0
    for row in rows:
        line = row + "\n"
        if total + len(line) > size or (max_rows is not None and n >= max_rows):
            break
        parts.append(line)
        total += len(line)
        n += 1
    return "".join(parts).encode("utf-8")


def _cycle(n_agents: int, n_labels: int, cases_per_agent_group: int, case_width: int = 1) -> Iterator[str]:
    """Rows over ``n_agents`` agents and ``n_labels`` labels: case ``i // group`` is answered by
    ``group`` consecutive agents, its truth is ``case % n_labels``, every third report is wrong."""
    i = 0
    while True:
        case = i // cases_per_agent_group
        truth = case % n_labels
        report = truth if i % 3 else (truth + 1) % n_labels
        yield f"c{case:0{case_width}d},a{i % n_agents},L{report},L{truth}"
        i += 1


def many_agents(size: int = FIVE_MB) -> bytes:
    """1,000 agents (the cap), 2 labels, 7 agents per case: every agent skips cases."""
    return _fill(_cycle(1000, 2, 7, case_width=12), size, 200_000)


def many_labels(size: int = FIVE_MB) -> bytes:
    """200 labels (the cap) and 100 agents: 100 x 200² = 4,000,000 table entries (the cap)."""
    return _fill(_cycle(100, 200, 100, case_width=8), size, 200_000)


def many_rows(size: int = FIVE_MB) -> bytes:
    """200,000 rows (the row cap) of 2 agents and 3 labels, padded case ids to fill the size."""
    return _fill(_cycle(2, 3, 2, case_width=14), size, 200_000)


def too_many_rows(size: int = FIVE_MB) -> bytes:
    """Short rows, more than 200,000 of them."""
    return _fill(_cycle(2, 3, 2), size)


def new_agent_every_row(size: int = FIVE_MB) -> bytes:
    """Every row a new agent (the issue's 200,000 agents)."""
    return _fill((f"c{i},a{i},L{i % 2},L{i % 2}" for i in range(10**9)), size)


def new_label_every_row(size: int = FIVE_MB) -> bytes:
    """Every row a new label."""
    return _fill((f"c{i},A,L{i},L{i}" for i in range(10**9)), size)


def too_many_cells(size: int = FIVE_MB) -> bytes:
    """200 labels, then agent number 101: 101 x 200² entries exceed the table cap."""
    return _fill(_cycle(101, 200, 1, case_width=8), size, 200_000)


def long_values(size: int = FIVE_MB) -> bytes:
    """Few rows with 100,000-character labels and case ids (below the csv field limit)."""
    def rows() -> Iterator[str]:
        for i in range(10**6):
            pad = "x" * 100_000
            yield f"{pad}{i},agent {i % 3},{pad}{i % 2},{pad}{i % 2}"
    return _fill(rows(), size)


def wide_header(size: int = FIVE_MB) -> bytes:
    """A header with hundreds of thousands of extra columns and rows of empty extras."""
    n_extra = size // 40
    head = "case_id,agent,reported_label,true_label," + ",".join(f"x{i}" for i in range(n_extra)) + "\n"
    row = "c{0},A,L{1},L{1}" + "," * n_extra + "\n"
    parts, total = [head], len(head)
    for i in range(10**6):
        line = row.format(i, i % 2)
        if total + len(line) > size:
            break
        parts.append(line)
        total += len(line)
    return "".join(parts).encode("utf-8")


def blank_rows(size: int = FIVE_MB) -> bytes:
    """A header and nothing but rows of empty values."""
    return _fill(iter(lambda: ",,,", None), size)


SHAPES: dict[str, Callable[[int], bytes]] = {
    "many_agents": many_agents, "many_labels": many_labels, "many_rows": many_rows,
    "too_many_rows": too_many_rows, "new_agent_every_row": new_agent_every_row,
    "new_label_every_row": new_label_every_row, "too_many_cells": too_many_cells,
    "long_values": long_values, "wide_header": wide_header, "blank_rows": blank_rows,
}
