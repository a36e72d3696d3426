"""Calibration sets page: built-in, stored and uploaded sets; a bad file unloads what was
loaded before (no old tables under the error); what a set is for and where it can go; the
typed Seed and Smoothing alpha, read strictly ("2,5" is refused, never read as 25)."""
from __future__ import annotations

import re

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.analysis.calibration_sources import example_csv

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "calibration.py")


@pytest.fixture()
def page(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    return AppTest.from_file(PAGE, default_timeout=60)


def _upload(at: AppTest, name: str, content: bytes) -> AppTest:
    at.file_uploader(key="calib_upload").set_value((name, content, "text/csv")).run()
    return at.button[0].click().run() if at.button else at


def test_synthetic_set_shows_matrices_and_alpha_changes_them(page: AppTest) -> None:
    at = page.run()
    assert not at.exception and any("No calibration set" in i.value for i in at.info)
    at.selectbox[0].set_value("S2").run()
    at.button[0].click().run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Loaded: ")
    assert len(at.get("plotly_chart")) == 3  # two confusion heatmaps and the recall bars
    before = at.get("plotly_chart")[0].proto.spec
    at.text_input(key="calib_alpha").input("3").run()
    assert at.get("plotly_chart")[0].proto.spec != before
    at.text_input(key="calib_alpha").input(".5").run()  # the default 0.5, typed without its zero
    assert not at.error and at.get("plotly_chart")[0].proto.spec == before


def _load_button(at: AppTest):  # type: ignore[no-untyped-def]
    return next(b for b in at.button if b.label == "Load synthetic set")


@pytest.mark.parametrize(("typed", "words"), [
    ("2,5", "Seed: “2,5” is not a whole number (no commas or decimal points): enter a whole number from 0 to 10000."),
    ("abc", "Seed: “abc” is not a whole number"),
    ("10001", "Seed must be from 0 to 10000; got 10001."),
    ("", "Seed is empty"),
])
def test_an_invalid_seed_blocks_loading(page: AppTest, typed: str, words: str) -> None:
    at = page.run()
    assert not _load_button(at).disabled
    at.text_input(key="calib_seed").input(typed)
    _load_button(at).click().run()  # typed and pressed at once: nothing is loaded
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(words), errors
    assert _load_button(at).disabled and "calib_set" not in at.session_state
    assert any("No calibration set loaded yet." in i.value for i in at.info)
    at.text_input(key="calib_seed").input("25").run()
    _load_button(at).click().run()
    assert not at.error and at.subheader[0].value.startswith("Loaded: synthetic S1, seed 25:")


def test_an_invalid_alpha_hides_the_matrices_until_fixed(page: AppTest) -> None:
    at = page.run()
    _load_button(at).click().run()
    at.text_input(key="calib_alpha").input("2.5").run()
    shown = [c.proto.spec for c in at.get("plotly_chart")]
    table = at.dataframe[0].value
    assert len(shown) == 3 and not at.error
    at.radio(key="calib_prior").set_value("empirical").run()
    for typed, words in (("2,5", "use a point as the decimal separator"), ("25", "must be from 0.01 to 10; got 25."),
                         ("", "Smoothing alpha is empty"), ("nan", "is not a decimal number")):
        at.text_input(key="calib_alpha").input(typed).run()
        assert not at.exception
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and errors[0].startswith("Smoothing alpha") and words in errors[0], errors
        assert not at.get("plotly_chart") and not at.dataframe  # nothing computed with another value
        assert any(i.value.startswith("The matrices, recall and prior are hidden") for i in at.info)
        assert at.subheader[0].value.startswith("Loaded: ")  # the set itself stays loaded
        assert at.radio(key="calib_prior").value == "empirical"  # the choices stay
    at.text_input(key="calib_alpha").input("2.5").run()
    assert not at.error and at.radio(key="calib_prior").value == "empirical"
    assert [c.proto.spec for c in at.get("plotly_chart")] == shown
    assert at.dataframe[0].value["prior"].tolist() != table["prior"].tolist()  # the empirical prior now


def _unloaded(at: AppTest) -> bool:
    """No set on screen or in the session: no "Loaded:" heading, no charts, no tables."""
    return (not any(h.value.startswith("Loaded: ") for h in at.subheader) and not at.get("plotly_chart")
            and not at.dataframe and "calib_set" not in at.session_state
            and any("No calibration set loaded yet." in i.value for i in at.info))


def test_upload_good_then_bad_file_unloads_the_good_one(page: AppTest) -> None:
    at = page.run()
    at.radio[0].set_value("Upload CSV").run()
    at = _upload(at, "cal.csv", example_csv().encode())
    assert not at.exception
    assert at.subheader[0].value == "Loaded: cal.csv" and at.get("plotly_chart") and at.dataframe
    at = _upload(at, "bad.csv", b"case_id,agent,reported\n1,a,k0\n")
    assert not at.exception
    errors = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]  # the text the escaped Markdown shows
    assert len(errors) == 1 and "true_label" in errors[0], errors
    assert errors[0].endswith("The set loaded before (cal.csv) is unloaded; load a set again.")
    assert _unloaded(at)  # the old set's tables are gone with it
    at = _upload(at, "cal.csv", example_csv().encode())
    assert not at.error and at.subheader[0].value == "Loaded: cal.csv"  # a good file loads again
    at.text_input(key="calib_labels").set_value("k0, k1, k2").run()
    at = _upload(at, "labels.csv", b"case_id,agent,reported_label,true_label\n1,a,k0,k9\n")
    assert any("k9" in e.value for e in at.error), [e.value for e in at.error]
    assert _unloaded(at)
    assert not any("Traceback" in e.value for e in at.error)


