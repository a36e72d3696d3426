"""Which model files a clinical run used: name, size and sha256, for a run export.

The agents' model keys come from each run's spec (``spec["agents"]``).  A registry key
(:mod:`runtime.registry`: packaged, ``file:`` or ``hf:``) is resolved to its GGUF file and
described by :func:`runtime.model_info.model_info` without loading the weights (a key
with a LoRA adapter: its base file, the adapter named in the note); Hub keys
are looked up in the local Hub cache only (an export never downloads a model).  Keys
that name no local file (``openai:URL#MODEL`` servers, the scripted test models, a
model that is not installed) are recorded with a null sha256 and a note.  The sha256
the run itself recorded for the key (the backend's, in the cells' info) is kept beside
it, so a changed file shows.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from dcem.store.database import Store
from dcem.store.run_reads import cell_infos, run_spec_text
from runtime.backends import BackendError
from dcem_clinical.stat_agent import is_stat_key
from runtime.factory import HTTP_PREFIX

__all__ = ["run_model_keys", "model_file_entries"]


def run_model_keys(store: Store, run_ids: Sequence[str]) -> dict[str, str | None]:
    """Model key -> the sha256 the runs recorded for it (None when none or ambiguous).

    Keys are in first-use order; raises StoreError for an unknown run.
    """
    keys: dict[str, set[str]] = {}
    for run_id in run_ids:
        store.check_run(run_id)
        spec = json.loads(run_spec_text(store, run_id))
        agents = [str(a) for a in spec.get("agents", [])]
        for key in agents:
            keys.setdefault(key, set())
        for info_json in cell_infos(store, run_id):
            for key, agent in zip(agents, json.loads(info_json).get("agents", [])):
                if agent.get("model_sha256"):
                    keys[key].add(str(agent["model_sha256"]))
    return {k: (next(iter(v)) if len(v) == 1 else None) for k, v in keys.items()}


@contextmanager
def _hub_offline() -> Iterator[None]:
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before


def _entry(key: str, run_sha256: str | None) -> dict[str, Any]:
    from runtime.adapters import combined_sha256
    from runtime.model_info import model_info
    from runtime.registry import resolve_model

    entry: dict[str, Any] = {"key": key, "file": None, "size_bytes": None, "sha256": None,
                             "run_sha256": run_sha256, "note": ""}
    if key.startswith(HTTP_PREFIX):
        entry["note"] = "served over HTTP by an OpenAI-compatible server; no local file"
        return entry
    if is_stat_key(key):
        entry.update(run_sha256=None, note="statistical agent fit on each seed's CAL split; no model file")
        return entry
    model, at, view = key.rpartition("@")
    if at:  # a member reading one view of each case: its model is the key before "@"
        entry["note"] = f"reads the {view} view of each case"
    try:
        with _hub_offline():
            path, adapter = resolve_model(model if at else key)
            info = model_info(path)
    except BackendError as exc:
        entry["note"] = f"no local model file: {exc}"
        return entry
    entry.update(file=info.path.name, size_bytes=int(info.size_bytes), sha256=info.sha256)
    identity = info.sha256
    if adapter is not None:  # the run recorded the digest of both files (runtime.adapters.combined_sha256)
        identity = combined_sha256(info.sha256, adapter.sha256)
        entry["note"] = "; ".join(filter(None, [entry["note"], f"with the LoRA adapter {adapter.path.name} "
                                                               f"(sha256 {adapter.sha256})"]))
    if run_sha256 and run_sha256 != identity:
        entry["note"] = "; ".join(filter(None, [entry["note"], "the file's sha256 differs from the one the run "
                                                               "recorded"]))
    return entry


def model_file_entries(keys: dict[str, str | None]) -> list[dict[str, Any]]:
    """One manifest entry per model key (``key``, ``file``, ``size_bytes``, ``sha256``,
    ``run_sha256``, ``note``); see :func:`run_model_keys` for ``keys``."""
    return [_entry(key, sha) for key, sha in keys.items()]
