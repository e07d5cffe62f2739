"""The validation layer (bufsim._validation) and the probes of issue 17 it fixes.

Each probe is a test of a public function: numpy integers are accepted where an
integer is (and stored as Python ints), a fraction is never truncated, results
tables refuse inf / bool / None with the row and column, and any bad argument is a
ValueError, never a TypeError.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

import bufsim
from bufsim import paths
from bufsim._validation import TraceError, check_bool, check_int, check_ns, check_number, span
from bufsim.config import CostModel, DeviceModel, PoolConfig, mysql56
from bufsim.results import results_frame, write_results


# ---- the checks themselves -----------------------------------------------------------------
@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=40))
def test_span_is_min_and_max(values):
    """span() is what the engine's feed checks pages and cpu_ns with (one pass)."""
    a = np.array(values, dtype=np.int64)
    assert span(a) == (a.min(), a.max())
    u = (a & 0xFF).astype(np.uint8)
    assert span(u) == (u.min(), u.max())


@pytest.mark.parametrize("value", [5, np.int8(5), np.int64(5), np.uint32(5)])
def test_check_int_accepts_python_and_numpy_integers(value):
    v = check_int("x", value, 0, 10)
    assert v == 5 and type(v) is int


@pytest.mark.parametrize("value, match", [
    (1.7, r"x must be an integer \(0\.\.10\), got 1\.7 \(float\)"),
    (1.0, r"got 1\.0 \(float\)"),
    (True, r"got True \(bool\)"),
    (np.bool_(True), r"got .*True.* \(bool"),
    ("3", r"got '3' \(str\)"),
    (None, r"got None \(NoneType\)"),
    (11, r"x=11 is out of range; allowed: 0\.\.10"),
    (np.int64(-1), r"x=-1 is out of range; allowed: 0\.\.10"),
])
def test_check_int_rejects_naming_the_value_and_its_type(value, match):
    with pytest.raises(ValueError, match=match):
        check_int("x", value, 0, 10)


def test_check_ns_and_number_and_bool():
    assert check_ns("t", 2**63 - 1) == 2**63 - 1
    with pytest.raises(ValueError, match=r"t=9223372036854775808 is out of range"):
        check_ns("t", 2**63)
    assert check_number("r", np.float32(0.5)) == 0.5
    assert math.isnan(check_number("r", float("nan"), allow_nan=True))
    for bad, match in ((float("inf"), "not finite"), (float("nan"), "NaN"), (True, r"\(bool\)"),
                       (None, r"\(NoneType\)"), ("1", r"\(str\)"), (10**400, "out of range")):
        with pytest.raises(ValueError, match=match):
            check_number("r", bad)
    assert check_bool("b", np.bool_(False)) is False
    with pytest.raises(ValueError, match=r"b must be True or False, got 1 \(int\)"):
        check_bool("b", 1)
    assert issubclass(TraceError, ValueError) and bufsim.TraceError is TraceError


# ---- probe: numpy integers in config fields ------------------------------------------------
def test_config_accepts_numpy_integers_and_stores_python_ints():
    cfg = mysql56(pool_pages=np.int64(8192), old_blocks_time_ms=np.int32(1000),
                  old_blocks_pct=np.uint8(37), instances=np.int64(2))
    assert cfg.pool_pages == 8192 and type(cfg.pool_pages) is int
    assert type(cfg.old_blocks_time_ms) is int and type(cfg.instances) is int
    assert CostModel(evict_ns=np.int64(7)).evict_ns == 7
    assert type(DeviceModel(seq_read_ns=np.int32(9)).seq_read_ns) is int
    assert cfg == mysql56(pool_pages=8192, old_blocks_time_ms=1000, old_blocks_pct=37, instances=2)


@pytest.mark.parametrize("field, value, match", [
    ("old_blocks_time_ms", 1.7, r"old_blocks_time_ms must be an integer \(0\.\.4294967295\), "
                                r"got 1\.7 \(float\)"),
    ("pool_pages", 8192.0, r"pool_pages must be an integer .*got 8192\.0 \(float\)"),
    ("old_blocks_pct", True, r"old_blocks_pct must be an integer \(5\.\.95\), got True \(bool\)"),
    ("adaptive_hash_index", 1, r"adaptive_hash_index must be True or False, got 1 \(int\)"),
])
def test_config_rejects_non_integers_naming_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        PoolConfig(**{field: value})


