"""Where linear read-ahead is tried: the ``"get"`` rule (every first access) and MariaDB
10.11.7+'s ``"btr"`` rule (MDEV-32068: a leaf reached by a forward step, at its first
access; a leaf reached by a descent, before its get, when its level-1 parent was accessed
for the first time), read from the trace's access kind (FLAG_STEP, FLAG_DESCENT,
FLAG_NO_RA); and MariaDB 10.11's area rules in buf_read_ahead_linear (spec §5.4).

The hand-built traces below have their values worked out from the source
(``btr/btr0pcur.cc:550``, ``btr/btr0cur.cc:1346,1648,1691``, ``buf/buf0rea.cc:514`` of
10.11.18); each also runs through the pure-Python twin event by event.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from tests.test_engine_twin import SPACES as TWIN_SPACES, innodb_cases, run_both

from bufsim import FLAG_DESCENT, FLAG_NO_RA, FLAG_STEP, Trace, replay
from bufsim._pool_state import PoolState
from bufsim.config import CostModel, DeviceModel, PoolConfig, mariadb1011, mariadb114, mysql56
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import C_RA
from bufsim.trace import Chunk
from bufsim.versions import RECORDS, record

COST = CostModel(clock_read_ns=20, make_young_ns=100, miss_cpu_ns=1000, evict_ns=50)
# 2 ms a random read: every miss lands in a later millisecond, so first-access times of
# a scan strictly increase (the pattern check's order test sees no ties)
DEVICE = DeviceModel("test", 2_000_000, 2_000_000, 150_000)
STEP, DESCENT, NO_RA = FLAG_STEP, FLAG_DESCENT, FLAG_NO_RA


def _config(version, pool_pages=2048, **kw):
    # 2048 pages: read_ahead_area 64 (min(64, 2048 / 32)); nothing is evicted below
    return PoolConfig(policy="innodb", version=version, pool_pages=pool_pages, cost=COST,
                      device=DEVICE, **kw)


RULES = {"btr": lambda: _config("mariadb10.11"),
         "get10.11": lambda: _config("mariadb10.11", read_ahead_sites="get"),
         "5.6": lambda: _config("5.6")}


def _ra_per_event(cfg, ts, events):
    """NUMBER_PAGES_READ_AHEAD after each event (the kernel, one event a call), after
    checking the whole replay against the twin event by event."""
    run_both(cfg, ts, [events])
    state = PoolState(cfg, ts, 1)
    page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*events))
    state.feed(0, Chunk.from_arrays(page, count, cpu, 0, flags.astype(np.uint8)))
    state.close(0)
    out = []
    while state.run(max_events=1) != 0:
        out.append(int(state.cnt[:, C_RA].sum()))
    out.append(int(state.cnt[:, C_RA].sum()))
    return out[:len(events)]


def _fired(ra):
    """(event index, pages) of each event that read ahead."""
    prev = [0] + ra[:-1]
    return [(i, b - a) for i, (a, b) in enumerate(zip(prev, ra)) if b != a]


# ---- the version field ------------------------------------------------------------------------
def test_read_ahead_sites_per_version_and_override():
    assert {k: r.read_ahead_sites for k, r in RECORDS.items()} == {
        "5.5": "get", "5.6": "get", "5.7": "get", "8.0": "get", "8.4": "get",
        "mariadb10.5": "get", "mariadb10.11": "btr", "mariadb11.4": "btr"}
    assert mariadb1011().ra_sites == "btr" and mariadb114().ra_sites == "btr"
    assert mariadb1011(read_ahead_sites="get").ra_sites == "get"
    assert mariadb1011(read_ahead_sites="get").describe()["read_ahead_sites"] == "get"
    assert mysql56().ra_sites == "get" and mysql56(read_ahead_sites="get").ra_sites == "get"
    with pytest.raises(ValueError, match=r"read_ahead_sites='btr' is out of range for MySQL 5\.6; "
                                         r"allowed: None \(the version's 'get'\), 'get'"):
        mysql56(read_ahead_sites="btr")
    with pytest.raises(ValueError, match=r"read_ahead_sites='leaf' is out of range for MariaDB "
                                         r"10\.11; allowed: None \(the version's 'btr'\), 'get', 'btr'"):
        mariadb1011(read_ahead_sites="leaf")
    with pytest.raises(ValueError, match=r"read_ahead_sites='x' is unknown; allowed: get, btr"):
        record("5.6").replace(read_ahead_sites="x")


# ---- a scan of three areas ------------------------------------------------------------------
SCAN_TS = Tablespaces([SpaceSpec(1, 256, "t")])


@pytest.mark.parametrize("rule", sorted(RULES))
def test_a_forward_scan_reads_ahead_at_each_areas_last_page(rule):
    # leaves 0..191, sequential links, each reached by a forward step: the first access of
    # page 63 (area 0..63 all accessed in order, prev 62 and next 64 set) reads 64..127
    # (MariaDB: the next page numbers, ++id; MySQL: FIL_PAGE_NEXT's area); 127 and 191
    # likewise, 191 reading 192..255, the space's last whole area.  Under every rule.
    ev = [(p, 1, 10_000, STEP) for p in range(192)]
    assert _fired(_ra_per_event(RULES[rule](), SCAN_TS, ev)) == [(63, 64), (127, 64), (191, 64)]


@pytest.mark.parametrize("rule, fired", [("btr", []),
                                         ("get10.11", [(63, 64), (127, 64), (191, 64)]),
                                         ("5.6", [(63, 64), (127, 64), (191, 64)])])
def test_no_ra_gets_never_read_ahead_under_the_btree_rule(rule, fired):
    # the same scan by gets that are no read-ahead site (cursor restores, non-leaf pages):
    # the "btr" rule never tries; the "get" rule ignores the kind
    ev = [(p, 1, 10_000, NO_RA) for p in range(192)]
    assert _fired(_ra_per_event(RULES[rule](), SCAN_TS, ev)) == fired


@pytest.mark.parametrize("rule, fired", [("btr", [(65, 64)]), ("get10.11", [(63, 64)]),
                                         ("5.6", [(63, 64)])])
def test_a_descent_into_a_first_accessed_parent_reads_ahead_before_the_leaf(rule, fired):
    # leaves 0..63 first touched by gets that are no read-ahead site (in order), then a
    # descent: its level-1 parent, page 200 (cold: a first access), then leaf 63 (resident,
    # accessed).  "btr": search_leaf runs buf_read_ahead_linear(63) as the parent is in
    # hand: area 0..63 all accessed in order, both links set -> 64..127, at the leaf's
    # event (65).  "get": page 63's own first access read them (event 63); the parent
    # (page 200, the middle of its area) and the leaf's second get try nothing.
    ev = [(p, 1, 10_000, NO_RA) for p in range(64)]
    ev += [(200, 1, 10_000, NO_RA), (63, 1, 10_000, DESCENT)]
    assert _fired(_ra_per_event(RULES[rule](), SCAN_TS, ev)) == fired


@pytest.mark.parametrize("rule, fired", [("btr", []), ("get10.11", [(64, 63)]),
                                         ("5.6", [(64, 63)])])
def test_a_descent_to_a_leaf_not_in_the_pool_fails_at_once(rule, fired):
    # leaves 128..190 in order (no read-ahead site), page 191 left cold; a descent through a
    # cold parent (200) to leaf 191.  "btr": buf_read_ahead_linear(191) before the read,
    # and a page_id not in the page hash fails at once (``if (i == page_id) goto fail``),
    # although one failure would be tolerated; the leaf's own get tries nothing.  "get":
    # 191's first access, after its read, passes (0 failures) and reads 192..255 but the
    # parent 200, in the pool already: 63 pages.
    ev = [(p, 1, 10_000, NO_RA) for p in range(128, 191)]
    ev += [(200, 1, 10_000, NO_RA), (191, 1, 10_000, DESCENT)]
    assert _fired(_ra_per_event(RULES[rule](), SCAN_TS, ev)) == fired


def test_a_descent_through_an_accessed_parent_does_not_read_ahead():
    # as the first descent test, with the parent accessed once before the leaves: its get
    # in the descent is not a first access, so search_leaf does not try; nor does the
    # leaf's get (a descent's leaf never tries after its own get)
    ev = [(200, 1, 10_000, NO_RA)] + [(p, 1, 10_000, NO_RA) for p in range(64)]
    ev += [(200, 1, 10_000, NO_RA), (63, 1, 10_000, DESCENT)]
    assert _fired(_ra_per_event(RULES["btr"](), SCAN_TS, ev)) == []
    # a leaf of unknown kind is replayed with the every-first-access rule under "btr" too
    ev = [(p, 1, 10_000, 0) for p in range(64)]
    assert _fired(_ra_per_event(RULES["btr"](), SCAN_TS, ev)) == [(63, 64)]


# ---- MariaDB 10.11's area rules (buf_read_ahead_linear) ----------------------------------------
def _links_ts(changes):
    """One 256-page space with sequential leaf links but for ``changes``:
    page -> (prev, next) page numbers (-1: FIL_NULL)."""
    prev = np.arange(-1, 255)
    nxt = np.arange(1, 257)
    nxt[-1] = -1
    for p, (a, b) in changes.items():
        prev[p], nxt[p] = a, b
    return Tablespaces([SpaceSpec(1, 256, "t", leaf_links=(prev, nxt))])


@pytest.mark.parametrize("rule, fired", [("btr", []), ("get10.11", []), ("5.6", [])])
def test_an_areas_first_page_never_reads_ahead_in_mariadb(rule, fired):
    # a descending scan 127..64; page 64's links: prev 63 (the page before it), next 191
    # (the last page of area 128..191).  10.11: ``descending= page_id != low``, and the
    # first page of an area returns at once.  (bufsim before this test read 128..191
    # here, the dead branch of the source.)  5.6 reads the area of FIL_PAGE_PREV when
    # FIL_PAGE_NEXT is the page after: not so here.
    ts = _links_ts({64: (63, 191)})
    ev = [(p, 1, 10_000, STEP) for p in range(127, 63, -1)]
    assert _fired(_ra_per_event(RULES[rule](), ts, ev)) == fired


@pytest.mark.parametrize("rule, fired", [("btr", [(63, 64)]), ("get10.11", [(63, 64)]),
                                         ("5.6", [])])
def test_a_middle_page_reads_its_previous_leafs_area_in_mariadb(rule, fired):
    # leaves 64..69 and 71..126 in order, then 70.  Page 127's next is FIL_NULL (it never
    # starts one); page 70's links: prev 191 (the last page of area 128..191), next 71
    # (the page after it).  10.11, at 70's first access: a middle page goes on; the order
    # test fails once (71 was accessed before 70), the pattern holds (1 of 7 failures);
    # ``next - 1 == page_id`` -> id = prev = 191, an edge: reads 128..191.  MySQL starts
    # only at an area's edge pages.
    ts = _links_ts({70: (191, 71), 127: (126, -1)})
    ev = [(p, 1, 10_000, STEP) for p in list(range(64, 70)) + list(range(71, 128)) + [70]]
    assert _fired(_ra_per_event(RULES[rule](), ts, ev)) == fired


@pytest.mark.parametrize("version, fired", [("mariadb10.11", [(1, 2), (3, 4), (7, 4), (11, 4)]),
                                            ("5.6", [(0, 4), (3, 4), (7, 4), (11, 4)])])
def test_a_small_areas_second_page_reads_the_rest_of_its_area_in_mariadb(version, fired):
    # 4 instances of 150 pages: areas of 4 (min(64, 150 / 32 rounded up to a power of 2)),
    # count = min(8, 4) = 4.  A cold scan 64..75.  10.11: page 65 (a middle page, next 66,
    # prev 64 an edge) finds 64 and 65 accessed, 66 and 67 missing (2 failures, 3 pass):
    # reads its own area's 66 and 67.  Page 67 reads 68..71; page 69 finds its area in the
    # pool (reads nothing); 71 and 75 read the next areas.  5.6 starts at the edges only:
    # page 64, downward (next 65 is the page after; 3 failures of 4 allowed), reads the
    # area of its previous leaf 63, 60..63; then 67, 71, 75 (68 and 72 pass too, but their
    # target areas are in the pool).  (bufsim before this test did not try middle pages:
    # 3, 7, 11 for 10.11.)  Page 1 of every space is an ibuf bitmap page: never a start.
    cfg = PoolConfig(policy="innodb", version=version, pool_pages=600, instances=4, cost=COST,
                     device=DEVICE)
    ts = Tablespaces([SpaceSpec(1, 128, "t")])
    ev = [(p, 1, 10_000, 0) for p in range(64, 76)]
    assert _fired(_ra_per_event(cfg, ts, ev)) == fired


def test_seven_failures_are_tolerated_and_the_eighth_aborts_in_mariadb():
    # area 0..63 with k pages never read (1..k), the others in order, then page 63:
    # count = min(64 - 56, 64) = 8 counts down, so 7 failures pass and the 8th aborts
    for k, fired in ((7, [(63 - 7, 64)]), (8, [])):
        ev = [(p, 1, 10_000, STEP) for p in [0] + list(range(k + 1, 64))]
        assert _fired(_ra_per_event(RULES["btr"](), SCAN_TS, ev)) == fired, k


# ---- random traces with access kinds, kernel against twin -------------------------------------
KINDS = [0, STEP, DESCENT, NO_RA]


@st.composite
def kind_cases(draw):
    """innodb_cases with MariaDB 10.11 / 11.4 ("btr") or the "get" override, every
    event given a random access kind, and descents (a parent then a leaf) mixed in."""
    cfg, streams = draw(innodb_cases(versions=("mariadb10.11", "mariadb11.4", "5.6")))
    if cfg.version != "5.6" and draw(st.booleans()):
        cfg = cfg.replace(read_ahead_sites="get")
    out = []
    for ev in streams:
        kinds = draw(st.lists(st.sampled_from(KINDS), min_size=len(ev), max_size=len(ev)))
        new = []
        for (p, c, cpu, fl), kind in zip(ev, kinds):
            if kind == DESCENT and draw(st.booleans()):
                parent = draw(st.integers(0, TWIN_SPACES.n_pages - 1))
                new.append((parent, 1, cpu, NO_RA))
            new.append((p, c, cpu, fl | kind))
        out.append(new)
    return cfg, out


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=kind_cases())
def test_kernel_matches_reference_with_access_kinds(case):
    cfg, streams = case
    run_both(cfg, TWIN_SPACES, streams)


# ---- the kind is inert under the "get" rule -------------------------------------------------
def _traces(kinds: bool):
    rng = np.random.default_rng(3)
    n = 4000
    page = np.where(rng.random(n) < 0.5, rng.integers(0, TWIN_SPACES.n_pages, n),
                    np.arange(n) % TWIN_SPACES.n_pages)
    flags = rng.choice([0, 0, 1, 2, 8], n).astype(np.uint8)
    count = rng.integers(1, 3, n)
    scan = np.tile(np.arange(TWIN_SPACES.n_pages), 2)
    fl2 = np.zeros(scan.size, dtype=np.uint8)
    if kinds:   # the same trace, with kinds from a generator of their own
        kr = np.random.default_rng(4)
        flags |= kr.choice(KINDS, n).astype(np.uint8)
        fl2 |= kr.choice(KINDS, scan.size).astype(np.uint8)
    a = Trace.from_arrays(page, count, 2_000, 0, flags, tablespaces=TWIN_SPACES, chunk_size=1000)
    b = Trace.from_arrays(scan, 3, 5_000, 1, fl2, tablespaces=TWIN_SPACES, chunk_size=1000)
    return a, b


@pytest.mark.parametrize("version, sites, both", [
    ("5.6", None, True), ("mariadb10.5", None, True), ("mariadb10.11", "get", True),
    ("5.6", None, False)])
def test_access_kinds_change_nothing_under_the_get_rule(version, sites, both):
    # two streams (the general kernel), or one on 5.6 (the fast loop): every counter equal
    cfg = _config(version, pool_pages=700, read_ahead_sites=sites)
    with_k, without = _traces(True), _traces(False)
    pick = (lambda ts: list(ts)) if both else (lambda ts: ts[1])
    r1, r0 = replay(pick(with_k), cfg), replay(pick(without), cfg)
    assert r1.totals.to_dict() == r0.totals.to_dict()
    assert r1.streams.equals(r0.streams) and r1.stats.equals(r0.stats)
    assert r0.totals["NUMBER_PAGES_READ_AHEAD"] > 0
    if sites == "get":
        # under the version's own "btr" rule the kinds do change what is read ahead (the
        # property above is not vacuous), and unknown kinds replay as "get"
        b1 = replay(pick(with_k), cfg.replace(read_ahead_sites=None))
        b0 = replay(pick(without), cfg.replace(read_ahead_sites=None))
        assert b0.totals.to_dict() == r0.totals.to_dict()
        assert b1.totals["NUMBER_PAGES_READ_AHEAD"] != b0.totals["NUMBER_PAGES_READ_AHEAD"]
