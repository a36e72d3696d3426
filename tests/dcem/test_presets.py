"""Named what-if presets: round trip, history (latest wins), validation."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import duckdb
import numpy as np
import pytest

from common.migrations import migrate
from dcem.core.config import MediatorConfig
from common.errors import InputError
from dcem.store.database import Store, StoreError
from dcem.store.migrations import MIGRATIONS, PACKAGE
from dcem.store.presets import list_presets, load_preset, preset_history, save_preset


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "p.duckdb")
    yield s
    s.close()


def test_round_trip_with_and_without_loss(store: Store) -> None:
    cfg = MediatorConfig(eps_safe=0.4, eps_low=2.5, t_max=7, prior="empirical", steer_gate="reliability_gap")
    loss = np.array([[0.0, 5.0, 1.0], [1.0, 0.0, 1.0], [1.0, 5.0, 0.0]])
    pid = save_preset(store, "  cautious ", cfg, loss=loss, labels=["a", "b", "c"], note="for S1")
    assert len(pid) == 32 and int(pid, 16) >= 0
    got_cfg, got_loss = load_preset(store, "cautious")
    assert got_cfg == cfg
    np.testing.assert_array_equal(got_loss, loss)
    save_preset(store, "plain", MediatorConfig())
    assert load_preset(store, "plain") == (MediatorConfig(), None)
    listing = list_presets(store)
    assert listing["name"].tolist() == ["cautious", "plain"]
    assert listing["has_loss"].tolist() == [True, False]
    assert list(listing.loc[0, "labels"]) == ["a", "b", "c"] and listing.loc[0, "note"] == "for S1"


def test_saving_a_name_again_keeps_history_and_latest_wins(store: Store) -> None:
    first = save_preset(store, "team", MediatorConfig(eps_safe=0.1))
    second = save_preset(store, "team", MediatorConfig(eps_safe=0.2), loss=np.ones((2, 2)) - np.eye(2))
    save_preset(store, "other", MediatorConfig())
    history = preset_history(store, "team")
    assert history["preset_id"].tolist() == [first, second]  # oldest first
    assert history["created_at"].is_monotonic_increasing
    listing = list_presets(store).set_index("name")
    assert listing.loc["team", "preset_id"] == second and listing.loc["team", "versions"] == 2
    assert listing.loc["other", "versions"] == 1
    cfg, loss = load_preset(store, "team")
    assert cfg.eps_safe == 0.2 and loss is not None and loss.shape == (2, 2)
    assert store.con.execute("SELECT count(*) FROM presets").fetchone()[0] == 3


@pytest.mark.parametrize("kwargs, field, words", [
    ({"name": "   "}, "name", "give the preset a name"),
    ({"name": "x" * 201}, "name", "at most 200"),
    ({"config": {"eps_safe": 1.0}}, "config", "MediatorConfig"),
    ({"loss": np.ones((2, 3))}, "loss", "square"),
    ({"loss": -np.ones((2, 2))}, "loss", ">= 0"),
    ({"loss": np.ones((3, 3)), "labels": ["a", "b"]}, "loss", "2 labels"),
    ({"labels": ["a", "a"]}, "labels", "unique"),
    ({"labels": "ab"}, "labels", "list"),
    ({"note": "n" * 5001}, "note", "at most 5,000"),
])
def test_invalid_presets_are_refused(store: Store, kwargs: dict, field: str, words: str) -> None:
    args = {"name": "p", "config": MediatorConfig(), **kwargs}
    with pytest.raises(InputError, match=words) as info:
        save_preset(store, **args)
    assert info.value.field == field
    assert store.con.execute("SELECT count(*) FROM presets").fetchone()[0] == 0


def test_unknown_or_empty_preset_names(store: Store) -> None:
    with pytest.raises(InputError, match="no preset named 'ghost'") as info:
        load_preset(store, "ghost")
    assert info.value.field == "name"
    with pytest.raises(InputError) as info:
        load_preset(store, "")
    assert info.value.field == "name"
    assert list_presets(store).empty


def test_an_old_store_opened_read_only_gives_a_clear_error(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    migrate(con, PACKAGE, MIGRATIONS[:1])  # written before presets and reviews existed
    con.close()
    with Store(tmp_path / "old.duckdb", read_only=True) as old:
        with pytest.raises(StoreError, match="open it once read-write"):
            list_presets(old)
    with Store(tmp_path / "old.duckdb") as upgraded:  # read-write applies 002
        assert list_presets(upgraded).empty
