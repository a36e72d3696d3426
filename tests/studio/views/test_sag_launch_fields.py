"""The Agent group page's launch fields, read strictly: "2,5" is refused, never read as 25."""
from __future__ import annotations

import pytest

from studio.views.sag_launch import MAX_LAUNCH_ITEMS
from studio.views.sag_launch_fields import ROUNDS_RANGE, SEED_RANGE, read_sag_launch


def test_valid_fields_are_read_exactly() -> None:
    fields = read_sag_launch(" 2 ", str(2**31 - 1), "1")
    assert fields.ok and fields.errors == []
    assert fields.values() == (2, 2**31 - 1, 1)
    assert SEED_RANGE == (0, 2**31 - 1) and ROUNDS_RANGE == (1, 10)


@pytest.mark.parametrize(("items", "seed", "t_max", "start"), [
    ("3", "2,5", "3", "Seed: “2,5” is not a whole number (no commas or decimal points)"),
    ("3", "abc", "3", "Seed: “abc” is not a whole number: enter a whole number from 0 to 2147483647."),
    ("3", "-1", "3", "Seed must be from 0 to 2147483647; got -1."),
    ("3", str(2**31), "3", "Seed must be from 0 to 2147483647; got 2147483648."),
    ("0", "0", "3", f"Items must be from 1 to {MAX_LAUNCH_ITEMS}; got 0."),
    ("2.5", "0", "3", "Items: “2.5” is not a whole number"),
    ("3", "0", "11", "Rounds after round 0 (t_max) must be from 1 to 10; got 11."),
    ("3", "0", "", "Rounds after round 0 (t_max) is empty"),
])
def test_one_invalid_field_blocks_the_launch(items: str, seed: str, t_max: str, start: str) -> None:
    fields = read_sag_launch(items, seed, t_max)
    assert not fields.ok and fields.values() is None
    assert len(fields.errors) == 1 and fields.errors[0].startswith(start), fields.errors


def test_every_invalid_field_has_its_message() -> None:
    fields = read_sag_launch("x", "2,5", "1e3")
    assert [e.split(":")[0] for e in fields.errors] == ["Items", "Seed", "Rounds after round 0 (t_max)"]
