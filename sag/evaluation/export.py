"""A scored evaluation as one JSON file (``data/results/``): the metrics, the command that
made them, and every item's answer, so the report can be printed without the store and a
test can check that the export, the report and REPRODUCTION.md agree.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from common.bounded_read import JSON_FILE_LIMIT, read_at_most
from common.errors import InputError, ProjectError
from dcem import strict_json
from sag.evaluation.export_check import check_export
from sag.evaluation.scores import score_evaluation
from sag.store.eval_tables import eval_parts, evaluations
from sag.store.tables import SagStore

__all__ = ["build_export", "write_export", "load_export", "latest_eval_id", "check_target", "FORMAT"]

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


def check_target(path: str | Path) -> Path:
    """The file ``path`` an export may be written to: not a folder, in a folder that
    exists and can be written; else InputError (checked before any work is done)."""
    target = Path(path)
    if not str(path).strip():
        raise InputError("export", "give the path of a JSON file to write")
    try:
        if not target.name or target.is_dir():
            raise InputError("export", f"{path} is a folder; give the path of a JSON file")
        parent = target.parent
        if not parent.is_dir():
            raise InputError("export", f"cannot write {path}: the folder {parent} does not exist")
        if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
            raise InputError("export", f"cannot write {path}: permission denied")
    except (OSError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError("export", f"cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return target


def write_export(data: dict[str, Any], path: str | Path) -> None:
    """Write ``data`` to ``path`` whole or not at all: through a temporary file in the same
    folder, removed when the write fails (InputError, the old file unchanged)."""
    target = check_target(path)
    text = json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask decides, as for any file
    except OSError as exc:
        raise InputError("export", f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError("export", f"cannot write {path}: {exc.strerror or exc}") from None


def load_export(path: str | Path) -> dict[str, Any]:
    """Read an export, checked strictly (:func:`sag.evaluation.export_check.check_export`);
    a file that is not one gives an InputError naming the field."""
    try:
        raw = read_at_most(path, JSON_FILE_LIMIT)  # counted as read: a device that never ends stops
    except ProjectError as exc:
        raise InputError("export", str(exc)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("export", f"{path} is not UTF-8 text") from None
    try:
        data = strict_json.loads(text, str(path))
    except InputError as exc:  # "<path>: is not valid JSON..." -> "export: <path> is not valid JSON..."
        what = str(exc)[len(exc.field) + 2:]
        raise InputError("export", f"{path}{' ' if what.startswith('is ') else ': '}{what}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError("export", f"{path} is not a SAG evaluation export (format {FORMAT})")
    return check_export(data, str(path))
