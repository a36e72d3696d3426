"""Every shipped export says what it is for, what input it expects and where it was measured
(issue 51, item 15), and every place it names exists and uses that export's adapters."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.adapter_guide import DDXPLUS_CASE, GUIDES, guide_for, guide_for_adapter, guide_rows
from training.shipped import read_shipped, shipped_exports

ROOT = Path(__file__).resolve().parents[2]
NAMES = [p.name for p in shipped_exports()]


def test_every_shipped_export_has_exactly_one_guide_row() -> None:
    assert NAMES and sorted(g.export for g in GUIDES) == NAMES
    rows = guide_rows(NAMES)
    assert [r["Shipped export"] for r in rows] == NAMES and all(r["For"] and r["Expects"] for r in rows)
    assert guide_rows(["unknown"])[0]["For"] == "no description written for this export"


@pytest.mark.parametrize("name", NAMES)
def test_a_guide_names_the_exports_adapters(name: str) -> None:
    guide = guide_for(name)
    assert guide is not None
    keys = read_shipped(name).adapter_keys
    assert sorted(k.split("+lora:")[1] for k in keys) == sorted(guide.adapters)
    assert all(guide_for_adapter(a) is guide for a in guide.adapters)


def _mentions(place: Path, adapters: tuple[str, ...], export: str) -> bool:
    """Whether the measured place uses one of ``adapters`` (or is the export itself)."""
    if place.is_dir():
        if place.name == export:
            return True
        text = " ".join(p.read_text(encoding="utf-8") for p in place.glob("*.json"))
    else:
        text = place.read_text(encoding="utf-8")
    return any(a in text for a in adapters) or f"training/{export}/group.json" in text


@pytest.mark.parametrize("guide", GUIDES, ids=[g.export for g in GUIDES])
def test_every_place_a_guide_names_exists_and_uses_its_adapter(guide) -> None:  # type: ignore[no-untyped-def]
    for place, what in guide.measured:
        path = ROOT / place
        assert path.exists(), place
        assert what and _mentions(path, guide.adapters, guide.export), (guide.export, place)


def test_the_diagnostician_expects_ddxplus_cases_and_the_trio_uses_it_on_a_view() -> None:
    guide = guide_for("ddxplus8-grpo")
    assert guide is not None and guide.input_kind == DDXPLUS_CASE and "never on prose" in guide.expected_input
    manifest = json.loads((ROOT / "data/results/dcem_clinical_trio/manifest.json").read_text(encoding="utf-8"))
    assert "smollm2-135m+lora:ddxplus8-grpo@symptoms" in manifest["command"]
    assert any(place == "data/results/dcem_clinical_trio" and "symptoms view" in what for place, what in guide.measured)
