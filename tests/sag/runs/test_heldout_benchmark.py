"""``--benchmark heldout:<name>``: a run draws only from the HELD-OUT part, the same items
for any group with the same seed (so trained and untrained groups pair item by item)."""
from __future__ import annotations

import pytest

from clinical.training_split import heldout_items, train_id_set
from common.errors import ConfigError
from sag.group.config import preset
from sag.runs.run import SagRunSpec, load_items


@pytest.mark.parametrize("name", ["medqa", "ddxplus8"])
def test_heldout_runs_draw_only_heldout_items_and_pair_across_groups(name: str) -> None:
    items = load_items(f"heldout:{name}")
    assert [i.item_id for i in items] == [i.item_id for i in heldout_items(name)]
    untrained, _ = SagRunSpec(f"heldout:{name}", preset("sag-6"), n_items=30, seed=4).split(items)
    trained_cfg = preset("sag-6").with_changes(backbones=("smollm2-135m+lora:file:runs/x/a.gguf",) * 4)
    trained, _ = SagRunSpec(f"heldout:{name}", trained_cfg, n_items=30, seed=4).split(items)
    ids = [i.item_id for i in untrained]
    assert ids == [i.item_id for i in trained] and len(set(ids)) == 30
    assert set(ids) <= {i.item_id for i in heldout_items(name)} and not set(ids) & train_id_set(name)


def test_an_unknown_heldout_part_is_refused() -> None:
    with pytest.raises(ConfigError, match="no HELD-OUT part for 'nejm'"):
        load_items("heldout:nejm")
