"""Server versions as data (bufsim.versions) and the presets built from the records."""
import dataclasses

import numpy as np
import pytest

import bufsim
from bufsim import FLAG_AHI, FLAG_MODIFY, Trace
from bufsim.config import PRESETS, PoolConfig, pages_from_bytes, preset
from bufsim.engine import replay
from bufsim.pages import Tablespaces
from bufsim.versions import (
    CONTENTION_PRESETS, DEFAULT_VCPUS, PRESET_VERSIONS, RECORDS, VERSIONS,
    by_preset, default_instances, from_server_string, is_mariadb, record,
)

GIB = 2**30 // 16384


# ---- the registry ------------------------------------------------------------------------
def test_every_record_has_its_preset_and_the_registry_is_one():
    assert list(VERSIONS) == ["5.5", "5.6", "5.7", "8.0", "8.4", "mariadb10.5", "mariadb10.11",
                              "mariadb11.4"]
    assert list(PRESETS) == list(PRESET_VERSIONS) == [r.preset for r in RECORDS.values()]
    assert bufsim.PRESETS is PRESETS
    for name, key in PRESET_VERSIONS.items():
        cfg = preset(name)
        assert cfg.version == key and cfg.server is RECORDS[key]
        assert getattr(bufsim, name)().version == key
        for field, value in RECORDS[key].preset_defaults().items():
            assert getattr(cfg, field) == value, (name, field)
    assert PoolConfig(version="8.4").server.key == "8.4"


def test_advice_takes_the_presets_whose_mutex_rules_are_modelled():
    assert CONTENTION_PRESETS == ("mysql55", "mysql56", "mysql57")
    assert all(by_preset(p).contention_modelled for p in CONTENTION_PRESETS)
    assert not record("8.0").contention_modelled and record("5.7").ahi_parts == 8


def test_unknown_names_are_refused_with_the_allowed_ones():
    with pytest.raises(ValueError, match="version='9.9' is unknown; allowed: 5.5, 5.6"):
        record("9.9")
    with pytest.raises(ValueError, match="preset='mysql90' is unknown; allowed: mysql55"):
        by_preset("mysql90")
    with pytest.raises(ValueError, match="preset='mysql90' is unknown"):
        preset("mysql90")
    with pytest.raises(ValueError, match="instances_rule='eight' is unknown"):
        dataclasses.replace(record("8.0"), instances_rule="eight")
    with pytest.raises(ValueError, match="free_scan='all' is unknown"):
        record("8.0").replace(free_scan="all")


def test_server_strings_map_to_records():
    assert from_server_string("10.11.19-MariaDB-0+deb12u1").key == "mariadb10.11"
    assert from_server_string("11.4.5-MariaDB").preset == "mariadb114"
    assert from_server_string("8.4.3").preset == "mysql84"
    assert from_server_string("8.0.36-0ubuntu0.22.04.1").key == "8.0"
    assert from_server_string("5.5.30").preset == "mysql55"
    assert from_server_string("9.1.0") is None and from_server_string("x") is None
    assert is_mariadb("10.5.1-MariaDB-log") and not is_mariadb("8.0.36")


# ---- the traits of each preset ------------------------------------------------------------
def test_mysql80_defaults():
    r = record("8.0")
    cfg = bufsim.mysql80()
    assert (cfg.old_blocks_time_ms, cfg.old_blocks_pct, cfg.lru_scan_depth) == (1000, 37, 1024)
    assert cfg.adaptive_hash_index and cfg.io_capacity == 200
    assert (cfg.max_dirty_pages_pct, cfg.max_dirty_pages_pct_lwm) == (90, 10)
    assert r.flush_neighbors == 0 and record("5.7").flush_neighbors == 1
    assert bufsim.mysql80(pool_pages=GIB - 1).instances == 1
    assert bufsim.mysql80(pool_pages=GIB).instances == 8
    assert cfg.page_cleaner and r.free_scan == "threshold" and r.read_ahead_zero_off


