"""Golden counters: a fixed set of small replays gives exactly the counters recorded before.

Every case replays fixed, seeded traces (an OLTP stream of Zipf gets with
modifications, adaptive-hash-index hits, temporary-tablespace pages and statement ends,
beside a scan stream over a tablespace with unused pages) through one configuration,
and compares every counter the replay reports -- per instance (``stats``), totals,
per stream, the pool contents per index, the device's busy time and the cleaner's
passes, and for a few cases the sampled timeline -- with the values stored in
``tests/data/golden_counters.json``.  It also holds :func:`bufsim.pages_from_bytes`
and every preset's effective values (``describe()``) at a few pool sizes.

The values were recorded on the commit that added this test; they protect
refactorings that must not change a result (server versions as data, the engine's
split into policy modules).  A change that is *meant* to alter results regenerates
the file deliberately (as libCacheSim's test helper prints its expected arrays)::

    BUFSIM_REGEN_GOLDEN=1 python -m pytest tests/test_golden_counters.py

and the diff of the JSON file shows, in review, every number that moved.
"""
import json
import math
import os

import numpy as np
import pandas as pd
import pytest

from bufsim import FLAG_AHI, FLAG_MODIFY, FLAG_STMT_END, FLAG_TEMP, Trace
from bufsim.config import PoolConfig, pages_from_bytes, preset
from bufsim.engine import replay
from bufsim.pages import IndexSpec, SpaceSpec, Tablespaces
from bufsim.paths import repo_root

GOLDEN = repo_root() / "tests" / "data" / "golden_counters.json"
REGEN = os.environ.get("BUFSIM_REGEN_GOLDEN", "") not in ("", "0")

# ---- the traces ------------------------------------------------------------------------
SPACES = Tablespaces([
    SpaceSpec(1, 3000, "oltp", indexes=(IndexSpec("PRIMARY", np.arange(0, 2400)),
                                       IndexSpec("k", np.arange(2400, 3000)))),
    SpaceSpec(2, 4000, "big", unused_pages=np.r_[700:760, 2100:2200]),
    SpaceSpec(9, 120, "tmp"),
])


def _oltp(n: int = 6000, seed: int = 7) -> Trace:
    """Zipf(0.9) gets over space 1 (ranks shuffled), 15 % modifying, 20 % AHI hits,
    3 % temporary-table modifications, a statement end every 5 events."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, 3001) ** 0.9
    perm = rng.permutation(3000)
    pno = perm[rng.choice(3000, size=n, p=w / w.sum())]
    page = SPACES.dense(np.full(n, 1), pno)
    flags = np.zeros(n, dtype=np.uint8)
    u = rng.random(n)
    flags[u < 0.15] |= FLAG_MODIFY
    flags[(u >= 0.15) & (u < 0.35)] |= FLAG_AHI
    temp = rng.random(n) < 0.03
    page[temp] = SPACES.dense(np.full(temp.sum(), 9), rng.integers(0, 120, temp.sum()))
    flags[temp] = FLAG_MODIFY | FLAG_TEMP
    flags[4::5] |= FLAG_STMT_END
    counts = rng.integers(1, 4, n)
    cpu = rng.integers(1_000, 20_000, n)
    return Trace.from_arrays(page, counts, cpu, 0, flags, tablespaces=SPACES, chunk_size=1500,
                             name="oltp")


def _scan(passes: int = 2) -> Trace:
    """Full scans of space 2, 30 gets a page (one event), 5 us a get."""
    pno = np.tile(np.arange(4000), passes)
    page = SPACES.dense(np.full(pno.size, 2), pno)
    flags = np.zeros(pno.size, dtype=np.uint8)
    flags[-1] = FLAG_STMT_END
    return Trace.from_arrays(page, 30, 5_000, 1, flags, tablespaces=SPACES, chunk_size=2000,
                             name="scan")


VERSIONS = ("5.5", "5.6", "5.7", "mariadb10.5", "mariadb10.11")
OTHER_POLICIES = ("lru", "fifo", "clock", "two_q", "arc")


def _cases() -> dict:
    """case id -> (config keywords, streams: 'both' or 'oltp', sample_every_ns or None)."""
    cases = {}
    for v in VERSIONS:
        for pool in (600, 2400):
            for t in (0, 1000):
                for inst in (1, 4):
                    for ra in (56, 0):
                        cases[f"innodb {v} p{pool} t{t} i{inst} ra{ra}"] = (
                            dict(version=v, pool_pages=pool, old_blocks_time_ms=t,
                                 instances=inst, read_ahead_threshold=ra), "both", None)
        # one stream on one instance: the fast loop where it applies
        cases[f"innodb {v} p2000 oltp"] = (dict(version=v, pool_pages=2000), "oltp", None)
        cases[f"innodb {v} p600 statement pct5 depth100"] = (
            dict(version=v, pool_pages=600, cleaner_activity="statement", old_blocks_pct=5,
                 lru_scan_depth=100), "both", None)
        cases[f"innodb {v} p2000 noahi lwm10 io400"] = (
            dict(version=v, pool_pages=2000, adaptive_hash_index=False,
                 max_dirty_pages_pct_lwm=10, io_capacity=400), "both", None)
    cases["innodb 5.6 p600 sampled"] = (dict(pool_pages=600), "both", 200_000_000)
    cases["innodb mariadb10.11 p600 sampled"] = (dict(version="mariadb10.11", pool_pages=600),
                                                 "both", 200_000_000)
    cases["innodb 5.6 p600 cfq distance ssd"] = (
        dict(pool_pages=600, device="ssd"), "both", None)
    for pol in OTHER_POLICIES:
        for pool in (600, 2000):
            cases[f"{pol} p{pool}"] = (dict(policy=pol, pool_pages=pool), "both", None)
    return cases


CASES = _cases()
PRESET_NAMES = ("mysql55", "mysql56", "mysql57", "mariadb105", "mariadb1011")
POOL_SIZE_CASES = [("128M", None, 1), ("128M", "5.5", 1), ("4G", "5.6", 8), ("1G", "5.7", 1),
                   ("1G", "5.7", 8), ("6M", "mariadb10.11", 1), ("20M", "mariadb10.11", 1),
                   ("1G", "mariadb10.11", 1)]


# ---- recording ---------------------------------------------------------------------------
def _plain(x):
    """JSON-comparable: NumPy scalars as Python ones, NaN as the string 'nan'."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return "nan" if math.isnan(x) else float(x)
    return x


