"""The paper's clinical LLM numbers (Appendix H Tables 6 and 7, section 5.5 Table 1).

They live in ``data/dcem_paper/clinical_tables.json``: per dataset key (``ddxplus8``,
``medqa-tri``), per table (``table6``: system risk R_L^sys and harmful consensus H.C. of
Single, Free, Pool and D-CEM; ``table7``: D-CEM escalation rate and average rounds;
``table1``: D-CEM with and without STOP_AND_ESCALATE), per metric, method and scenario a
``[mean, std]`` pair over the paper's 10 seeds, exactly as printed (two decimals).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from common.db import PROJECT_ROOT
from common.errors import InputError
from common.fields import Instance, Number, Seq, check, fixed

__all__ = ["PAPER_TABLES", "TABLE_CELLS", "load_paper_tables", "paper_cell"]

PAPER_TABLES = PROJECT_ROOT / "data" / "dcem_paper" / "clinical_tables.json"

# table -> metric -> the methods the paper reports
TABLE_CELLS: dict[str, dict[str, tuple[str, ...]]] = {
    "table6": {"system_risk": ("single", "free", "pool", "dcem"),
               "harmful_consensus": ("single", "free", "pool", "dcem")},
    "table7": {"escalation_rate": ("dcem",), "avg_rounds": ("dcem",)},
    "table1": {"system_risk": ("dcem", "dcem_noesc"), "harmful_consensus": ("dcem", "dcem_noesc")},
}


def _check_pair(where: str, pair: Any) -> None:
    check("paper", pair, Seq(Number(finite=True), min_len=2, max_len=2, types=(list,)), error=InputError,
          msg=lambda v: f"{where}: expected [mean, std], got {v!r}")


def _check(data: Any, path: Path) -> dict[str, Any]:
    no_datasets = fixed(f"{path} has no datasets")
    check("paper", check("paper", data, Instance(dict), msg=no_datasets, error=InputError).get("datasets"),
          Instance(dict), msg=no_datasets, error=InputError)
    check("paper", data.get("scenarios"), Seq(min_len=1, types=(list,)), msg=fixed(f"{path} has no scenario list"),
          error=InputError)
    for key, tables in data["datasets"].items():
        for table, metrics in TABLE_CELLS.items():
            for metric, methods in metrics.items():
                for method in methods:
                    cells = check("paper", tables.get(table, {}).get(metric, {}).get(method), Instance(dict),
                                  msg=fixed(f"{path}: {key} {table} lacks {metric} of {method}"), error=InputError)
                    for scenario, pair in cells.items():
                        _check_pair(f"{key} {table} {metric} {method} {scenario}", pair)
    return data


def load_paper_tables(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The paper's clinical tables (default :data:`PAPER_TABLES`), shape-checked."""
    where = Path(path) if path is not None else PAPER_TABLES
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError("paper", f"cannot read {where}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError("paper", f"{where} is not valid JSON: {exc}") from None
    return _check(data, where)


def paper_cell(paper: Mapping[str, Any], dataset: str, table: str, metric: str, method: str,
               scenario: str) -> tuple[float, float] | None:
    """(mean, std) the paper prints for one cell, or None when it has no number there."""
    pair = (paper.get("datasets", {}).get(dataset, {}).get(table, {}).get(metric, {})
            .get(method, {}).get(scenario))
    return None if pair is None else (float(pair[0]), float(pair[1]))
