"""bufsim.experiments.ssb_evidence: the diagnosis computations of notebook 01."""
import numpy as np
import pandas as pd
import pytest

from bufsim.experiments.ssb_evidence import (
    implied_check_cost, profile_offthread, q11_identifiability, table_implied,
)
from bufsim.experiments import ssb_evidence as E
from bufsim.paths import data_dir


def _counters(times=(10.0, 30.0, 12.0, 20.0), row=0.1, get=0.2, check=5.0, read=50.0):
    """Synthetic Q1.1 counters whose times follow known constants (us) unless given."""
    runs = {("scan", 0): (6e6, 6.1e6, 0, 4e4), ("scan", 1000): (6e6, 6.1e6, 4.8e6, 4e4),
            ("date_first", 0): (9e5, 3.8e6, 0, 1.9e5), ("date_first", 1000): (9e5, 3.7e6, 2e6, 1.8e5)}
    out = []
    for (plan, t), (rows, gets, checks, reads) in runs.items():
        sec = (rows * row + gets * get + checks * check + reads * read) / 1e6
        for m, v in (("INNODB_ROWS_READ", rows), ("NUMBER_PAGES_GET", gets),
                     ("PAGES_NOT_MADE_YOUNG", checks), ("NUMBER_PAGES_READ", reads),
                     ("query_seconds", sec)):
            out.append(dict(plan=plan, old_blocks_time_ms=t, metric=m, value=v))
    return pd.DataFrame(out)


def test_identifiability_recovers_known_constants_and_ranges_widen():
    r = q11_identifiability(_counters(), rel_errors=(0.0, 0.01, 0.05))
    np.testing.assert_allclose(r["solution_us"].to_numpy(), [0.1, 0.2, 5.0, 50.0], rtol=1e-6)
    rg = r["ranges"].set_index(["constant", "rel_error"])
    assert rg.loc[("get_us", 0.0), "low_us"] == pytest.approx(0.2, rel=1e-6)
    w1 = rg.loc[("get_us", 0.01)].high_us - rg.loc[("get_us", 0.01)].low_us
    w5 = rg.loc[("get_us", 0.05)].high_us - rg.loc[("get_us", 0.05)].low_us
    assert 0 < w1 < w5
    assert r["condition"] > 10


def test_identifiability_on_the_document_pins_only_the_check():
    c = pd.read_csv(data_dir() / "ssb_q11_counters.csv")
    r = q11_identifiability(c, rel_errors=(0.02,))
    rg = r["ranges"].set_index("constant")
    assert 4.5 < rg.loc["check_us"].low_us < rg.loc["check_us"].high_us < 6.5
    # +-2% on the times moves the per-get CPU over a range wider than 10 us
    assert rg.loc["get_us"].high_us - rg.loc["get_us"].low_us > 10


def test_implied_check_cost_per_plan():
    d = implied_check_cost(_counters(row=0, get=0, read=0, check=4.0)).set_index("plan")
    assert d.loc["scan", "us_per_check"] == pytest.approx(4.0)
    doc = implied_check_cost(pd.read_csv(data_dir() / "ssb_q11_counters.csv")).set_index("plan")
    assert doc.loc["scan", "us_per_check"] == pytest.approx(26.13 / 4824154 * 1e6)
    assert doc.loc["date_first", "us_per_check"] == pytest.approx(10.18 / 2054952 * 1e6)


def test_profile_offthread_lower_bound():
    c = pd.read_csv(data_dir() / "ssb_q11_counters.csv")
    p = pd.read_csv(data_dir() / "ssb_q11_profile.csv")
    d = profile_offthread(p, c).set_index("old_blocks_time_ms")
    assert d.loc[0, "offthread_cpu_min_s"] == pytest.approx(13.027019 - 7.523023)
    assert d.loc[0, "offthread_us_per_read_min"] == pytest.approx((13.027019 - 7.523023) / 39009 * 1e6)
    assert (d.block_ops == 0).all()


