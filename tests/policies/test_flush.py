"""Dirty pages, the flush list and flush-list flushing (bufsim.policies.flush).

Closed-form cases of each rule (who flushes how many pages, oldest first, split over
instances), the validation of the new settings, and the kernel against the
pure-Python twin event by event (hypothesis) with the flush lists compared.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim.config import CostModel, DeviceModel, PoolConfig
from bufsim._pool_state import PoolState
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import (
    COUNTER_NAMES, FLAG_MODIFY, L1_LEN, LF_LEN, N_C, N_I, P_DIRTY, T_CLOCK,
)
from bufsim.policies.flush import pct_for_dirty
from bufsim.reference import ReferencePool
from bufsim.trace import Chunk

TS = Tablespaces([SpaceSpec(1, 4000, "t")])
S = 1_000_000_000
DEV = DeviceModel("test", 100_000, 30_000, 150_000)
IDX = {name: j for j, name in enumerate(COUNTER_NAMES)}


def config(**kw):
    # read_ahead_threshold 0 switches linear read-ahead off in 5.6+ (in 5.5 the pages
    # below are no area edges, so none starts either)
    base = dict(pool_pages=1000, read_ahead_threshold=0, device=DEV,
                cost=CostModel(clock_read_ns=0, make_young_ns=0, miss_cpu_ns=0, evict_ns=0))
    return PoolConfig(**{**base, **kw})


def state_with(cfg, events):
    st_ = PoolState(cfg, TS, 1)
    page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*events))
    st_.feed(0, Chunk.from_arrays(page, count, cpu, 0, flags.astype(np.uint8)))
    st_.close(0)
    return st_


def counter(state, name, i=None):
    c = state.cnt[:, IDX[name]]
    return int(c.sum() if i is None else c[i])


def inner_pages(n, start=1):
    """n page numbers that are neither the first nor the last of a 64-page area."""
    out, p = [], start
    while len(out) < n:
        if p % 64 not in (0, 63):
            out.append(p)
        p += 1
    return out


def test_state_ranges_grew_at_their_ends():
    assert (LF_LEN, N_I) == (26, 27)
    assert (IDX["flush_list_inserts"], IDX["flush_list_flushed"], N_C) == (12, 13, 14)


def test_flush_list_is_ordered_by_first_modification():
    a, b, c = inner_pages(3)
    ev = [(a, 1, 10, FLAG_MODIFY), (b, 1, 10, FLAG_MODIFY), (c, 1, 10, FLAG_MODIFY),
          (a, 1, 10, FLAG_MODIFY), (b, 1, 10, 0)]
    s = state_with(config(version="5.6"), ev)
    s.run()
    assert s.flush_list(0) == [c, b, a]            # head newest; a kept its first LSN
    assert [s.page_field(p, P_DIRTY) for p in (a, b, c)] == [1, 2, 3]
    assert counter(s, "Innodb_buffer_pool_write_requests") == 4
    assert counter(s, "flush_list_inserts") == 3
    assert s.stats().MODIFIED_DATABASE_PAGES.tolist() == [3]


def test_56_page_cleaner_flushes_io_capacity_oldest_first_above_max_dirty():
    pages = inner_pages(50)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages]
    ev.append((pages[0], 1, 10, 0))
    cfg = config(version="5.6", max_dirty_pages_pct=1, io_capacity=100)
    s = state_with(cfg, ev[:-1] + [(pages[0], 1, S, 0), (pages[1], 1, 10, 0)])
    s.run(max_events=50)
    assert counter(s, "flush_list_flushed") == 0
    # 100 * 50 // (1 + 50 + 950) = 4 > 1: PCT_IO(100) = 100 pages, all 50 written
    s.run()
    assert counter(s, "flush_list_flushed") == 50 == counter(s, "NUMBER_PAGES_WRITTEN")
    assert s.flush_list(0) == [] and all(s.page_field(p, P_DIRTY) == 0 for p in pages)


def test_56_writes_only_io_capacity_pages_and_keeps_the_newest():
    pages = inner_pages(300)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages] + [(pages[0], 1, S, 0), (pages[1], 1, 10, 0)]
    s = state_with(config(version="5.6", pool_pages=2000, max_dirty_pages_pct=5,
                          io_capacity=120), ev)
    s.run()
    assert counter(s, "flush_list_flushed") == 120
    assert s.flush_list(0) == pages[120:][::-1]      # the 120 oldest went first


def test_56_below_max_dirty_nothing_is_flushed_and_lwm_starts_early():
    pages = inner_pages(50)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages] + [(pages[0], 1, S, 0), (pages[1], 1, 10, 0)]
    s = state_with(config(version="5.6"), ev)                     # 4% dirty < 75
    s.run()
    assert counter(s, "flush_list_flushed") == 0 and len(s.flush_list(0)) == 50
    # lwm 2 < 4%: PCT_IO(4 * 100 // 76) = PCT_IO(5) = 10 pages of io_capacity 200
    s = state_with(config(version="5.6", max_dirty_pages_pct_lwm=2), ev)
    s.run()
    assert counter(s, "flush_list_flushed") == 10


def test_56_no_new_modification_no_flush_list_batch():
    pages = inner_pages(50)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages]
    ev += [(pages[0], 1, S, 0), (pages[1], 1, S, 0), (pages[2], 1, 10, 0)]
    s = state_with(config(version="5.6", max_dirty_pages_pct=1, io_capacity=100), ev)
    s.run(max_events=51)
    assert counter(s, "flush_list_flushed") == 0
    s.run()   # two passes; the second sees no LSN move (nothing left either way)
    assert counter(s, "flush_list_flushed") == 50


@pytest.mark.parametrize("dirty, hi, lwm, pct", [
    (0, 75, 0, 0), (75, 75, 0, 0), (76, 75, 0, 100), (3, 0, 0, 100), (0, 0, 0, 0),
    (10, 75, 10, 0), (11, 75, 10, 14), (50, 90, 10, 54)])
def test_pct_for_dirty_is_af_get_pct_for_dirty(dirty, hi, lwm, pct):
    from bufsim._pool_state import _config_array
    ist = np.zeros((1, N_I), np.int64)
    ist[0, LF_LEN] = dirty
    ist[0, L1_LEN] = 99                    # 1 + LRU + free = 100: dirty_pct = dirty
    cfg = _config_array(config(max_dirty_pages_pct=hi, max_dirty_pages_pct_lwm=lwm))
    assert pct_for_dirty(ist, cfg) == pct


def test_55_master_thread_flushes_at_its_ten_second_loop_when_io_is_low():
    pages = inner_pages(50)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages]
    ev += [(pages[0], 1, S, 0)] * 10 + [(pages[1], 1, 10, 0)]
    s = state_with(config(version="5.5"), ev)       # 4% dirty: no one-second flush
    s.run(max_events=60)
    assert counter(s, "flush_list_flushed") == 0
    s.run()   # the tenth pass: 50 reads < PCT_IO(200), so PCT_IO(100) pages
    assert counter(s, "flush_list_flushed") == 50 and s.flush_list(0) == []


def test_55_master_thread_ten_second_loop_without_free_io_flushes_pct_io_10():
    pages = inner_pages(500)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages]   # 500 reads > PCT_IO(200) = 400
    ev += [(pages[0], 1, S, 0)] * 10 + [(pages[1], 1, 10, 0)]
    s = state_with(config(version="5.5"), ev)
    s.run()
    assert counter(s, "flush_list_flushed") == 20              # PCT_IO(10)
    assert s.flush_list(0) == pages[20:][::-1]


def test_55_one_second_loop_above_max_dirty_and_even_split_over_instances():
    # two instances; every dirty page hashes to one of them (fold(1, p >> 6) mod 2)
    inst = TS.instance_of(2)
    pages = [p for p in inner_pages(400) if inst[p] == 0][:80]
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages] + [(pages[0], 1, S, 0), (pages[1], 1, 10, 0)]
    s = state_with(config(version="5.5", pool_pages=2000, instances=2, max_dirty_pages_pct=1,
                          io_capacity=100), ev)
    s.run()
    # buf_flush_list(100): ceil(100 / 2) = 50 per instance
    assert counter(s, "flush_list_flushed", 0) == 50 and counter(s, "flush_list_flushed", 1) == 0
    assert s.flush_list(0) == pages[50:][::-1]


def test_flushing_switched_off_leaves_the_flush_list_to_the_lru_tail():
    pages = inner_pages(50)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages] + [(pages[0], 1, 20 * S, 0)] * 2
    s = state_with(config(version="5.5", max_dirty_pages_pct=0, flush_list_flushing=False), ev)
    s.run()
    assert counter(s, "flush_list_flushed") == 0 and len(s.flush_list(0)) == 50


def test_single_page_flush_takes_the_page_off_the_flush_list():
    # 5.5, 320 pages, no flush-list flushing: every page dirty, then new pages must be read
    pages = inner_pages(340)
    ev = [(p, 1, 10, FLAG_MODIFY) for p in pages[:320]] + [(p, 1, 10, 0) for p in pages[320:]]
    s = state_with(config(version="5.5", pool_pages=320, flush_list_flushing=False), ev)
    s.run()
    written = counter(s, "NUMBER_PAGES_WRITTEN")
    # the first read finds no clean page: a single-page flush; later reads may evict the
    # clean pages read before them
    assert 1 <= written == counter(s, "Innodb_buffer_pool_wait_free")
    assert len(s.flush_list(0)) == 320 - written == s.stats().MODIFIED_DATABASE_PAGES.iloc[0]
    assert s.flush_list(0) == pages[written:320][::-1]   # the LRU tail's pages went first


@pytest.mark.parametrize("field, value, allowed", [
    ("io_capacity", 99, "100.."), ("max_dirty_pages_pct", 100, "0..99"),
    ("max_dirty_pages_pct_lwm", 80, "0..75"), ("flush_list_flushing", 1, "True or False")])
def test_bad_flushing_settings_name_the_field(field, value, allowed):
    with pytest.raises(ValueError, match=field) as e:
        config(**{field: value})
    assert allowed in str(e.value)


# ---- the kernel against the twin, event by event ----------------------------------------
def run_both(cfg, streams):
    state = PoolState(cfg, TS, len(streams))
    for s, ev in enumerate(streams):
        page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*ev))
        state.feed(s, Chunk.from_arrays(page, count, cpu, s, flags.astype(np.uint8)))
        state.close(s)
    ref = ReferencePool(cfg, TS, streams)
    n = 0
    while ref.step():
        n += 1
        assert state.run(max_events=1) in (0, -2)
        np.testing.assert_array_equal(state.cnt, ref.counters(), err_msg=f"after event {n}")
        assert state.sst[:, T_CLOCK].tolist() == [x.clock for x in ref.streams]
        for i in range(cfg.instances):
            assert state.flush_list(i) == ref.flush_list(i), f"flush list {i}, event {n}"
            for p in state.flush_list(i):
                assert state.page_field(p, P_DIRTY) == ref.inst[i].pages[p].oldest
    return state, ref


@st.composite
def flush_cases(draw):
    instances = draw(st.sampled_from([1, 2, 3]))
    hi = draw(st.sampled_from([0, 1, 3, 10, 75]))
    cfg = config(version=draw(st.sampled_from(["5.5", "5.6", "5.7", "mariadb10.11"])),
                 pool_pages=draw(st.integers(330, 700)) * instances, instances=instances,
                 io_capacity=draw(st.sampled_from([100, 150, 400])), max_dirty_pages_pct=hi,
                 max_dirty_pages_pct_lwm=draw(st.integers(0, hi)),
                 lru_scan_depth=draw(st.sampled_from([100, 300])),
                 read_ahead_threshold=draw(st.sampled_from([0, 56])))
    streams = []
    for _ in range(draw(st.integers(1, 2))):
        n = draw(st.integers(20, 400))
        top = draw(st.sampled_from([200, 1500, 4000]))
        pages = draw(st.lists(st.integers(0, top - 1), min_size=n, max_size=n))
        cpu = draw(st.sampled_from([1_000, 50_000_000, 400_000_000]))
        streams.append([(p, 1, cpu, draw(st.sampled_from([0, FLAG_MODIFY, FLAG_MODIFY])))
                        for p in pages])
    return cfg, streams


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(case=flush_cases())
def test_flushing_kernel_matches_twin(case):
    cfg, streams = case
    run_both(cfg, streams)


def test_twin_comparison_sees_flush_list_batches():
    # a case of the property above in which every kind of write happens
    pages = inner_pages(600)
    ev = [(p, 1, 4_000_000, FLAG_MODIFY) for p in pages] + \
        [(p, 1, 4_000_000, 0) for p in inner_pages(200, 1000)]
    state, ref = run_both(config(version="5.6", pool_pages=400, max_dirty_pages_pct=10,
                                 io_capacity=100, lru_scan_depth=100), [ev])
    tot = ref.counters().sum(axis=0)
    assert tot[IDX["flush_list_flushed"]] > 0
    assert tot[IDX["NUMBER_PAGES_WRITTEN"]] > tot[IDX["flush_list_flushed"]]   # LRU writes too
