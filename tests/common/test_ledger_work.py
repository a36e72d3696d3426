"""run_units with a ledger, shown on a small test-only kind of run: a toy spec, job, sink and one table.

The kind ``toy`` multiplies each unit's number by the spec's ``scale`` and stores it in
``toy_results``; the run is killed part-way, resumed without recomputing what is stored,
records a failing unit's message, and refuses a resume with another spec.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from common.db import Database
from common.errors import ConfigError
from common.ledger import Ledger
from common.resume import ResumeRefused
from common.work import Failure, Unit, run_units
from tests.common.toy_kind import RUN, SPEC, UNITS, ToyJob, ToySink, ToySpec, ToyStore


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Database]:
    with ToyStore(tmp_path / "toy.duckdb") as db:
        yield db


def _stored(store: Database) -> dict[str, int]:
    return dict(store.con.execute("SELECT unit_key, value FROM toy_results ORDER BY unit_key").fetchall())


def _run(store: Database, job: ToyJob, sink: ToySink | None = None, spec: ToySpec = SPEC, **kw: Any):
    return run_units(sink or ToySink(), UNITS, job, run_id=RUN, ledger=Ledger(store), kind="toy", spec=spec, **kw)


def test_killed_resumed_failed_and_finished(store: Database) -> None:
    killed = ToyJob(10, stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        _run(store, killed)
    ledger = Ledger(store)
    assert ledger.run(RUN).status == "running"  # killed: nothing could mark it
    assert ledger.done_keys(RUN) == {"u0", "u1"} and _stored(store) == {"u0": 0, "u1": 10}

    sink, again = ToySink(), ToyJob(10, fail_key="u3")
    summary = _run(store, again, sink)
    assert again.computed == ["u2", "u3", "u4"]  # the stored units are not computed again
    assert (summary.resumed, summary.skipped, summary.computed, summary.total, summary.complete) == (
        True, 2, 2, 5, False)
    assert [(f.key, f.message) for f in summary.failed] == [("u3", "ValueError: no answer for u3")]
    assert sink.failures == [("u3", "ValueError: no answer for u3")]
    units = ledger.units(RUN).set_index("unit_key")
    assert units.loc["u3", "state"] == "failed" and units.loc["u3", "message"] == "ValueError: no answer for u3"
    assert ledger.run(RUN).status == "failed" and (ledger.run(RUN).done, ledger.run(RUN).failed) == (4, 1)

    last = ToyJob(10)
    summary = _run(store, last)
    assert last.computed == ["u3"] and summary.complete and (summary.skipped, summary.computed) == (4, 1)
    run = ledger.run(RUN)
    assert (run.status, run.done, run.failed, run.spec, run.kind) == ("finished", 5, 0, SPEC.to_dict(), "toy")
    assert _stored(store) == {f"u{i}": 10 * i for i in range(5)}

    done_again = ToyJob(10)
    summary = _run(store, done_again)  # a finished run computes nothing
    assert done_again.computed == [] and summary.complete and summary.computed == 0


def test_a_resume_with_another_spec_is_refused_naming_the_field(store: Database) -> None:
    with pytest.raises(KeyboardInterrupt):
        _run(store, ToyJob(10, stop_after=1))
    before = (_stored(store), Ledger(store).units(RUN).to_dict("list"), Ledger(store).run(RUN))
    other = ToyJob(3)
    with pytest.raises(ResumeRefused, match=r"scale stored 10, given 3; nothing was written") as info:
        _run(store, other, spec=ToySpec(n=5, scale=3))
    assert info.value.field == "scale" and other.computed == []
    assert (_stored(store), Ledger(store).units(RUN).to_dict("list"), Ledger(store).run(RUN)) == before


def test_a_ledger_run_needs_its_kind_spec_and_a_writing_sink(store: Database) -> None:
    class OldSink:
        def save(self, unit: Unit, result: Any) -> None: ...

        def fail(self, unit: Unit, failure: Failure) -> None: ...

    with pytest.raises(ConfigError, match="needs its kind and spec"):
        run_units(ToySink(), UNITS, ToyJob(10), run_id=RUN, ledger=Ledger(store))
    with pytest.raises(ConfigError, match="OldSink has no write"):
        run_units(OldSink(), UNITS, ToyJob(10), run_id=RUN, ledger=Ledger(store), kind="toy", spec=SPEC)
    with pytest.raises(ConfigError, match="listed twice"):
        run_units(ToySink(), UNITS + UNITS[:1], ToyJob(10), run_id=RUN, ledger=Ledger(store), kind="toy", spec=SPEC)
    assert Ledger(store).runs().empty and _stored(store) == {}


def test_a_spec_may_be_given_as_its_dict(store: Database) -> None:
    summary = run_units(ToySink(), UNITS, ToyJob(10), run_id=RUN, ledger=Ledger(store), kind="toy",
                        spec=SPEC.to_dict())
    assert summary.complete and not summary.resumed and Ledger(store).run(RUN).spec == {"n": 5, "scale": 10}


def test_a_cancelled_run_stays_running_with_what_it_stored(store: Database) -> None:
    job = ToyJob(10)
    summary = _run(store, job, cancel=lambda: len(job.computed) >= 2)
    assert not summary.complete and summary.computed == 2 and not summary.failed
    run = Ledger(store).run(RUN)
    assert (run.status, run.done, run.failed) == ("running", 2, 0)