# ---- probe: old_blocks_time_ms_at(1.7) --------------------------------------------------------
@pytest.mark.parametrize("entry, match", [
    ((0, 1.7), r"old_blocks_time_ms_at\[0\] ms must be an integer .*got 1\.7 \(float\)"),
    ((1.5, 10), r"old_blocks_time_ms_at\[0\] time_ns must be an integer .*got 1\.5 \(float\)"),
    ((0, -1), r"old_blocks_time_ms_at\[0\] ms=-1 is out of range"),
    ((0,), r"old_blocks_time_ms_at\[0\] must be a pair \(time_ns, ms\)"),
])
def test_old_blocks_time_ms_at_rejects_fractions(entry, match):
    trace = bufsim.Trace.from_arrays([0, 1, 2])
    with pytest.raises(ValueError, match=match):
        bufsim.replay(trace, mysql56(pool_pages=400), old_blocks_time_ms_at=[entry])


def test_old_blocks_time_ms_at_accepts_numpy_integers():
    trace = bufsim.Trace.from_arrays([0, 1, 2])
    r = bufsim.replay(trace, mysql56(pool_pages=400),
                      old_blocks_time_ms_at=[(np.int64(0), np.int32(5))])
    assert r.totals["NUMBER_PAGES_GET"] == 3


# ---- probe: write_results rejects inf, bool and None ---------------------------------------
ROW = {"experiment": "ssb", "metric": "q1.1 seconds", "config": "5.6 128M t=1000",
       "reported": 33.94, "simulated": 30.5, "fitted": False}


@pytest.mark.parametrize("col, value, match", [
    ("simulated", float("inf"), r"results row 1, column 'simulated': .*not finite"),
    ("reported", float("-inf"), r"results row 1, column 'reported': .*not finite"),
    ("simulated", True, r"results row 1, column 'simulated': .*\(bool\)"),
    ("reported", None, r"results row 1, column 'reported': .*\(NoneType\)"),
    ("simulated", None, r"results row 1, column 'simulated': .*\(NoneType\)"),
    ("metric", None, r"results row 1, column 'metric': must be a non-empty string"),
    ("config", True, r"results row 1, column 'config': must be a non-empty string"),
    ("experiment", "", r"results row 1, column 'experiment': must be a non-empty string"),
])
def test_write_results_rejects_inf_bool_none(tmp_path, monkeypatch, col, value, match):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path))
    with pytest.raises(ValueError, match=match):
        write_results("01_x", [ROW, {**ROW, col: value}])
    assert not (tmp_path / "results" / "01_x.csv").exists()


def test_results_accept_numpy_numbers():
    f = results_frame([{**ROW, "reported": np.float32(2.0), "simulated": np.int64(3),
                        "fitted": np.bool_(True)}])
    assert f.loc[0, "ratio"] == 1.5 and f.loc[0, "fitted"] is np.True_


def test_results_frame_rejects_a_non_mapping_row():
    with pytest.raises(ValueError, match=r"results row 0 must be a mapping"):
        results_frame([("ssb", "m")])


# ---- property: config validation never raises anything but ValueError ----------------------
_ANY = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                 st.integers(-2**31, 2**31).map(np.int64), st.lists(st.integers(), max_size=2))
_FIELDS = ("pool_pages", "instances", "old_blocks_pct", "old_blocks_time_ms",
           "read_ahead_threshold", "lru_scan_depth", "misc_pages", "adaptive_hash_index",
           "policy", "version", "cleaner_activity", "device")


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from(_FIELDS), _ANY, max_size=3))
def test_pool_config_any_input_is_a_config_or_a_value_error(fields):
    try:
        cfg = PoolConfig(**fields)
    except ValueError as e:
        assert str(e)
        return
    for k in ("pool_pages", "instances", "old_blocks_pct", "old_blocks_time_ms"):
        assert type(getattr(cfg, k)) is int


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(st.sampled_from(["reported", "simulated", "fitted", "metric", "config"]),
                       _ANY, max_size=3))
def test_results_frame_any_input_is_a_frame_or_a_value_error(changes):
    try:
        f = results_frame([{**ROW, **changes}])
    except ValueError as e:
        assert str(e).startswith("results row 0")
        return
    assert math.isfinite(f.loc[0, "simulated"])
