"""The Agent group page's launch fields, typed as text and read strictly.

A browser's number box silently replaces an invalid entry with another value, so a run
could start with settings the screen never showed.  Items, Seed and the round limit are
therefore typed as text and read by :func:`dcem.analysis.form_input.parse_int_field`:
"2,5" is refused with a message naming the field and its range, never read as 25, and
the page keeps Run disabled while any field is invalid.
"""
from __future__ import annotations

from dataclasses import dataclass

from dcem.analysis.form_input import IntField, parse_int_field
from studio.views.sag_launch import MAX_LAUNCH_ITEMS

__all__ = ["ITEMS_RANGE", "SEED_RANGE", "ROUNDS_RANGE", "ITEMS_FIELD", "SEED_FIELD", "ROUNDS_FIELD",
           "SagLaunchFields", "read_sag_launch"]

ITEMS_RANGE = (1, MAX_LAUNCH_ITEMS)
SEED_RANGE = (0, 2**31 - 1)
ROUNDS_RANGE = (1, 10)
ITEMS_FIELD = "Items"
SEED_FIELD = "Seed"
ROUNDS_FIELD = "Rounds after round 0 (t_max)"


@dataclass(frozen=True)
class SagLaunchFields:
    """The three typed launch fields as read (each parsed or refused with a message)."""

    items: IntField
    seed: IntField
    t_max: IntField

    @property
    def errors(self) -> list[str]:
        return [f.error for f in (self.items, self.seed, self.t_max) if f.error is not None]

    @property
    def ok(self) -> bool:
        return not self.errors

    def values(self) -> tuple[int, int, int] | None:
        """(items, seed, t_max) when every field is valid, else None."""
        items, seed, t_max = self.items.value, self.seed.value, self.t_max.value
        if items is None or seed is None or t_max is None:
            return None
        return items, seed, t_max


def read_sag_launch(items: object, seed: object, t_max: object) -> SagLaunchFields:
    """Read the typed Items, Seed and Rounds fields strictly, each in its range."""
    return SagLaunchFields(parse_int_field(items, field=ITEMS_FIELD, low=ITEMS_RANGE[0], high=ITEMS_RANGE[1]),
                           parse_int_field(seed, field=SEED_FIELD, low=SEED_RANGE[0], high=SEED_RANGE[1]),
                           parse_int_field(t_max, field=ROUNDS_FIELD, low=ROUNDS_RANGE[0], high=ROUNDS_RANGE[1]))
