"""bufsim.experiments.ssb_chunks keeps each SSB statement's chunks, packed, for the later
runs and calls (bounded by MEMO_BYTES): the same chunks, and the same rows, as generating
them each time."""
import numpy as np
import pytest

from bufsim.experiments import ssb as X
from bufsim.experiments import ssb_chunks as SC
from bufsim.trace import Chunk
from bufsim.workloads.plans import CpuCost
from bufsim.workloads.ssb import SSB


@pytest.fixture(scope="module")
def ssb():
    return SSB(0.02)


@pytest.fixture(autouse=True)
def empty_memo():
    SC.clear()
    yield
    SC.clear()


def _counting(monkeypatch, ssb):
    made = []
    real = type(ssb).query

    def query(self, name, plan="scan", **kw):
        made.append((name, plan))
        return real(self, name, plan, **kw)
    monkeypatch.setattr(type(ssb), "query", query)
    return made


def _same(a: Chunk, b: Chunk):
    for f in ("page", "count", "cpu_ns", "stream", "flags"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f


def _joined(chunks) -> Chunk:
    return Chunk(*(np.concatenate([getattr(c, f) for c in chunks])
                   for f in ("page", "count", "cpu_ns", "stream", "flags")))


@pytest.mark.parametrize("events", [5_000, 1 << 20])
def test_kept_chunks_join_the_plans_and_replay_alike(ssb, monkeypatch, events):
    """Chunks joined to COALESCE_EVENTS events or more: the plan's events end to end, and
    run_ssb's rows those of the plan's own chunks (a replay does not depend on where its
    chunks end)."""
    monkeypatch.setenv("BUFSIM_NO_CACHE", "1")
    c = X.Calibration(get_ns=500, clock_read_ns=1000, read_ns=10000)
    cfg = X.pool_config(X.SsbConfig("5.6.10", "128M", 1000), c, pool_pages=600)
    kw = dict(runs=("Cold", "Run1"), queries=("Q2.1", "Q3.1:index_first"))
    monkeypatch.setattr(SC, "MEMO_BYTES", 0)                 # nothing kept: the plan's chunks
    monkeypatch.setattr(SC, "COALESCE_EVENTS", 1)
    plain = X.run_ssb(ssb, {"a": cfg, "b": cfg.replace(old_blocks_time_ms=0)}, c, **kw)
    monkeypatch.setattr(SC, "MEMO_BYTES", 1 << 30)
    monkeypatch.setattr(SC, "COALESCE_EVENTS", events)
    joined = X.run_ssb(ssb, {"a": cfg, "b": cfg.replace(old_blocks_time_ms=0)}, c, **kw)
    assert joined.equals(plain) and plain.pages_read.sum() > 0
    n = {}
    for q, plan in (("Q2.1", "scan"), ("Q3.1", "index_first")):
        gen = list(ssb.query(q, plan, cpu=c.cpu).chunks())
        got = list(SC.statement(ssb, q, plan, c.cpu).chunks())
        _same(_joined(got), _joined(gen))
        assert all(len(x) >= events for x in got[:-1])
        n[q] = (len(got), len(gen))
    assert n["Q2.1"][0] < n["Q2.1"][1]                 # the scan's chunks joined


@pytest.mark.parametrize("q, plan", [("Q1.1", "scan"), ("Q4.2", "scan"), ("Q1.1", "date_first"),
                                     ("Q3.1", "index_first"), ("Q2.2", "index_first")])
def test_kept_chunks_are_the_generated_ones_at_any_costs(ssb, q, plan):
    """The events of a statement generated once (at the probe cost) and kept packed are, at
    every CPU cost, bit for bit those the plan generates at that cost: the first pass's and
    the later ones', in chunks of COALESCE_EVENTS events or more (the plan's joined)."""
    costs = [CpuCost(row_ns=7, get_ns=1234), CpuCost(row_ns=0, get_ns=5),
             CpuCost(row_ns=99_999, get_ns=0), CpuCost(row_ns=313, get_ns=2077)]
    for cpu in costs:
        op = ssb.query(q, plan, cpu=cpu)
        gen = list(op.chunks())
        st = SC.statement(ssb, q, plan, cpu)
        assert (st.rows, st.gets, st.name) == (op.rows, op.gets, op.name)
        got = list(st.chunks())
        assert SC.kept_bytes() > 0
        _same(_joined(got), _joined(gen))
        assert all(len(c) >= SC.COALESCE_EVENTS for c in got[:-1])
    assert len({c.cpu_ns.sum() for c in [next(SC.statement(ssb, q, plan, k).chunks())
                                         for k in costs]}) == len(costs)
    n = sum(len(c) for c in gen)
    assert SC.kept_bytes() <= 10 * n        # narrow: 33 bytes an event unpacked


def test_packed_keeps_wide_values_and_several_streams():
    wide = Chunk.from_arrays([3, 2**40, 5], count=[1, 300, 70000], cpu_ns=[0, 2**33, 9],
                             stream=[0, 1, 0], flags=[0, 4, 1])
    rows = np.array([0, 2**35, 3])
    p = SC.Packed(wide, rows)
    cpu = CpuCost(row_ns=3, get_ns=11)
    back = p.unpack(cpu)
    _same(Chunk(wide.page, wide.count, 11 + rows * 3 // wide.count, wide.stream, wide.flags), back)
    assert p.page.dtype == np.uint64 and p.count.dtype == np.uint32 and p.rows.dtype == np.uint64


def test_rows_are_read_back_only_when_exact():
    ok = Chunk.from_arrays([1, 2, 3], count=[1, 3, 7], cpu_ns=[
        (r * SC.ROW_PROBE_NS) // c for r, c in ((5, 1), (1, 3), (100, 7))])
    assert SC._rows_of(ok).tolist() == [5, 1, 100]
    bad = Chunk.from_arrays([1, 2], count=[1, 3], cpu_ns=[SC.ROW_PROBE_NS + 1, 0])
    with pytest.raises(RuntimeError, match="cannot be read back"):
        SC._rows_of(bad)
    with pytest.raises(RuntimeError, match="fewer than"):
        SC._rows_of(Chunk.from_arrays([1], count=[SC.ROW_PROBE_NS], cpu_ns=[0]))


@pytest.mark.parametrize("budget", [0, 1_000_000, 1 << 30])
def test_memo_gives_the_rows_of_generating_each_run(ssb, monkeypatch, budget):
    monkeypatch.setenv("BUFSIM_NO_CACHE", "1")
    c = X.Calibration(get_ns=500, clock_read_ns=1000, read_ns=10000)
    base = X.pool_config(X.SsbConfig("5.6.10", "128M", 1000), c, pool_pages=600)
    cfgs = {"a": base, "b": base.replace(old_blocks_time_ms=0)}
    kw = dict(runs=("Cold", "Run1", "Run2"), queries=("Q1.1", "Q2.1", "Q1.1:date_first"))
    monkeypatch.setattr(SC, "MEMO_BYTES", 0)
    fresh = X.run_ssb(ssb, cfgs, c, **kw)
    made = _counting(monkeypatch, ssb)
    monkeypatch.setattr(SC, "MEMO_BYTES", budget)
    memo = X.run_ssb(ssb, cfgs, c, **kw)
    assert memo.equals(fresh)
    assert fresh.groupby("query").gets.nunique().eq(1).all() and fresh.pages_read.sum() > 0
    if budget == 0:
        assert len(made) == 9                         # every query in each of 3 runs
    elif budget == 1 << 30:
        assert len(made) == 3                         # each query once
        X.run_ssb(ssb, {"c": base.replace(pool_pages=700)}, c, **kw)
        assert len(made) == 3                         # and for the next call
    else:
        # 1 MB keeps the two statements of ~0.2 MB packed (Q1.1 and Q1.1:date_first),
        # not Q2.1 (~1.2 MB), made in each of the 3 runs
        assert sorted(made) == sorted([("Q1.1", "scan"), ("Q1.1", "date_first")] + [("Q2.1", "scan")] * 3)


def test_memo_is_bounded_least_recently_used_first(ssb, monkeypatch):
    cpu = CpuCost(get_ns=100)
    size = {}
    for q in ("Q1.1", "Q1.2"):
        list(SC.statement(ssb, q, "scan", cpu).chunks())
        size[q] = SC.kept_bytes() - sum(size.values())
    assert min(size.values()) > 0
    SC.clear()
    monkeypatch.setattr(SC, "MEMO_BYTES", sum(size.values()) - 1)        # not both
    for q in ("Q1.1", "Q1.2"):
        list(SC.statement(ssb, q, "scan", cpu).chunks())
    assert SC.kept_bytes() == size["Q1.2"]                                # Q1.1 went
    made = _counting(monkeypatch, ssb)
    list(SC.statement(ssb, "Q1.2", "scan", cpu).chunks())
    assert made == []
    list(SC.statement(ssb, "Q1.1", "scan", cpu).chunks())
    assert made == [("Q1.1", "scan")] and SC.kept_bytes() == size["Q1.1"]
    list(SC.statement(ssb, "Q1.1", "scan", CpuCost(get_ns=101)).chunks())   # other costs: kept
    assert made == [("Q1.1", "scan")]


def test_statement_memo_gives_the_rows_of_generating_each_time(ssb, monkeypatch):
    """q11_run, q11_after_restart and q11_sequence take Q1.1's chunks from ssb_chunks: the
    same rows as generating them for each call, generated once for every cost."""
    monkeypatch.setenv("BUFSIM_NO_CACHE", "1")
    c = X.Calibration(get_ns=500, clock_read_ns=1000, read_ns=10000)
    kw = dict(pool_pages=600)
    monkeypatch.setattr(SC, "MEMO_BYTES", 0)          # never kept: generated each time
    monkeypatch.setattr(SC, "UNPACKED_BYTES", 0)

    def calls():
        return ([X.q11_after_restart(ssb, "date_first", 1000, c, earlier_pages=20, seed=s, **kw)
                 for s in (0, 1)],
                X.q11_sequence(ssb, [("date_first", 0), ("date_first", 1000)], c, **kw),
                [X.q11_run(ssb, "date_first", t, c, **kw) for t in (0, 1000)])
    fresh = calls()
    made = _counting(monkeypatch, ssb)
    monkeypatch.setattr(SC, "MEMO_BYTES", 1 << 30)
    monkeypatch.setattr(SC, "UNPACKED_BYTES", 1 << 30)
    memo = calls()
    assert memo[0] == fresh[0] and memo[1].equals(fresh[1]) and memo[2] == fresh[2]
    assert fresh[0][0]["not_made_young"] > 0 and fresh[0][0] != fresh[0][1]
    assert made == [("Q1.1", "date_first")]                    # once for the seven statements
    other = X.Calibration(row_ns=3, get_ns=600, clock_read_ns=1000, read_ns=10000)
    kept = X.q11_run(ssb, "date_first", 1000, other, **kw)
    assert made == [("Q1.1", "date_first")]                    # other costs: the same events
    monkeypatch.setattr(SC, "MEMO_BYTES", 0)
    monkeypatch.setattr(SC, "UNPACKED_BYTES", 0)
    SC.clear()
    assert X.q11_run(ssb, "date_first", 1000, other, **kw) == kept != memo[2][1]


def test_last_pass_is_kept_unpacked_for_the_same_costs(ssb, monkeypatch):
    cpu = CpuCost(row_ns=3, get_ns=100)
    first = list(SC.statement(ssb, "Q1.1", "date_first", cpu).chunks())
    again = list(SC.statement(ssb, "Q1.1", "date_first", cpu).chunks())
    assert all(a is b for a, b in zip(first, again)) and len(first) == len(again)
    other = list(SC.statement(ssb, "Q1.1", "date_first", CpuCost(row_ns=4, get_ns=100)).chunks())
    assert not any(a is b for a, b in zip(first, other))
    monkeypatch.setattr(SC, "UNPACKED_BYTES", 0)                  # none kept unpacked
    one = list(SC.statement(ssb, "Q1.1", "date_first", cpu).chunks())
    two = list(SC.statement(ssb, "Q1.1", "date_first", cpu).chunks())
    assert not any(a is b for a, b in zip(one, two))
    for a, b in zip(two, first):
        _same(a, b)


def test_touched_pages_of_a_kept_statement_are_its_plan_pages(ssb):
    """cold_extra_ns reads the pages a statement touches from its kept events once run_ssb
    replayed it: the pages its plan lists (Operator.pages), for every plan kind."""
    qs = ("Q1.1", "Q2.1", "Q4.3", "Q1.2:date_first", "Q2.1:index_first", "Q4.1:index_first")
    planned = {q: X.touched_pages(ssb, [q]) for q in qs}
    assert SC.kept_pages(ssb, "Q2.1", "index_first") is None
    for q in qs:
        name, _, plan = q.partition(":")
        list(SC.statement(ssb, name, plan or "scan").chunks())
        assert SC.kept_pages(ssb, name, plan or "scan") is not None
        assert np.array_equal(X.touched_pages(ssb, [q]), planned[q]) and planned[q].sum() > 0, q


def test_touched_pages_without_kept_events_come_from_the_result_cache(ssb, tmp_path,
                                                                     monkeypatch):
    """A statement the result cache served has no kept events: touched_pages keeps its
    plan's pages in the cache (a rerun of notebook 01 built every plan's page list again),
    the same mask as the plan's pages, served without building the plan."""
    from bufsim import cache
    monkeypatch.delenv(cache.OFF_ENV_VAR, raising=False)
    monkeypatch.setenv(cache.DIR_ENV_VAR, str(tmp_path / "cache"))
    qs = ("Q2.2", "Q3.1:index_first")
    assert all(SC.kept_pages(ssb, *(q.split(":") + ["scan"])[:2]) is None for q in qs)
    expect = np.zeros(ssb.tablespaces.n_pages, dtype=bool)
    for q in qs:
        name, _, plan = q.partition(":")
        expect[ssb.query(name, plan or "scan").pages()] = True
    first = X.touched_pages(ssb, qs)
    assert np.array_equal(first, expect) and expect.sum() > 0
    assert len(list((tmp_path / "cache").rglob("*.pkl"))) == 2

    def no_plan(*a, **k):
        raise AssertionError("the plan was built again")
    monkeypatch.setattr(type(ssb), "query", no_plan)
    assert np.array_equal(X.touched_pages(ssb, qs), expect)


@pytest.mark.parametrize("jobs", [1, 2])
def test_later_copies_carry_the_gets_per_space_the_pools_counted(ssb, monkeypatch, jobs):
    """The gets per tablespace a pool counts on a kept chunk's first copy go with every
    later copy (at any costs): the pools of the later runs count nothing again, and their
    gets per space are those of chunks that carry nothing."""
    from bufsim import Pool
    from bufsim._pool_state import PoolState

    monkeypatch.setenv("BUFSIM_NO_CACHE", "1")
    c = X.Calibration(get_ns=500, clock_read_ns=1000, read_ns=10000)
    cfg = X.pool_config(X.SsbConfig("5.6.10", "128M", 1000), c, pool_pages=600)
    counted = []                    # chunks whose gets per space a pool counts
    real = PoolState._chunk_space_gets

    def count(self, chunk, *a):
        memo = chunk.__dict__.get(SC.SPACE_GETS_MEMO)
        if memo is None or memo[0] is not self.tablespaces:
            counted.append(chunk)
        return real(self, chunk, *a)
    monkeypatch.setattr(PoolState, "_chunk_space_gets", count)
    st = {}
    X.run_ssb(ssb, {"a": cfg, "b": cfg.replace(old_blocks_time_ms=0)}, c, runs=("x", "y", "z"),
              queries=("Q2.1", "Q3.1:index_first"), states_out=st, jobs=jobs)
    n_chunks = sum(len(list(SC.statement(ssb, q, p).chunks())) for q, p in
                   (("Q2.1", "scan"), ("Q3.1", "index_first")))
    packed = [p for q, pl in (("Q2.1", "scan"), ("Q3.1", "index_first"))
              for p in SC._memo[(ssb.cache_params, q, pl)].packed]
    assert all(p.space_gets is not None for p in packed)
    # 3 runs x 2 pools x n chunks fed; each counted at most twice (the two pools of the
    # first run: side by side in threads) instead of 3 x 2 x n times
    assert n_chunks <= len(counted) <= 2 * n_chunks < 3 * 2 * n_chunks
    for label, pool in st.items():
        fresh = Pool(pool.config, ssb.tablespaces)
        for _ in range(3):
            for q, pl in (("Q2.1", "scan"), ("Q3.1", "index_first")):
                fresh.begin()
                for chunk in ssb.query(q, pl, cpu=c.cpu).chunks():
                    fresh.feed(chunk)
                fresh.end()
                fresh.idle_ns(10**9)
        got, want = pool.spaces(), fresh.spaces()
        assert got.equals(want) and want.gets.sum() > 0, label


def test_operator_counts_and_analytic_check_come_from_the_result_cache(ssb, tmp_path,
                                                                       monkeypatch):
    """A rerun of notebook 01 counted every statement's operators again (3.7 s) and
    replayed the analytic check's queries (4.9 s): both come from the result cache, the
    same values, without the work; another SSB (its seed) is another entry."""
    from bufsim import cache
    from bufsim.experiments import ssb_cpu_counts as CC
    monkeypatch.delenv(cache.OFF_ENV_VAR, raising=False)
    monkeypatch.setenv(cache.DIR_ENV_VAR, str(tmp_path / "cache"))
    calib = X.Calibration(get_ns=500, clock_read_ns=1000, read_ns=10000)
    counts = CC.operator_counts(ssb, "Q2.1", "scan")
    an = X.analytic_check(ssb, calib, ["Q1.1"])
    assert counts["eq_ref"] > 0 and len(an) == 3
    assert len(list((tmp_path / "cache").rglob("*.pkl"))) == 2

    def no_work(*a, **k):
        raise AssertionError("computed again")
    monkeypatch.setattr(type(ssb), "probes", no_work)
    monkeypatch.setattr(X, "replay", no_work)
    assert CC.operator_counts(ssb, "Q2.1", "scan") == counts
    assert X.analytic_check(ssb, calib, ["Q1.1"]).equals(an)
    with pytest.raises(AssertionError, match="computed again"):
        X.analytic_check(ssb, X.Calibration(get_ns=600, clock_read_ns=1000, read_ns=10000),
                         ["Q1.1"])
