"""The project's words, defined once: scenarios, steer gates, prior modes and methods.

Methods live in a registry: every method key that a run can store, with its display
label, its display order and, for a mediated method, whether STOP_AND_ESCALATE is on.
A new method (SAG's group methods, say) joins with :func:`register_method` in its own
package; reports, charts and pages read the registry, so no list elsewhere needs
editing.  Actions are :class:`dcem.core.policy.Action`.
"""
from __future__ import annotations

from dataclasses import dataclass

from common.errors import ConfigError

__all__ = ["SCENARIOS", "STEER_GATES", "PRIOR_MODES", "Method", "register_method", "method",
           "method_keys", "method_label", "mediated_methods", "escalates", "order_methods",
           "DEFAULT_METHODS"]

# The four scenarios of the synthetic world (Table 3), reused as the clinical role mixes.
SCENARIOS: tuple[str, ...] = ("S1", "S2", "S3a", "S3b")
# Which agent gets a DIFFERENTIAL_STEER: the riskiest one, or the largest reliability gap.
STEER_GATES: tuple[str, ...] = ("risk", "reliability_gap")
PRIOR_MODES: tuple[str, ...] = ("uniform", "empirical")


@dataclass(frozen=True)
class Method:
    """A method a run can store.

    key : the stored name; label : what tables and pages show; mediated : True when
    D-CEM's policy drives it (its outcomes can be re-scored and reviewed); escalation :
    whether STOP_AND_ESCALATE is enabled (mediated methods only); family : who adds it.
    """

    key: str
    label: str
    mediated: bool = False
    escalation: bool = False
    family: str = "dcem"

    def __post_init__(self) -> None:
        if not self.key or not self.key.replace("_", "").replace("-", "").isalnum():
            raise ConfigError("method", f"a method key is letters, digits, '_' or '-', got {self.key!r}")
        if self.escalation and not self.mediated:
            raise ConfigError("escalation", f"method {self.key!r}: only a mediated method can escalate")


_REGISTRY: dict[str, Method] = {}


def register_method(entry: Method) -> Method:
    """Add a method (idempotent for an identical entry; a different one under a known key is refused)."""
    known = _REGISTRY.get(entry.key)
    if known is not None and known != entry:
        raise ConfigError("method", f"method {entry.key!r} is already registered as {known}")
    _REGISTRY[entry.key] = entry
    return entry


DEFAULT_METHODS = tuple(register_method(m).key for m in (
    Method("single", "Single best"),
    Method("free", "Free discussion"),
    Method("pool", "Fixed log pool"),
    Method("dcem", "D-CEM", mediated=True, escalation=True),
    Method("dcem_noesc", "D-CEM w/o escalation", mediated=True, escalation=False),
))


def method(key: str) -> Method:
    """The registered method ``key``."""
    try:
        return _REGISTRY[key]
    except KeyError:
        raise ConfigError("method", f"unknown method {key!r} (known: {', '.join(_REGISTRY)})") from None


def method_keys() -> tuple[str, ...]:
    """Every registered method key, in display order."""
    return tuple(_REGISTRY)


def method_label(key: str) -> str:
    """Display label of a method (the key itself when it is not registered)."""
    entry = _REGISTRY.get(key)
    return entry.label if entry is not None else key


def mediated_methods() -> dict[str, bool]:
    """Mediated method key -> whether STOP_AND_ESCALATE is on."""
    return {k: m.escalation for k, m in _REGISTRY.items() if m.mediated}


def escalates(key: str) -> bool:
    """Whether the mediated method ``key`` escalates (ConfigError for an unmediated one)."""
    entry = method(key)
    if not entry.mediated:
        raise ConfigError("method", f"method {key!r} is not mediated")
    return entry.escalation


def order_methods(keys: set[str] | list[str] | tuple[str, ...]) -> list[str]:
    """``keys`` in display order: registered ones first, then the rest sorted."""
    present = set(keys)
    return [k for k in _REGISTRY if k in present] + sorted(present - set(_REGISTRY))
