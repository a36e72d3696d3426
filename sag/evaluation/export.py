"""A scored evaluation as one JSON file (``data/results/``): the metrics, the command that
made them, and every item's answer, so the report can be printed without the store and a
test can check that the export, the report and REPRODUCTION.md agree.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from common.errors import InputError
from sag.evaluation.scores import score_evaluation
from sag.store.eval_tables import eval_parts, evaluations
from sag.store.tables import SagStore

__all__ = ["build_export", "write_export", "load_export", "latest_eval_id", "FORMAT"]

FORMAT = "sag-eval/1"


def latest_eval_id(store: SagStore) -> str:
    frame = evaluations(store)
    if frame.empty:
        raise InputError("eval", "no evaluation in this store; run `python -m sag eval` first")
    return str(frame.iloc[0]["eval_id"])


def _clean(value: Any) -> Any:
    """NaN and infinities become null (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def build_export(store: SagStore, eval_id: str, *, command: str = "") -> dict[str, Any]:
    """Metrics of every group, the learned screen, and each part's item answers."""
    from sag.evaluation.screen import screen_scores
    from sag.evaluation.subsets import load_subsets

    scored = score_evaluation(store, eval_id)
    if not scored["groups"]:
        raise InputError("eval", f"no evaluation {eval_id!r} in this store")
    if any("safety" in g for g in scored["groups"].values()):
        scored["screen"] = screen_scores(load_subsets(), int(scored["spec"]["n_items"]))
    answers: dict[str, dict[str, Any]] = {}
    for _, row in eval_parts(store, eval_id).iterrows():
        out = store.outcomes(row["run_id"])
        answers.setdefault(row["group_name"], {})[row["part"]] = {
            "run_id": row["run_id"],
            "items": [[i, a, t] for i, a, t in zip(out["item_id"], out["answer"], out["truth"])]}
    return _clean({"format": FORMAT, "command": command, **scored, "answers": answers})


def write_export(data: dict[str, Any], path: str | Path) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(target)


def load_export(path: str | Path) -> dict[str, Any]:
    """Read an export; a file that is not one gives a clear error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError("export", f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise InputError("export", f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("groups"), dict):
        raise InputError("export", f"{path} is not a SAG evaluation export (format {FORMAT})")
    return data
