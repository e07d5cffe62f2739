"""The notebook drivers of bufsim/experiments that the notebooks' own runs do not pin:
memoisation, scaled settings, the LRU miss curve against a direct count."""
import numpy as np
import pytest

from bufsim.analytic import stack_distances
from bufsim.experiments import contention as C
from bufsim.experiments import dbt3 as E


def test_lru_miss_curve_counts_first_references_and_long_reuses():
    rng = np.random.default_rng(5)
    pages = rng.integers(0, 40, 2_000)
    dist = stack_distances(pages)
    sizes = np.array([1, 5, 20, 39, 40, 60])
    got = E.lru_miss_curve(dist, sizes)
    for n, m in zip(sizes, got.misses):
        lru, misses = [], 0                      # an LRU of n pages, counted directly
        for p in pages.tolist():
            if p in lru:
                lru.remove(p)
            else:
                misses += 1
                if len(lru) == n:
                    lru.pop(0)
            lru.append(p)
        assert m == misses / pages.size
    assert got.misses.iloc[-1] == 40 / pages.size   # only the first references


def test_scaled_settings_are_the_documents_at_sf1_and_keep_the_minimum_pool():
    s1 = E.scaled_settings(1.0)
    assert (s1["join_buffer"], s1["read_rnd_buffer"]) == (131072, 262144)
    assert s1["disk_pool"] == (3200, 0) and s1["protocol"]["disk"] == (3200, 0, 10, 8)
    assert s1["protocol"]["cpu"] == (196_608, 0, 20, 8)
    s = E.scaled_settings(0.05)                   # 160 data pages: MySQL's 320-page minimum
    assert s["disk_pool"] == (320, 160) and s["join_buffer"] == int(131072 * 0.05)


def test_dbstress_frequencies_are_computed_once_and_labels():
    ex = C.DbStress(20_000, transactions=10, seed=1)
    f = ex.freq("sel2", 3, True)
    assert ex.freq("sel2", 3, True) is f and ex.freq("sel2", 3, False) is not f
    assert [C.label(k, v) for k, v in C.CASES[:3]] == ["sel1", "read", "sel2_v1"]
    assert set(C.FITTED) <= {C.label(k, v) for k, v in C.CASES} | {"sel1_sel2_ahi0"}


def test_dbstress_des_runs_in_threads_give_the_serial_results():
    """DbStress.des runs its user counts in threads; each run equals the same run alone."""
    from bufsim.contention import Costs
    ex = C.DbStress(20_000, transactions=400, seed=1)
    costs = Costs(get_ns=1_000, ahi_ns=1_000, kernel_ns=10_000)
    runs = ex.des("sel2", True, costs, [2, 8, 16], n_inst=4, spin_ns=ex.spin_ns)
    assert [n for n, _, _ in runs] == [2, 8, 16]
    for n, r, net in runs:
        alone = net.simulate(n, n_transactions=ex.transactions, seed=ex.seed + n,
                             spin_ns=ex.spin_ns)
        assert r.throughput == alone.throughput and r.frame().equals(alone.frame())
    assert len({r.throughput for _, r, _ in runs}) == 3


def test_doc_waits_selects_the_pool_mutex_rows():
    import pandas as pd
    listings = pd.DataFrame({"listing": ["a", "a", "a", "b"],
                             "mutex": ["buf/buf0buf.c:1208", "other", "buf/buf0buf.c:1208",
                                       "buf/buf0buf.c:1208"],
                             "os_waits": [3, 100, 5, 7]})
    assert C.doc_waits(listings, "a").tolist() == [3.0, 5.0]


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_dbt3_cpu_refuses_a_bad_field(bad):
    with pytest.raises(ValueError, match="Dbt3Cpu.row_ns"):
        E.Dbt3Cpu(row_ns=bad)


def test_dbstress_des_keeps_its_runs_and_section_sensitivity_reuses_them_unchanged():
    """The same DES arguments return the kept runs; section_sensitivity's row for ex's own
    database (frequencies and DES runs reused) equals the row built from scratch."""
    from bufsim.contention import Costs
    costs = Costs(get_ns=50_000, ahi_ns=1_000, kernel_ns=1_000)   # a busy pool mutex
    ex = C.DbStress(20_000, transactions=1_000, seed=1)
    first = ex.des("sel1", False, costs, [16, 64], spin_ns=ex.spin_ns)
    again = ex.des("sel1", False, costs, [16, 64], spin_ns=ex.spin_ns)
    assert [r for _, r, _ in again] == [r for _, r, _ in first]     # the same objects
    other = ex.des("sel1", False, costs, [16, 64], spin_ns=0)          # another argument: run
    assert all(a is not b for (_, a, _), (_, b, _) in zip(other, first))
    assert ex.is_database(20_000, 100) and not ex.is_database(20_000, 90)
    assert not C.DbStress(20_000, transactions=10, n_sections=90).is_database(20_000, 100)
    sizes = ((20_000, 100), (20_000, 90))
    reused = C.section_sensitivity(ex, costs, [16, 64], sizes=sizes)
    fresh = C.section_sensitivity(C.DbStress(30_000, transactions=1_000, seed=1), costs, [16, 64],
                                  sizes=sizes)            # ex of another database: no reuse
    assert reused.equals(fresh)
    assert reused.n90.gt(0).all() and reused.pool_gets_ahi_off.gt(0).all()   # waits to compare


def test_dbstress_des_counts_the_other_wait_layouts_on_the_same_runs():
    """des(..., also=layouts) keeps each layout's runs; a later call with one of them
    returns those, equal to a fresh DbStress's runs with that layout alone."""
    from bufsim.contention import Costs
    costs = Costs(get_ns=50_000, ahi_ns=1_000, kernel_ns=1_000)   # a busy pool mutex
    ex = C.DbStress(20_000, transactions=1_000, seed=1)
    layouts = C.wait_layouts(ex)
    base = ex.des("sel1", False, costs, [16, 64], spin_ns=ex.spin_ns, also=layouts.values())
    alone = C.DbStress(20_000, transactions=1_000, seed=1)
    assert [r.frame().equals(b.frame()) for (_, r, _), (_, b, _) in
            zip(base, alone.des("sel1", False, costs, [16, 64], spin_ns=ex.spin_ns))] == [True] * 2
    waits = {C.sim_waits(base).sum()}
    for kw in layouts.values():
        kept = ex.des("sel1", False, costs, [16, 64], **kw)
        assert ex.des("sel1", False, costs, [16, 64], **kw)[0][1] is kept[0][1]   # no new run
        fresh = alone.des("sel1", False, costs, [16, 64], **kw)
        for (n, r, _), (m, f, _) in zip(kept, fresh):
            assert n == m and r.frame().equals(f.frame()) and r.throughput == f.throughput
        waits.add(C.sim_waits(kept).sum())
    assert len(waits) == 3                      # three different counts of the same runs
