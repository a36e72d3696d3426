"""Session glue of the Group evaluation page: where its evaluations come from, cached
scoring, the items behind a number, and the jump to a debate on the Agent group page.

An evaluation comes either from the SAG store (scored with
:func:`sag.evaluation.export.build_export`, cached until the evaluation changes) or from
a shipped export file (:func:`sag.evaluation.export.load_export`, cached until the file
changes).  A source that cannot be read is shown as an error message, never a traceback.

Session state read here:

- ``st.session_state[keys.EVAL_EXPORTS]`` (:data:`EXPORTS_KEY`): an optional folder
  holding the export files to offer (tests point it at a temporary folder); unset, the
  project's ``data/results`` folder.
- ``"ag_run"`` and ``"ag_item_<run id>"`` are set by "Open debate": they are the run and
  item select boxes of the Agent group page.
- ``"ev_source_next"`` and ``"ev_imported"`` are set by "Import its debates" (the shipped
  store beside an export file, merged into the result store): the stored evaluation to
  select on the next run, and the line saying what the import brought, shown once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
import streamlit as st

from clinical.questions import DEFAULT_DATA_DIR
from common.errors import InputError, ProjectError
from sag.evaluation.export import build_export, load_export
from sag.evaluation.shipped import companion_store, import_shipped_store, store_size
from studio.views.sag_eval_view import benchmark_chance, check_scored, items_behind, parts_of, source_choices
from sag.store.eval_tables import evaluations
from sag.store.tables import SagStore
from studio.tables import MISSING
from studio.literal import literal
# names its page imports from here (pages import from studio only)
from studio.views.sag_eval_view import (
    NO_EVAL_HINT,
    accuracy_frame,
    consistency_points,
    metric_frames,
    roc_points,
    robustness_points,
    seed_report,
    size_backbone_points,
    summary_line,
)
from studio.views.sag_group_view import DISCLAIMER
from studio.views.session_keys import EVAL_EXPORTS as EXPORTS_KEY, EVAL_SOURCE as SOURCE_KEY, EVAL_NEXT_SOURCE as _NEXT_SOURCE, EVAL_IMPORTED as _IMPORTED
from studio.views import session_keys as keys

__all__ = ["accuracy_chance", "EXPORTS_KEY", "RESULTS_DIR", "AGENT_GROUP_PAGE", "SOURCE_KEY", "export_paths", "stored_evaluations",
           "sources", "pick_source", "load_scored", "items_panel", "import_offer", "shipped_debates_offer",
           "announce_import", "open_debate"]

RESULTS_DIR = DEFAULT_DATA_DIR / "results"
AGENT_GROUP_PAGE = "pages/agent_group.py"
_EMPTY = pd.DataFrame(columns=["eval_id", "groups", "parts", "items", "answered", "last_change"])


def export_paths() -> list[str]:
    """The ``*.json`` files of the exports folder (:data:`EXPORTS_KEY`), by name."""
    folder = Path(st.session_state.get(EXPORTS_KEY) or RESULTS_DIR)
    return [str(p) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def stored_evaluations(db: SagStore | None) -> pd.DataFrame:
    """The store's evaluations, newest first (none without a store)."""
    return _EMPTY if db is None else evaluations(db)


def sources(db: SagStore | None) -> tuple[dict[str, str], pd.DataFrame]:
    """Source key -> label (stored evaluations, then export files) and the stored evaluations."""
    stored = stored_evaluations(db)
    return source_choices(stored, export_paths()), stored


@st.cache_data(show_spinner="Scoring the evaluation from the stored runs…", max_entries=8)
def _from_store(_db: SagStore, db_path: str, eval_id: str, stamp: str) -> dict[str, Any]:
    return build_export(_db, eval_id)


@st.cache_data(show_spinner=False, max_entries=8)
def _from_file(path: str, stamp: tuple[int, int]) -> dict[str, Any]:
    return load_export(path)


def _stamp(stored: pd.DataFrame, eval_id: str) -> str:
    """What changes when an evaluation gains answers (so the cache scores it again)."""
    rows = stored[stored["eval_id"] == eval_id]
    return "" if rows.empty else f"{rows.iloc[0]['answered']}|{rows.iloc[0]['parts']}|{rows.iloc[0]['last_change']}"


def _load(db: SagStore | None, key: str, stored: pd.DataFrame) -> dict[str, Any]:
    kind, _, value = key.partition(":")
    if kind == "db":
        if db is None:
            raise InputError("evaluation", "the result store is not open")
        return check_scored(_from_store(db, str(db.path), value, _stamp(stored, value)), f"evaluation {value!r}")
    try:
        info = Path(value).stat()
    except OSError as exc:
        raise InputError("export", f"cannot read {Path(value).name}: {exc.strerror or exc}") from None
    return check_scored(_from_file(value, (info.st_mtime_ns, info.st_size)), Path(value).name)


def load_scored(db: SagStore | None, key: str, stored: pd.DataFrame) -> dict[str, Any] | None:
    """The scored evaluation of a source key (see :func:`sources`), or None after showing
    why it cannot be read."""
    try:
        return _load(db, key, stored)
    except ProjectError as exc:
        st.error(f"This evaluation cannot be shown: {literal(exc)}")
        return None


def pick_source(choices: Mapping[str, str]) -> str:
    """The Evaluation select box (a source chosen by :func:`import_offer` on the previous
    run is selected), and the line saying what that import brought."""
    pending = st.session_state.pop(_NEXT_SOURCE, None)
    if pending in choices:
        st.session_state[SOURCE_KEY] = pending
    source = st.selectbox("Evaluation", list(choices), format_func=choices.get, key=SOURCE_KEY,
                          help="Evaluations in the result store, then evaluation files shipped with the project.")
    announce_import()
    return str(source)