def test_mysql84_defaults_and_instance_rule():
    cfg = bufsim.mysql84()
    assert not cfg.adaptive_hash_index and cfg.io_capacity == 10000
    assert record("8.4").io_capacity_max == 20000 and record("8.4").page_cleaners == "instances"
    assert (cfg.max_dirty_pages_pct, cfg.max_dirty_pages_pct_lwm) == (90, 10)
    # 1 below 1 GiB; above, clamp(min(size / (2 x 128 MiB), vcpus / 4), 1, 64)
    assert bufsim.mysql84(pool_pages=GIB - 1).instances == 1
    assert bufsim.mysql84(pool_pages=GIB).instances == min(4, DEFAULT_VCPUS // 4) == 4
    assert bufsim.mysql84(pool_pages=16 * GIB, vcpus=64).instances == 16
    assert bufsim.mysql84(pool_pages=2 * GIB, vcpus=64).instances == 8
    assert bufsim.mysql84(pool_pages=16 * GIB, vcpus=2).instances == 1
    assert default_instances("8.4", 1024 * GIB, vcpus=4096) == 64
    assert bufsim.mysql84(pool_pages=16 * GIB, vcpus=64, instances=3).instances == 3
    with pytest.raises(ValueError, match="vcpus"):
        bufsim.mysql84(pool_pages=16 * GIB, vcpus=0)
    # 8.0's rule on the same pools: 8 from 1 GiB
    assert default_instances("8.0", 16 * GIB) == 8


def test_mariadb114_has_the_1011_buffer_pool():
    a, b = record("mariadb10.11"), record("mariadb11.4")
    rules = ("read_ahead_next_page_area", "read_ahead_fail_early", "free_unused_after_read_ahead",
             "refill_on_demand", "cleaner_batch_unbounded", "small_pool_lru_floor",
             "temp_pages_unlogged", "pool_size_rule", "free_scan", "single_pool",
             "instances_rule", "lru_scan_depth", "adaptive_hash_index", "min_pool_bytes")
    assert all(getattr(a, f) == getattr(b, f) for f in rules)
    assert all(getattr(b, f) for f in rules[:7])
    cfg = bufsim.mariadb114(pool_pages=100 * GIB)
    assert cfg.instances == 1 and cfg.lru_scan_depth == 1536 and not cfg.adaptive_hash_index
    assert cfg.max_dirty_pages_pct == 90 == bufsim.mariadb1011().max_dirty_pages_pct
    assert pages_from_bytes("20M", "mariadb11.4") == 1265
    with pytest.raises(ValueError, match="out of range for MariaDB 11.4; allowed: 1"):
        pages_from_bytes("1G", "mariadb11.4", instances=2)


def test_pool_size_of_the_mysql8_presets_is_the_57_chunk_rule():
    for size, n in (("128M", 1), ("1G", 8), ("4G", 8), ("3G", 4)):
        assert pages_from_bytes(size, "8.0", instances=n) == \
            pages_from_bytes(size, "8.4", instances=n) == pages_from_bytes(size, "5.7", instances=n)
    assert pages_from_bytes("1G", "8.0", instances=8) == 65_528
    with pytest.raises(ValueError, match="version='mariadb10.5' is unknown to pages_from_bytes"):
        pages_from_bytes("1G", "mariadb10.5")


# ---- what the engine does with them ------------------------------------------------------
TS = Tablespaces.single(3000)


def _trace():
    rng = np.random.default_rng(3)
    n = 20_000
    page = (rng.zipf(1.3, n) - 1) % 3000
    flags = np.where(rng.random(n) < 0.3, FLAG_MODIFY, 0).astype(np.uint8)
    flags[rng.random(n) < 0.3] |= FLAG_AHI
    return Trace.from_arrays(page, 1, 20_000, 0, flags, tablespaces=TS)


@pytest.fixture(scope="module")
def runs():
    t = _trace()
    out = {name: replay(t, preset(name, pool_pages=1000)).totals
           for name in ("mysql57", "mysql80", "mysql84", "mariadb1011", "mariadb114")}
    out["mysql80 as 57"] = replay(t, bufsim.mysql80(pool_pages=1000, max_dirty_pages_pct=75,
                                                    max_dirty_pages_pct_lwm=0)).totals
    out["mysql84 ahi"] = replay(t, bufsim.mysql84(pool_pages=1000, adaptive_hash_index=True,
                                                  io_capacity=200)).totals
    return out


def test_mysql80_flushes_from_its_low_water_mark(runs):
    """innodb_max_dirty_pages_pct_lwm 10 (8.0.3) starts flush-list flushing that 5.7's 0
    leaves off; with 5.7's values 8.0's replay is 5.7's, counter for counter."""
    assert runs["mysql80"]["flush_list_flushed"] > runs["mysql57"]["flush_list_flushed"]
    assert runs["mysql80 as 57"].to_dict() == runs["mysql57"].to_dict()


def test_mysql84_takes_no_adaptive_hash_index_path(runs):
    assert runs["mysql84"]["ahi_hits"] == 0 < runs["mysql80"]["ahi_hits"]
    assert runs["mysql84"]["NUMBER_PAGES_GET"] < runs["mysql80"]["NUMBER_PAGES_GET"]
    # with 8.0's adaptive hash index and io_capacity, 8.4's replay is 8.0's
    assert runs["mysql84 ahi"].to_dict() == runs["mysql80"].to_dict()


def test_mariadb114_replays_as_1011(runs):
    assert runs["mariadb114"].to_dict() == runs["mariadb1011"].to_dict()
    assert runs["mariadb1011"].to_dict() != runs["mysql57"].to_dict()


def test_mariadb1011_flushes_at_the_servers_90_percent():
    """innodb_max_dirty_pages_pct is 90 in MariaDB since 10.5 (the presets had 75): with
    900 of 1,000 pages dirty, 75 makes the page cleaner flush (600 pages), 90 does not."""
    rng = np.random.default_rng(3)
    page = rng.integers(0, 900, 50_000)
    t = Trace.from_arrays(page, 1, 20_000, 0, np.full(len(page), FLAG_MODIFY, np.uint8),
                          tablespaces=TS)
    flushed = {pct: replay(t, bufsim.mariadb1011(pool_pages=1000, lru_scan_depth=100, **kw))
               .totals["flush_list_flushed"] for pct, kw in ((90, {}),
                                                             (75, dict(max_dirty_pages_pct=75)))}
    assert flushed[90] == 0 < flushed[75]
