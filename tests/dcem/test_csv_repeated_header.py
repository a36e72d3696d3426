"""A header line repeated below line 1 of a calibration CSV (two files joined together) is
refused with its line number, never read as a data row that adds labels and an agent."""
from __future__ import annotations

import pytest

from dcem.calibration.csv_import import parse_csv_rows
from dcem.calibration.sets import parse_calibration_csv
from common.errors import InputError

ROWS = "c1,A,k0,k0\nc1,B,k1,k0\nc2,A,k1,k1\nc2,B,k1,k1\n"


@pytest.mark.parametrize("repeat, line", [
    ("case_id,agent,reported_label,true_label", 6),
    (" Case ID , AGENT ,Reported-Label,TRUE_LABEL", 6),
    ('"case_id","agent","reported_label","true_label"', 6),
])
def test_a_repeated_header_is_refused_with_its_line(repeat: str, line: int) -> None:
    text = "case_id,agent,reported_label,true_label\n" + ROWS + repeat + "\n" + ROWS.replace("c", "d")
    with pytest.raises(InputError, match=rf"^file: line {line} repeats the header \(line 1\)"):
        parse_csv_rows(text)


def test_a_repeated_header_in_other_column_order_and_with_a_label_list() -> None:
    text = ("true_label,reported_label,agent,case_id,notes\n" + "k0,k0,A,c1,x\n"
            + "true_label,reported_label,agent,case_id,notes\n" + "k1,k1,A,c2,y\n")
    with pytest.raises(InputError, match="^file: line 3 repeats the header"):
        parse_csv_rows(text, labels=["k0", "k1"])
    with pytest.raises(InputError, match="^file: line 3 repeats the header"):
        parse_calibration_csv(text.encode())


def test_values_that_only_look_like_column_names_stay_data() -> None:
    text = "case_id,agent,reported_label,true_label\nc1,agent,true_label,true_label\nc2,agent,k1,k1\n"
    parsed = parse_csv_rows(text)
    assert parsed.agents == ("agent",) and parsed.labels == ("k1", "true_label")
