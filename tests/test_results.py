"""bufsim.results: the reported-versus-simulated tables of the notebooks."""
import json
import math

import pandas as pd
import pytest

from bufsim import paths
from bufsim.results import COLUMNS, claims_frame, results_frame, write_claims, write_results

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
    assert sorted(p.name for p in path.parent.iterdir()) == ["01_x.csv",
                                                              "01_x.csv.provenance.json"]
    meta = json.loads((path.parent / "01_x.csv.provenance.json").read_text())
    assert meta["table"] == "01_x.csv" and meta["rows"] == 1 and "git_commit" in meta


def test_claims_need_a_boolean_holds_column(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path))
    path = write_claims("02_x", [{"claim": "a", "holds": True}, {"claim": "b", "holds": False}])
    assert path.name == "02_x.claims.csv"
    assert pd.read_csv(path)["holds"].tolist() == [True, False]
    with pytest.raises(ValueError, match="holds"):
        claims_frame([{"claim": "a"}])
    with pytest.raises(ValueError, match=r"row 1: holds must be True or False"):
        claims_frame([{"claim": "a", "holds": True}, {"claim": "b", "holds": "yes"}])
    with pytest.raises(ValueError, match="no row"):
        claims_frame([])