def _frame(df: pd.DataFrame) -> dict:
    return _plain({"columns": list(df.columns), "index": list(df.index),
                   "rows": df.to_numpy().tolist()})


def _record(case: str) -> dict:
    kw, streams, sample = CASES[case]
    kw = dict(kw)
    if kw.get("device") == "ssd":
        from bufsim.config import DeviceModel
        kw["device"] = DeviceModel.ssd().replace(scheduler="cfq", skip_pricing="distance")
    cfg = PoolConfig(**kw)
    trace = [_oltp(), _scan()] if streams == "both" else _oltp()
    r = replay(trace, cfg, sample_every_ns=sample)
    out = {"stats": _frame(r.stats), "totals": _plain(r.totals.to_dict()),
           "streams": _frame(r.streams), "contents": _frame(r.contents),
           "device_busy_ns": int(r.device_busy_ns), "cleaner_passes": int(r.cleaner_passes)}
    if sample is not None:
        out["timeline"] = _frame(r.timeline)
    return out


def _record_presets() -> dict:
    return {f"{name} {size}": _plain(preset(name, pool_pages=pages_from_bytes(size)).describe())
            for name in PRESET_NAMES for size in ("128M", "1G", "4G")}


def _record_pool_sizes() -> dict:
    return {f"{size} {v} i{n}": pages_from_bytes(size, v, instances=n)
            for size, v, n in POOL_SIZE_CASES}


def _regenerate() -> None:
    data = {"replays": {c: _record(c) for c in CASES}, "presets": _record_presets(),
            "pool_sizes": _record_pool_sizes()}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    tmp = GOLDEN.with_name(GOLDEN.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")
    tmp.replace(GOLDEN)


@pytest.fixture(scope="module")
def golden() -> dict:
    if REGEN:
        _regenerate()
    if not GOLDEN.exists():
        pytest.fail(f"{GOLDEN} is missing: record it with BUFSIM_REGEN_GOLDEN=1")
    return json.loads(GOLDEN.read_text())


def test_every_case_is_recorded(golden):
    assert sorted(golden["replays"]) == sorted(CASES)
    assert len(CASES) >= 100


@pytest.mark.parametrize("case", sorted(CASES))
def test_replay_counters_are_the_recorded_ones(golden, case):
    got = json.loads(json.dumps(_record(case)))
    want = golden["replays"][case]
    for part in want:
        assert _recorded_part(got[part], want[part]) == want[part], \
            f"{case}: {part} differs from the recorded values"
    assert set(got) == set(want)


def _recorded_part(got, want):
    """``got`` cut to what ``want`` recorded: a counter or column added to the results
    after the recording (e.g. read-ahead pages per stream) has no recorded value and
    is compared by the twin tests instead; every recorded one must still be there."""
    if isinstance(want, dict) and set(want) == {"columns", "index", "rows"}:
        missing = [c for c in want["columns"] if c not in got["columns"]]
        assert not missing, f"recorded columns missing: {missing}"
        at = [got["columns"].index(c) for c in want["columns"]]
        return {"columns": want["columns"], "index": got["index"],
                "rows": [[row[i] for i in at] for row in got["rows"]]}
    if isinstance(want, dict):
        missing = [k for k in want if k not in got]
        assert not missing, f"recorded counters missing: {missing}"
        return {k: got[k] for k in want}
    return got


def test_a_recorded_column_cannot_go_missing():
    want = {"columns": ["a", "b"], "index": [0], "rows": [[1, 2]]}
    assert _recorded_part({"columns": ["b", "c", "a"], "index": [0], "rows": [[2, 9, 1]]},
                          want) == want
    with pytest.raises(AssertionError, match="missing"):
        _recorded_part({"columns": ["a"], "index": [0], "rows": [[1]]}, want)
    with pytest.raises(AssertionError, match="missing"):
        _recorded_part({"x": 1}, {"x": 1, "y": 2})


def test_the_cases_differ():
    """The golden file is not a constant: the versions, settings and policies give
    different counters (a comparison that every case would pass proves nothing)."""
    cases = ("innodb 5.5 p600 t0 i1 ra56", "innodb 5.6 p600 t0 i1 ra56",
             "innodb mariadb10.11 p600 t0 i1 ra56", "innodb 5.6 p600 t1000 i1 ra56",
             "innodb 5.6 p2400 t0 i4 ra56", "innodb 5.6 p2400 t1000 i4 ra56",
             "innodb 5.6 p2400 t0 i4 ra0", "lru p600")
    seen = {json.dumps(_record(c)["totals"], sort_keys=True) for c in cases}
    assert len(seen) == len(cases)


def test_presets_and_pool_sizes_are_the_recorded_ones(golden):
    assert json.loads(json.dumps(_record_presets())) == golden["presets"]
    assert _record_pool_sizes() == golden["pool_sizes"]
