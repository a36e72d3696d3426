"""The demo's featured SAG run: the trained view group on DDXPlus-8 (``docs/group_views.md``).

Its runs ship as a store export in ``data/results/sag_views/`` (the group on the 200 TEST
cases, on the 130 CAL cases, its D-CEM variant, its twins and one single SmolLM2 answer
per case, every debate with its call log).  A first start imports it into a store that
holds no SAG run, so the Agent group page opens on it (the page's run choice,
``studio.views.sag_run_choice.FEATURED``, puts it first).
"""
from __future__ import annotations

from pathlib import Path

from common.db import PROJECT_ROOT
from common.table_export import MANIFEST
from sag.store.tables import SagStore

__all__ = ["FEATURED_EXPORT", "FEATURED_GROUP", "FEATURED_REFERENCES", "ensure_featured", "featured_report"]

FEATURED_EXPORT = PROJECT_ROOT / "data" / "results" / "sag_views"
FEATURED_GROUP = PROJECT_ROOT / "data" / "groups" / "ddx-views-trained.json"
FEATURED_REFERENCES = PROJECT_ROOT / "data" / "results" / "sag_views_references.json"


def ensure_featured(store: SagStore, folder: Path = FEATURED_EXPORT) -> int:
    """Import the featured export into ``store`` when the store holds no SAG run and the
    export is shipped; the number of rows added (0 when nothing was done)."""
    from sag.runs.store_export import import_store_export

    if not (folder / MANIFEST).is_file() or not store.runs().empty:
        return 0
    return import_store_export(store, folder).added


def featured_report(store: SagStore) -> tuple[object | None, str]:
    """(the featured group's measurement from ``store``, "") or (None, why it cannot be shown)."""
    from common.errors import ProjectError
    from sag.group.config import load_group_file
    from sag.views.report import build_report, read_references

    if not FEATURED_GROUP.is_file():
        return None, "The trained view group is not shipped yet (data/groups/ddx-views-trained.json)."
    try:
        cfg = load_group_file(FEATURED_GROUP)
        references = read_references(FEATURED_REFERENCES) if FEATURED_REFERENCES.is_file() else None
        return build_report(store, cfg, references), ""
    except ProjectError as exc:
        return None, (f"Its runs are not in the result store ({exc}). Import data/results/sag_views from the "
                      "sidebar, or play them: python -m sag eval-views --group data/groups/ddx-views-trained.json")
