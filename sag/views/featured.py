"""The demo's featured SAG run: a trained view group on DDXPlus-8 (``docs/group_views.md``).

Each shipped view group has its runs in a store export under ``data/results/`` (the group
on the 200 TEST cases, on the 130 CAL cases, its D-CEM variant, its twins and one single
SmolLM2 answer per case, every debate with its call log).  A first start imports every
shipped one into a store that holds no SAG run, the featured group's first, so the Agent
group page opens on it (the page's run choice, ``studio.views.sag_run_choice.FEATURED``,
puts it first) and the Group evaluation page can set the groups side by side.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.db import PROJECT_ROOT
from common.table_export import MANIFEST
from sag.store.tables import SagStore

__all__ = ["FEATURED", "FEATURED_EXPORT", "FEATURED_GROUP", "FEATURED_REFERENCES", "SHIPPED", "ViewShipment",
           "ensure_featured", "featured_report", "shipped_report"]


@dataclass(frozen=True)
class ViewShipment:
    """A shipped view group: its name, its group file and the export of its runs (both
    relative to the project root)."""

    name: str
    title: str
    group: str
    export: str

    def __post_init__(self) -> None:
        if not self.name or Path(self.group).suffix != ".json" or not self.export:
            raise ValueError(f"a view shipment needs a name, a .json group file and an export folder: {self}")

    @property
    def group_path(self) -> Path:
        return PROJECT_ROOT / self.group

    @property
    def export_path(self) -> Path:
        return PROJECT_ROOT / self.export


SHIPPED: tuple[ViewShipment, ...] = (
    ViewShipment("ddx-views2-trained", "the second training (GRPO with the log-likelihood term)",
                 "data/groups/ddx-views2-trained.json", "data/results/sag_views2"),
    ViewShipment("ddx-views-trained", "the first training (GRPO alone)", "data/groups/ddx-views-trained.json",
                 "data/results/sag_views"),
)
"""Every shipped view group, the featured one first."""

FEATURED = SHIPPED[0]
FEATURED_EXPORT = FEATURED.export_path
FEATURED_GROUP = FEATURED.group_path
FEATURED_REFERENCES = PROJECT_ROOT / "data" / "results" / "sag_views_references.json"


def ensure_featured(store: SagStore, folder: Path | None = None) -> int:
    """Import the shipped view groups' exports (or only ``folder``) into ``store`` when the
    store holds no SAG run; the number of rows added (0 when nothing was done)."""
    from sag.runs.store_export import import_store_export

    folders = [folder] if folder is not None else [s.export_path for s in SHIPPED]
    folders = [f for f in folders if (f / MANIFEST).is_file()]
    if not folders or not store.runs().empty:
        return 0
    return sum(import_store_export(store, f).added for f in folders)


def shipped_report(store: SagStore, shipment: ViewShipment = FEATURED) -> tuple[object | None, str]:
    """(``shipment``'s measurement from ``store``, "") or (None, why it cannot be shown)."""
    from common.errors import ProjectError
    from sag.group.config import load_group_file
    from sag.views.report import build_report, read_references

    if not shipment.group_path.is_file():
        return None, f"The view group {shipment.name} is not shipped ({shipment.group})."
    try:
        cfg = load_group_file(shipment.group_path)
        references = read_references(FEATURED_REFERENCES) if FEATURED_REFERENCES.is_file() else None
        return build_report(store, cfg, references), ""
    except ProjectError as exc:
        return None, (f"Its runs are not in the result store ({exc}). Import {shipment.export} from the "
                      f"sidebar, or play them: python -m sag eval-views --group {shipment.group}")


def featured_report(store: SagStore) -> tuple[object | None, str]:
    """(the featured group's measurement from ``store``, "") or (None, why it cannot be shown)."""
    return shipped_report(store, FEATURED)