def test_table_implied_arithmetic():
    times = pd.DataFrame([
        dict(version="5.6", buffer_pool="4G", old_blocks_time_ms=0, run=r, seconds=s)
        for r, s in (("Cold", 110.0), ("Run1", 10.0), ("Run2", 10.0), ("Run3", 10.0))] + [
        dict(version="5.6", buffer_pool="128M", old_blocks_time_ms=0, run=r, seconds=s)
        for r, s in (("Cold", 150.0), ("Run1", 50.0), ("Run2", 50.0), ("Run3", 50.0))] + [
        dict(version="5.6", buffer_pool="128M", old_blocks_time_ms=1000, run=r, seconds=s)
        for r, s in (("Cold", 200.0), ("Run1", 80.0), ("Run2", 80.0), ("Run3", 80.0))])
    m = pd.DataFrame({"gets": [1e8, 1e8, 1e8], "pages_read": [0, 1e5, 1e5],
                      "not_made_young": [0, 0, 1e7]},
                     index=["5.6 4G t=0", "5.6 128M t=0", "5.6 128M t=1000"])
    d = table_implied(times, m, cold_pages=1000)
    assert d.loc["5.6 4G t=0", "us_per_get"] == pytest.approx(0.1)
    assert d.loc["5.6 128M t=0", "us_per_read"] == pytest.approx((50 - 10) / 1e5 * 1e6)
    assert d.loc["5.6 128M t=1000", "us_per_check"] == pytest.approx(30 / 1e7 * 1e6)
    assert d.loc["5.6 4G t=0", "ms_per_cold_page"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="cold_pages"):
        table_implied(times, m, cold_pages=0)
    with pytest.raises(ValueError, match="no row"):
        table_implied(times, m.iloc[:2])


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="rel_errors"):
        q11_identifiability(_counters(), rel_errors=(1.5,))
    with pytest.raises(ValueError, match="metric"):
        q11_identifiability(_counters().query("metric != 'query_seconds'"))


def test_lock_kernels_execute_the_fast_paths_they_time():
    import ctypes

    k = E._lock_kernels()
    n = 1000
    free = (ctypes.c_int64 * 2)(0, 0)
    assert k["mutex"](free, n) == n and list(free) == [0, 0]
    waiting = (ctypes.c_int64 * 2)(0, 1)            # a waiter: every exit would signal
    assert k["mutex"](waiting, n) == 0 and list(waiting) == [0, 1]
    rw = (ctypes.c_int64 * 2)(E.X_LOCK_DECR, 0)
    assert k["rw_s"](rw, n) == n and rw[0] == E.X_LOCK_DECR
    x_locked = (ctypes.c_int64 * 2)(0, 0)           # lock_word 0: an x-lock is held
    assert k["rw_s"](x_locked, n) == 0
    t = E.lock_pair_ns(n=10_000, repeat=2)
    assert set(t) == {"mutex", "rw_s", "loop"} and all(0 < v < np.inf for v in t.values())
    with pytest.raises(ValueError, match="repeat"):
        E.lock_pair_ns(repeat=0)
    with pytest.raises(ValueError, match="n"):
        E.lock_pair_ns(n=0)


