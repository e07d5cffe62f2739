"""bufsim.results: the reported-versus-simulated tables of the notebooks."""
import math

import pandas as pd
import pytest

from bufsim import paths
from bufsim.results import COLUMNS, results_frame, write_results

ROW = {"experiment": "ssb", "metric": "q1.1 seconds", "config": "5.6 128M t=1000",
       "reported": 33.94, "simulated": 30.5, "fitted": False}


def test_ratio_is_simulated_over_reported():
    frame = results_frame([ROW, {**ROW, "reported": float("nan")}, {**ROW, "reported": 0}])
    assert list(frame.columns) == list(COLUMNS)
    assert frame["ratio"][0] == pytest.approx(30.5 / 33.94)
    assert math.isnan(frame["ratio"][1]) and math.isnan(frame["ratio"][2])


@pytest.mark.parametrize("bad, field", [
    ({"simulated": "fast"}, "simulated"),
    ({"simulated": float("nan")}, "simulated is NaN"),
    ({"fitted": "no"}, "fitted"),
    ({"reportd": 1.0}, "unknown"),
])
def test_bad_rows_name_the_field(bad, field):
    row = {**ROW, **bad}
    with pytest.raises(ValueError, match=field):
        results_frame([ROW, row])


def test_write_results_round_trips_and_keeps_old_file_on_error(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path))
    path = write_results("01_x", [ROW])
    back = pd.read_csv(path)
    assert back.loc[0, "simulated"] == 30.5 and bool(back.loc[0, "fitted"]) is False
    with pytest.raises(ValueError):
        write_results("01_x", [{**ROW, "fitted": 1}])
    assert pd.read_csv(path).equals(back)
    assert [p.name for p in path.parent.iterdir()] == ["01_x.csv"]