def test_a_loaded_set_says_what_it_is_for_and_downloads_as_csv(page: AppTest) -> None:
    from dcem.calibration.sets import parse_calibration_csv

    at = page.run()
    assert any("What a calibration set is for." in m.value for m in at.markdown)
    assert not any(h.value == "Use this set" for h in at.subheader)  # nothing to use yet
    at.radio[0].set_value("Upload CSV").run()
    at = _upload(at, "cal.csv", example_csv().encode())
    assert any(h.value == "Use this set" for h in at.subheader)
    download = at.get("download_button")[-1].proto
    assert download.label == "Download this set (CSV)"
    captions = [c.value for c in at.caption]
    assert any("session-state key `calib_set`" in c for c in captions)
    assert not any("does not read this set" in c for c in captions)
    assert any(c.startswith("Loss and thresholds re-scores a stored run with this set") and
               "Use the loaded calibration set" in c and "alpha = 0.5" in c for c in captions)
    assert any(c.startswith("Escalation review adds the cases a reviewer has labelled") for c in captions)
    assert any(c.startswith("Experiments launches synthetic runs") and "drawn from the scenario" in c
               and "cannot take this set" in c for c in captions)
    assert any(m.value == "**Use in Loss and thresholds** (the Loss and thresholds page, in the sidebar)"
               for m in at.markdown)  # run on its own, the page has no navigation to link into
    loaded = at.session_state["calib_set"]
    again, _ = parse_calibration_csv(loaded.to_csv(), source="again")
    assert again.n_cases == loaded.n_cases and (again.counts() == loaded.counts()).all()