def test_ahi_heap_is_the_fixed_point_of_its_two_equations():
    nodes = (16384 - E.MEM_BLOCK_HEADER_BYTES) // E.AHI_NODE_BYTES
    assert nodes == 677                       # 24-byte nodes in a 16 KiB frame less its header
    ratio = (37 * 1024 // 100) / 1024         # 378 / 1024
    for pool, free, recs in ((8192, 1024, 155.0), (8192, 1024, 40.0), (65536, 1024, 300.0)):
        a = E.ahi_heap(pool, free, recs)
        def need(h):
            return int(np.ceil(int((pool - h) * (1 - ratio)) * recs / nodes))

        h = a["heap_blocks"]
        assert a["young_in_statement"] == int((pool - h) * (1 - ratio))
        assert h >= need(h) and h - 1 < need(h - 1)       # the fewest blocks that hold the nodes
        assert a["database_pages"] == pool - a["heap_blocks"] - free
        assert a["old_database_pages"] == int(a["database_pages"] * ratio)
    # more records per page, a bigger heap; a bigger old sublist, a smaller one
    assert E.ahi_heap(8192, 1024, 40.0)["heap_blocks"] < E.ahi_heap(8192, 1024, 155.0)["heap_blocks"]
    assert E.ahi_heap(8192, 1024, 155.0, old_blocks_pct=60)["heap_blocks"] < \
        E.ahi_heap(8192, 1024, 155.0)["heap_blocks"]
    # the document's date_first t=1000 run: 8,192 frames, 1,024 free, 6,175 database pages
    doc = E.ahi_heap(8192, 1024, 155.0)
    assert abs(doc["heap_blocks"] - 993) < 0.1 * 993
    for bad in (dict(pool_pages=10, free_target=0, recs_per_page=10.0),
                dict(pool_pages=8192, free_target=9000, recs_per_page=10.0),
                dict(pool_pages=8192, free_target=0, recs_per_page=0.0)):
        with pytest.raises(ValueError):
            E.ahi_heap(**bad)


def _stats(now, at_refresh, elapsed, gets=(5_000_000, 1_000), per_thousand=True):
    """One run's counters and INNODB_BUFFER_POOL_STATS rates as buf_stats_get_pool_info
    prints them: counters ``now`` and ``at_refresh`` (made young, not made young, read,
    read ahead), ``elapsed`` whole seconds since the refresh (+ 0.001)."""
    te = elapsed + 0.001
    names = list(E.RATE_OF.values())
    rows = {c: n for c, n in zip(names, now)}
    rows.update({f: (n - a) / te for (f, c), n, a in zip(E.RATE_OF.items(), now, at_refresh)})
    g_now, g_ref = gets
    dg = g_now - g_ref
    rows["NUMBER_PAGES_GET"] = g_now
    rows["NOT_YOUNG_MAKE_PER_THOUSAND_GETS"] = (1000 * (now[1] - at_refresh[1]) // dg
                                                if per_thousand else 0)
    rows["YOUNG_MAKE_PER_THOUSAND_GETS"] = (1000 * (now[0] - at_refresh[0]) // dg
                                            if per_thousand else 0)
    return pd.DataFrame([dict(plan="p", old_blocks_time_ms=1000, metric=m, value=v)
                         for m, v in rows.items()])


def test_stats_refresh_recovers_the_counters_at_the_refresh():
    c = _stats((40, 2_000_000, 190_000, 7), (0, 0, 263, 7), 59)
    r = E.stats_refresh(c).iloc[0]
    assert r.elapsed_s == pytest.approx(59.001)
    assert (r.PAGES_MADE_YOUNG_at_refresh, r.PAGES_NOT_MADE_YOUNG_at_refresh,
            r.NUMBER_PAGES_READ_at_refresh, r.NUMBER_PAGES_READ_AHEAD_at_refresh) == (0, 0, 263, 7)
    # the per-thousand field bounds the gets at the refresh from above: the truth (1,000) is below
    assert 1_000 <= r.gets_at_refresh_max < 5_000_000
    # no counter 0 at the refresh: the seconds since it are not determined
    with pytest.raises(ValueError, match="no counter was 0"):
        E.stats_refresh(_stats((40, 2_000_000, 190_000, 7), (3, 10, 263, 7), 59))
    # a run with every rate 0 says nothing about before it
    assert E.stats_refresh(_stats((0, 0, 0, 0), (0, 0, 0, 0), 10, per_thousand=False)).empty
    with pytest.raises(ValueError, match="READ_AHEAD_RATE"):
        E.stats_refresh(c[c.metric != "READ_AHEAD_RATE"])


def test_stats_refresh_on_the_document():
    """000's three runs with non-zero rates: 263 pages read at the refresh before the
    statement, none made young or not made young then (the rates' quotients are whole
    seconds + 0.001 to the printed precision)."""
    r = E.stats_refresh(pd.read_csv(data_dir() / "ssb_q11_counters.csv")).set_index(
        ["plan", "old_blocks_time_ms"])
    assert sorted(r.index) == [("date_first", 0), ("date_first", 1000), ("scan", 0)]
    assert (r.NUMBER_PAGES_READ_at_refresh == 263).all()
    assert (r.PAGES_MADE_YOUNG_at_refresh == 0).all() and (r.PAGES_NOT_MADE_YOUNG_at_refresh == 0).all()
    assert r.loc[("date_first", 1000), "elapsed_s"] == pytest.approx(59.001)
    assert r.loc[("date_first", 1000), "gets_at_refresh_max"] < 10_000
