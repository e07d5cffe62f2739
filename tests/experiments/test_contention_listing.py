"""Notebook 03's SEL1-only listing: which of the document's four configurations its
os_waits can hold (5.5's innodb_flush_method needs a restart, which zeroes the counts),
and what the model family gives for those configurations."""
import numpy as np
import pandas as pd
import pytest

from bufsim import paths
from bufsim.experiments import contention as C
from bufsim.workloads import dbstress as D


def test_the_listing_holds_only_the_runs_after_the_last_flush_method_change():
    assert C.listing_configs(C.SEL1_CONFIGS) == [3, 4]       # O_DIRECT off, off, on, on
    assert C.listing_configs([(False, False), (False, True)]) == [1, 2]   # no restart
    assert C.listing_configs([(True, False), (False, True)]) == [2]
    assert C.listing_configs([(False, True)]) == [1]
    with pytest.raises(ValueError, match="configs is empty"):
        C.listing_configs([])


@pytest.fixture(scope="module")
def small_sens():
    """section_sensitivity's gets columns for two small databases (no DES needed here)."""
    rows = []
    for n_obj, n_sec in ((10_000, 100), (10_000, 90)):
        db = D.dbstress_database(n_obj, n_sections=n_sec)
        off = C.pool_gets(D.page_frequency(db, "sel1", variant=1, ahi=False)).sum()
        on = C.pool_gets(D.page_frequency(db, "sel1", variant=1, ahi=True)).sum()
        heights = sum(db.index(t).height for t in ("OBJECT", "SECTION", "ZONE"))
        rows.append(dict(objects=n_obj, sections=n_sec, pool_gets_ahi_off=off,
                         pool_gets_ahi_on=on, heights=heights, n90=2 if n_sec == 100 else 3))
    return pd.DataFrame(rows)


def test_sel1_takes_the_pool_mutex_once_per_level_with_the_ahi_off_and_never_with_it_on(small_sens):
    assert np.allclose(small_sens.pool_gets_ahi_off, small_sens.heights)
    assert list(small_sens.heights) == [5, 4]               # SECTION: 2 levels at 100 rows, 1 at 90
    assert (small_sens.pool_gets_ahi_on == 0).all()


def test_the_listing_is_outside_the_family_only_when_no_ahi_off_run_is_in_it(small_sens):
    lst = pd.read_csv(paths.data_dir() / "dbstress_mutex_listings.csv")
    waits = C.doc_waits(lst, "sel1_only_16bp")
    assert waits.size == 16
    r = C.sel1_listing_range(small_sens, waits)
    assert r["listed"] == [3, 4] and r["ahi"] == [True]
    assert r["pool_gets_max"] == 0.0 and r["doc_n90"] == 3 and r["doc_waits"] > 300_000
    assert r["excludes"] and r["n90_ahi_off"] == (2, 3)
    # without the restart (one flush method throughout) run #1, AHI off, is in the sum
    same = ((False, False), (False, True), (False, True), (False, True))
    r1 = C.sel1_listing_range(small_sens, waits, same)
    assert r1["listed"] == [1, 2, 3, 4] and r1["ahi"] == [False, True]
    assert r1["pool_gets_max"] == pytest.approx(5.0) and not r1["excludes"]