def test_the_set_links_to_the_pages_that_use_it_in_the_dashboard(run_db: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/calibration.py").run()
    at.button[0].click().run()  # load the synthetic set
    assert not at.exception and at.session_state["calib_set"] is not None
    links = {link.proto.label: link.proto.page for link in at.get("page_link")}
    assert set(links) == {"Escalation review", "Use in Loss and thresholds", "Experiments"}, links
    assert links["Use in Loss and thresholds"].endswith("whatif") and links["Escalation review"].endswith("review")
    at.switch_page("pages/whatif.py").run()  # where the link goes: the set is offered there
    assert not at.exception and not at.error
    assert at.toggle(key="wi_calib").label.startswith("Use the loaded calibration set (synthetic S1, seed 0:")


def test_stored_run_source(page: AppTest) -> None:
    at = page.run()
    at.radio[0].set_value("Stored run").run()
    at.button[0].click().run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Loaded: run ui-run S1/seed 0")
    assert "24 cases, 2 agents" in at.caption[-1].value or any("24 cases" in c.value for c in at.caption)


def _rows_csv(rows: list[str]) -> bytes:
    return ("case_id,agent,reported_label,true_label\n" + "\n".join(rows) + "\n").encode()


def test_defect8_too_many_labels_show_an_error_not_a_traceback(page: AppTest) -> None:
    """8,000 labels (157 KB) reached 2.1 GB and 30,000 raised MemoryError outside the
    page's error handling; now the upload stops at label 201 with st.error (and the set
    loaded before is unloaded, so that its tables do not stand under the error)."""
    at = page.run()
    at.radio[0].set_value("Upload CSV").run()
    for n_labels in (8_000, 30_000):
        at = _upload(at, "cal.csv", example_csv().encode())
        at = _upload(at, "labels.csv", _rows_csv([f"c{i},A,L{i},L{i}" for i in range(n_labels)]))
        assert not at.exception
        errors = [e.value for e in at.error]
        assert errors == ["The file was not loaded: labels: line 202: 'L200' is distinct label number 201; "
                          "a calibration file may have at most 200 labels (true and reported)\n\n"
                          "The set loaded before (cal.csv) is unloaded; load a set again."], errors
        assert _unloaded(at)
    at.text_input(key="calib_labels").set_value(",".join(f"L{i}" for i in range(201))).run()
    at = _upload(at, "labels.csv", example_csv().encode())
    assert [e.value for e in at.error] == ["The file was not loaded: labels: 201 labels given; a calibration "
                                           "set may have at most 200 labels"]  # (no set was loaded before)


def test_defect7_many_agents_show_a_few_heatmaps_and_counted_warnings(page: AppTest) -> None:
    """A set of 1,000 agents (the cap) over 200 labels' worth of cases: four heatmaps, a
    choice of agents, and the skipped-case warnings counted beyond the first ten."""
    at = page.run()
    at.radio[0].set_value("Upload CSV").run()
    rows = [f"c{i},a{i % 1000},k{i % 3},k{i % 3}" for i in range(3000)]
    at = _upload(at, "agents.csv", _rows_csv(rows))
    assert not at.exception and not at.error
    assert at.subheader[0].value == "Loaded: agents.csv"
    assert len(at.warning) == 11 and at.warning[-1].value.startswith("990 more agents have no row for some cases")
    assert len(at.get("plotly_chart")) == 5  # four heatmaps and the recall bars
    picker = at.multiselect[0]
    assert picker.value == ["a0", "a1", "a2", "a3"]
    picker.set_value(["a999"]).run()
    assert not at.exception and len(at.get("plotly_chart")) == 2
    assert ("3000 cases, 1000 agents, labels k0, k1, k2. Confusions and prior counted from the 3,000 labelled "
            "cases.") in [c.value for c in at.caption]


def test_defect8_two_hundred_labels_render_without_cell_text(page: AppTest) -> None:
    at = page.run()
    at.radio[0].set_value("Upload CSV").run()
    rows = [f"c{i},{agent},L{(i + (agent == 'B')) % 200},L{i % 200}" for i in range(400) for agent in "AB"]
    at = _upload(at, "labels.csv", _rows_csv(rows))
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 3
    caption = next(c.value for c in at.caption if c.value.startswith("400 cases"))
    assert caption.startswith("400 cases, 2 agents, labels L0, L1, L10, L100") and "(200 labels). Confusions and prior counted" in caption
    assert len(at.dataframe[0].value) == 200
    heatmap = at.get("plotly_chart")[0].proto.spec
    assert '"texttemplate"' not in heatmap  # 40,000 cells: colours and hover only


def _unlabelled_csv(n: int, agents: int, keep: int = 0, seed: int = 3) -> bytes:
    """Reports of ``agents`` fair agents on ``n`` cases; only the first ``keep`` labelled."""
    import numpy as np

    rng = np.random.default_rng(seed)
    truth = rng.choice(3, n, p=(0.5, 0.3, 0.2))
    lines = ["case_id,agent,reported_label,true_label"]
    for i in range(n):
        for a in range(agents):
            report = truth[i] if rng.random() < 0.8 else (truth[i] + rng.integers(1, 3)) % 3
            lines.append(f"c{i},agent {a + 1},k{report}," + (f"k{truth[i]}" if i < keep else ""))
    return ("\n".join(lines) + "\n").encode()


def test_an_unlabelled_upload_is_estimated_and_says_so(page: AppTest) -> None:
    at = page.run()
    at.radio[0].set_value("Upload CSV").run()
    at = _upload(at, "unlabelled.csv", _unlabelled_csv(120, 3, keep=6))
    assert not at.exception and not at.error
    assert at.warning[-1].value.startswith("114 of 120 cases have no true label")
    caption = next(c.value for c in at.caption if c.value.startswith("120 cases"))
    assert caption.startswith("120 cases (6 labelled), 3 agents, labels k0, k1, k2.")
    assert caption.endswith("by Dawid-Skene (a full matrix per agent) from the reports on 120 cases; the 6 "
                            "labelled cases are fixed to their truth.")
    charts = at.get("plotly_chart")
    assert len(charts) == 4 and "estimated probabilities" in charts[0].proto.spec
    assert "Per-class recall, estimated" in charts[-1].proto.spec
    table = at.dataframe[0].value
    assert list(table.columns) == ["label", "cases", "estimated cases", "prior"]
    assert table["cases"].sum() == 6 and abs(table["estimated cases"].sum() - 120) < 0.5
    at.selectbox(key="calib_estimator").set_value("one-coin").run()
    at.button[0].click().run()
    assert "one-coin Dawid-Skene (one accuracy per agent)" in next(
        c.value for c in at.caption if c.value.startswith("120 cases"))


def test_an_unusable_label_free_estimate_is_refused_and_unloads_the_old_set(page: AppTest) -> None:
    at = page.run()
    at.radio[0].set_value("Upload CSV").run()
    at = _upload(at, "fine.csv", _unlabelled_csv(60, 3))
    assert at.subheader[0].value == "Loaded: fine.csv"
    at = _upload(at, "few.csv", _unlabelled_csv(6, 3))
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The file was not loaded: calibration: the dawid-skene estimate "
                                                     "of few.csv cannot be used: only 6 cases")
    assert "set loaded before (fine.csv) is unloaded" in errors[0] and "calib_set" not in at.session_state
    at.selectbox(key="calib_estimator").set_value("dawid-skene").run()
    at = _upload(at, "pair.csv", _unlabelled_csv(60, 2))
    assert "dawid-skene cannot identify the agents' matrices from 2 agent(s)" in at.error[0].value


def test_a_two_agent_stored_run_without_its_labels_is_refused_with_the_labels_it_needs(page: AppTest) -> None:
    """Two agents' reports alone cannot say which one is right when they disagree (issue 51):
    the page says so and how many labelled cases would settle it, and loads nothing."""
    at = page.run()
    at.radio[0].set_value("Stored run").run()
    assert at.selectbox(key="calib_run_estimator").disabled
    at.checkbox(key="calib_run_unlabelled").check().run()
    assert not at.selectbox(key="calib_run_estimator").disabled
    at.button[0].click().run()
    assert not at.exception and "calib_set" not in at.session_state
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The set was not loaded: agents: with two agents the reports "
                                                     "alone cannot tell which one is right when they disagree")
    assert "at least 6, all for the same agent" in errors[0] and "this set has none" in errors[0]