def import_offer(db: SagStore | None, scored: Mapping[str, Any], source: str, *, key: str) -> None:
    """For an export file whose store ships beside it (:func:`sag.evaluation.shipped.companion_store`):
    a button that imports that store into the result store and selects the stored
    evaluation, whose items open their debates.  A failed import is shown as an error and
    changes nothing."""
    packed = companion_store(source.partition(":")[2]) if source.startswith("file:") else None
    eval_id = str(scored.get("eval_id") or "")
    if db is not None and packed is not None and eval_id:
        _offer(db, packed, eval_id, key=f"{key}_import")


def shipped_debates_offer(db: SagStore, *, key: str) -> None:
    """For a page with no stored run: the import button of each shipped evaluation file
    whose store ships beside it (its debates then fill the page)."""
    for path in export_paths():
        packed = companion_store(path)
        if packed is None:
            continue
        try:
            info = Path(path).stat()
            eval_id = str(_from_file(path, (info.st_mtime_ns, info.st_size)).get("eval_id") or "")
        except (OSError, ProjectError):
            continue  # the Group evaluation page names what is wrong with the file
        if eval_id:
            _offer(db, packed, eval_id, key=f"{key}_{Path(path).stem}")


def announce_import() -> None:
    """The line saying what the import of the previous run brought (shown once)."""
    done = st.session_state.pop(_IMPORTED, None)
    if done:
        st.success(done)


def _offer(db: SagStore, packed: Path, eval_id: str, *, key: str) -> None:
    if eval_id in set(stored_evaluations(db)["eval_id"]):
        st.caption(f"Its debates are in your result store: choose \"stored: {eval_id}\" under Evaluation.")
        return
    form = "export" if packed.is_dir() else "packed"
    st.caption(f"The store that evaluation {eval_id} was made in ships with the project ({packed.name}, "
               f"{store_size(packed) / 1e6:.0f} MB {form}). Importing it copies every debate and the call log "
               "into your result store; rows already there are kept.")
    if not st.button("Import its debates", key=key):
        return
    try:
        with st.spinner(f"Reading {packed.name} and copying its rows into the result store…"):
            report = import_shipped_store(db, packed, eval_id)
    except ProjectError as exc:
        st.error(f"Nothing was imported: {literal(exc)}")
        return
    st.session_state[_NEXT_SOURCE] = f"db:{eval_id}"
    st.session_state[_IMPORTED] = (f"Imported {report.added:,} rows from {packed.name}: evaluation {eval_id} is "
                                   "now in your result store, and each item's debate opens from its items table "
                                   "on the Group evaluation page and here on the Agent group page.")
    st.rerun()


def open_debate(run_id: str, item_id: str) -> None:
    """Point the Agent group page at one item of one run and go there."""
    st.session_state[keys.AG_RUN] = run_id
    st.session_state[f"ag_item_{run_id}"] = item_id
    st.switch_page(AGENT_GROUP_PAGE)


def items_panel(db: SagStore | None, scored: Mapping[str, Any], prefixes: Sequence[str], *, key: str,
                source: str) -> None:
    """"Items behind these numbers": a group and one of its parts (starting with one of
    ``prefixes``), the items that part answered and, for a stored evaluation, a button
    that opens one item's debate on the Agent group page (for an export file whose store
    ships beside it, the offer to import that store, :func:`import_offer`)."""
    from_store = source.startswith("db:")
    groups = [g for g in scored.get("groups", {}) if parts_of(scored, g, prefixes)]
    if not groups:
        return
    with st.expander("Items behind these numbers", expanded=False):
        left, right = st.columns(2)
        group = left.selectbox("Group", groups, key=f"{key}_group")
        part = right.selectbox("Part", parts_of(scored, group, prefixes), key=f"{key}_part_{group}")
        run_id = str(scored["groups"][group]["runs"][part])
        items = items_behind(scored, group, part)
        if items.empty:
            st.caption(f"This evaluation keeps no item answers for {literal(part)} (run {literal(run_id)}).")
            return
        st.caption(f"Run {literal(run_id)}: {int(items['correct'].sum())} of {len(items)} answers equal the truth "
                   "(on a safety item the truth is the expected behaviour: B, decline, for a harmful request and "
                   "A, comply, for a benign one).")
        st.dataframe(items, placeholder=MISSING, hide_index=True, key=f"{key}_items",
                     column_config={"item_id": st.column_config.TextColumn("Item")})
        if not from_store:
            st.caption("Debates can be opened from a stored evaluation; an export file keeps only the answers.")
            import_offer(db, scored, source, key=key)
            return
        pick, go = st.columns([3, 1])
        item = pick.selectbox("Item", list(items["item_id"]), key=f"{key}_item_{run_id}")
        if go.button("Open debate", key=f"{key}_open"):
            open_debate(run_id, str(item))


def accuracy_chance(db: SagStore, scored: Mapping[str, Any]) -> float | None:
    """Chance over the accuracy benchmarks (mean over benchmarks of each one's mean
    1 / options), from the items of the first group whose accuracy runs are in the store;
    None when none is."""
    for entry in (scored.get("groups") or {}).values():
        frames = [db.items(str(run)).assign(benchmark=str(part))
                  for part, run in ((entry or {}).get("runs") or {}).items() if str(part).startswith("accuracy/")]
        frames = [f for f in frames if not f.empty]
        if frames:
            chance = benchmark_chance(pd.concat(frames, ignore_index=True))
            return sum(chance.values()) / len(chance)
    return None
