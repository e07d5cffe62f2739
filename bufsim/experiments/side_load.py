"""The side load of 001_b3c329944515dee7.txt: sysbench on a small table while mysqldump
reads a big one, set up, calibrated and measured (notebook 02).

Setup (one pool, one device, the ``mysql55`` preset: Percona Server 5.5.15, O_DIRECT,
so every miss goes to the disk).  Stream 0 first reads the small and then the big
table once (the order of the document's two ``sysbench prepare`` runs, as reads: the
engine has no page-create path), then runs ``n_txn`` sysbench 0.4 OLTP read-only
transactions (uniform ids, one thread).  Stream 1 is mysqldump of the big table,
starting at ``dump_at_s``.  Without sysbench ("dump alone") stream 0 only reads the
small table and stops; without the dump ("sysbench alone") stream 1 is left out.

``scale`` divides both tables' rows and the pool by the same factor (the quick
mode of the notebook uses 16), so the pool/table ratios stay those of the document;
the device and CPU constants are per page and per statement and do not scale, so a
scaled dump takes about ``1/scale`` of the time.

Calibration (:func:`bufsim.analytic.solve_monotone`, ``ftol=1e-3``): the sysbench CPU per statement (``query_ns``) is
fitted to the reported rate of sysbench alone, the device's sequential read time to
the reported time of the dump alone.  Everything concurrent is predicted.

The document's "req/sec" is read as sysbench *transactions* per second
(``SideLoad.request``): :func:`request_unit_check` shows that its dump times (95 s
alone, 180 s beside 2 req/s on one disk) exclude the other reading, statements per
second.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import cache as _cache
from .._units import NS_PER_S
from .._validation import check_int, check_int_fields
from ..config import SCHEDULERS, DeviceModel, mysql55
from ..engine import ReplayResult, replay
from ..workloads.plans import CpuCost, Operator, full_scan, sequence
from ..workloads import sysbench as sb

__all__ = ["SideLoad", "SideLoadRun", "requests_per_second", "leaf_touches_per_txn",
           "analytic_estimate", "scheduler_rates", "Reported", "big_table_mb", "results_rows",
           "claims", "REQUEST_UNITS", "request_unit_check"]

#: sysbench 0.4's two per-second counters of an OLTP run: "transactions" and
#: "read/write requests" (14 read statements per read-only transaction)
REQUEST_UNITS = {"transaction": 1, "statement": sb.REQUESTS_PER_TXN}



def requests_per_second(timeline: pd.DataFrame, stream: int, gets_per_request: float,
                        t0_ns: int, t1_ns: int) -> float:
    """sysbench requests per second of ``stream`` between two sample times, from its
    cumulative gets in ``timeline`` (the samples nearest below ``t0`` and ``t1``)."""
    if t1_ns <= t0_ns:
        raise ValueError(f"t1_ns={t1_ns} must be > t0_ns={t0_ns}")
    if not gets_per_request > 0:
        raise ValueError(f"gets_per_request={gets_per_request!r} must be > 0")
    col = f"gets:{stream}"
    a = timeline[timeline.time_ns <= t0_ns]
    b = timeline[timeline.time_ns <= t1_ns]
    if a.empty or b.empty:
        raise ValueError("the timeline has no sample before t0_ns")
    ta, tb = int(a.time_ns.iloc[-1]), int(b.time_ns.iloc[-1])
    if tb <= ta:
        raise ValueError("t0_ns and t1_ns fall between the same two samples")
    return float((b[col].iloc[-1] - a[col].iloc[-1]) / gets_per_request / ((tb - ta) / NS_PER_S))


@dataclass
class SideLoadRun:
    """One replay of the side load and what the notebook reads from it.

    Times are virtual and at the replayed scale (a 1/16 dump takes about 1/16 of
    the time); ``window_ns`` is the dump's start and end (or, without a dump, the
    last minute/scale of sysbench).
    """

    result: ReplayResult
    dump_seconds: float            # elapsed virtual time of mysqldump (nan without it)
    sysbench_req_s: float          # req/s while the dump ran (or in the window when alone)
    small_pages_before: int        # small PRIMARY resident just before the dump
    small_pages_min: int           # lowest small PRIMARY resident while the dump ran
    small_pages_end_of_dump: int   # small PRIMARY resident at the dump's last sample
    small_pages_mean: float = float("nan")   # mean small PRIMARY resident during the window
    gets_per_request: float = float("nan")
    window_ns: tuple = (0, 0)
    sysbench_misses: int = 0       # sysbench's synchronous misses in the window
    sysbench_io_wait_s: float = 0.0  # and the I/O wait they cost
    sysbench_req_s_steady: float = float("nan")   # req/s over the window's second half
    #: ``(side load, arguments of SideLoad.run)`` that made this run (None: unknown)
    made_by: tuple | None = None

    def frame(self) -> pd.DataFrame:
        """Per sample: seconds since the dump started, small PRIMARY resident pages,
        and sysbench req/s over the interval ending at the sample."""
        tl = self.result.timeline
        t = tl.time_ns.to_numpy()
        g = tl["gets:0"].to_numpy()
        dt = np.diff(t, prepend=t[0] - 1) / NS_PER_S
        rate = np.diff(g, prepend=g[0]) / self.gets_per_request / np.where(dt > 0, dt, np.nan)
        return pd.DataFrame({"t_s": (t - self.window_ns[0]) / NS_PER_S,
                             "small_pages": tl[f"pages:{sb.SMALL_NAME}.PRIMARY"].to_numpy(),
                             "req_s": rate})


@dataclass(frozen=True)
class SideLoad:
    """The tables, pool and timing of the experiment at ``scale`` (module docstring)."""

    scale: int = 1
    pool_bytes: int = 512 * 2**20
    seed: int = 1
    #: what the document's "req/sec" counts: sysbench 0.4's "transactions (per sec.)"
    #: or its "read/write requests (per sec.)" (14 statements per transaction); the
    #: document's own numbers decide, see :func:`request_unit_check`
    request: str = "transaction"

    def __post_init__(self):
        check_int_fields(self, ("scale",), 1, 256)
        if self.request not in REQUEST_UNITS:
            raise ValueError(f"request={self.request!r} is not allowed; allowed: {sorted(REQUEST_UNITS)}")

    @property
    def requests_per_txn(self) -> int:
        """Requests of one sysbench transaction in the unit of :attr:`request`."""
        return REQUEST_UNITS[self.request]

    @property
    def db(self):
        return _db(self.scale)

    @property
    def pool_pages(self) -> int:
        return self.pool_bytes // 16384 // self.scale

    @property
    def small_leaves(self) -> int:
        return self.db.index(sb.SMALL_NAME).geometry.leaf_pages

    def config(self, old_blocks_time_ms: int, device: DeviceModel):
        return mysql55(pool_pages=self.pool_pages, old_blocks_time_ms=int(old_blocks_time_ms),
                       device=device)

    def gets_per_request(self, n_txn: int = 2000, query_ns: int = 0) -> float:
        op = sb.oltp_read_only(self.db, sb.SMALL_NAME, n_txn, seed=self.seed, query_ns=query_ns)
        return op.gets / (n_txn * self.requests_per_txn)

    # ---- the runs ---------------------------------------------------------------------
    def run(self, old_blocks_time_ms: int, *, query_ns: int, device: DeviceModel,
            sysbench: bool = True, dump: bool = True, dump_at_s: float | None = None,
            switch_at_s: float | None = None, sysbench_s: float | None = None,
            dump_row_ns: int = 0, sample_every_ns: int | None = None) -> SideLoadRun:
        """Replay one configuration (module docstring for the history); served from the
        result cache (:mod:`bufsim.cache`) when the same run was replayed before (its
        traces are fully determined by this SideLoad and the arguments).

        The two tables are read once under ``innodb_old_blocks_time = 0`` (the 5.5
        default in force when they were prepared); at ``switch_at_s`` (default
        ``150 / scale``, after those reads) the setting becomes
        ``old_blocks_time_ms`` (``SET GLOBAL``); ``switch_at_s=0`` applies it from the
        start (the history of stop 9, see notebook 02).  mysqldump starts at ``dump_at_s``
        (default ``800 / scale``, once sysbench has the small table resident).
        ``sysbench_s``: virtual seconds of sysbench to generate at 330 requests/s
        (default: up to the dump plus twice its reported length).
        """
        args = dict(old_blocks_time_ms=old_blocks_time_ms, query_ns=query_ns, device=device,
                    sysbench=sysbench, dump=dump, dump_at_s=dump_at_s, switch_at_s=switch_at_s,
                    sysbench_s=sysbench_s, dump_row_ns=dump_row_ns,
                    sample_every_ns=sample_every_ns)
        run = _cache.cached(lambda: _cache.digest("side_load.run", self, args),
                            lambda: self._run(**args))
        run.made_by = (self, args)
        return run

    def _run(self, old_blocks_time_ms, *, query_ns, device, sysbench, dump, dump_at_s,
             switch_at_s, sysbench_s, dump_row_ns, sample_every_ns) -> SideLoadRun:
        db = self.db
        check_int("old_blocks_time_ms", old_blocks_time_ms, 0, 2**32 - 1)
        dump_at = float(800 / self.scale if dump_at_s is None else dump_at_s)
        switch_at = float(150 / self.scale if switch_at_s is None else switch_at_s)
        if not 0 <= switch_at <= dump_at:
            raise ValueError(f"switch_at_s={switch_at} is out of range; allowed: 0..dump_at_s={dump_at}")
        sample = sample_every_ns or max(NS_PER_S // self.scale, 50_000_000)
        prep = [full_scan(db, sb.SMALL_NAME), full_scan(db, sb.BIG_NAME)]
        prep_gets = sum(o.gets for o in prep)
        if sysbench:
            secs = sysbench_s if sysbench_s is not None else dump_at + 2 * 200 / self.scale
            n_txn = max(1, int(secs * 330 / self.requests_per_txn))
            oltp = _oltp(db, n_txn, self.seed, int(query_ns))
            s0 = sequence(prep + [oltp])
            gpr = oltp.gets / (n_txn * self.requests_per_txn)
        else:
            s0 = sequence(prep)
            gpr = float("nan")
        traces, starts = [s0.trace(0, "sysbench")], [0]
        if dump:
            traces.append(sb.mysqldump(db, sb.BIG_NAME, cpu=CpuCost(dump_row_ns, 0)).trace(1, "dump"))
            starts.append(int(dump_at * NS_PER_S))
        res = replay(traces, self.config(0, device), start_ns=starts, sample_every_ns=sample,
                     old_blocks_time_ms_at=[(int(switch_at * NS_PER_S), int(old_blocks_time_ms))])
        tl = res.timeline
        at_switch = tl[tl.time_ns <= switch_at * NS_PER_S]
        if old_blocks_time_ms and switch_at > 0 and (
                at_switch.empty or at_switch["gets:0"].iloc[-1] < prep_gets):
            raise ValueError(f"switch_at_s={switch_at} falls before the tables were read; "
                             "give a later switch_at_s")
        col = f"pages:{sb.SMALL_NAME}.PRIMARY"
        st = res.streams.set_index("name")
        if dump:
            a, b = int(st.loc["dump", "start_ns"]), int(st.loc["dump", "end_ns"])
            dump_s = (b - a) / NS_PER_S
        else:
            b = int(st.loc["sysbench", "end_ns"])
            a = max(b - int(60 * NS_PER_S / self.scale), b // 2)
            dump_s = float("nan")
        during = tl[(tl.time_ns > a) & (tl.time_ns <= b)]
        before = tl[tl.time_ns <= a]
        rate = requests_per_second(tl, 0, gpr, a, b) if sysbench else float("nan")
        steady = requests_per_second(tl, 0, gpr, a + (b - a) // 2, b) if sysbench else float("nan")
        pre = before.iloc[-1] if len(before) else None
        last = during.iloc[-1] if len(during) else None
        misses = int(last["misses:0"] - pre["misses:0"]) if pre is not None and last is not None else 0
        wait = float(last["io_wait_ns:0"] - pre["io_wait_ns:0"]) / NS_PER_S if misses else 0.0
        return SideLoadRun(res, dump_s, rate, int(before[col].iloc[-1]) if len(before) else 0,
                           int(during[col].min()) if len(during) else 0,
                           int(during[col].iloc[-1]) if len(during) else 0,
                           float(during[col].mean()) if len(during) else float("nan"),
                           gpr, (a, b), misses, wait, steady)

    # ---- calibration --------------------------------------------------------------------
    def sysbench_alone_rate(self, query_ns: float) -> float:
        """req/s of sysbench alone on the warm small table (no big table, no dump); served
        from the result cache when computed before.

        The warm-up scans the small table's leaves and then runs 400 sysbench
        transactions of another seed, which bring its root and level-1 pages in too:
        at 330 transactions/s the 14 level-1 reads (12.78 ms each) would otherwise be
        about 16% of a 400-transaction measurement."""
        return _cache.cached(lambda: _cache.digest("side_load.sysbench_alone_rate", self,
                                                   query_ns),
                             lambda: self._sysbench_alone_rate(query_ns))

    def _sysbench_alone_rate(self, query_ns: float) -> float:
        db = self.db
        n_txn = 400
        oltp = sb.oltp_read_only(db, sb.SMALL_NAME, n_txn, seed=self.seed, query_ns=int(query_ns))
        warm = sequence([full_scan(db, sb.SMALL_NAME),
                         sb.oltp_read_only(db, sb.SMALL_NAME, n_txn, seed=self.seed + 1)])
        res = replay([warm.trace(0, "warm"), oltp.trace(1, "sysbench")],
                     self.config(0, DeviceModel.hdd7200()), start_ns=[0, 3600 * NS_PER_S])
        el = int(res.streams.set_index("name").loc["sysbench", "elapsed_ns"])
        return n_txn * self.requests_per_txn / (el / NS_PER_S)

    def dump_alone_seconds(self, seq_read_ns: float, random_read_ns: int) -> float:
        """Seconds of mysqldump alone (the small table warm in the pool)."""
        dev = DeviceModel("fitted", int(random_read_ns), int(seq_read_ns), int(random_read_ns))
        return self.dump_alone(0, device=dev)

    def dump_alone(self, old_blocks_time_ms: int, *, device: DeviceModel,
                   dump_row_ns: int = 0) -> float:
        """Document seconds (x ``scale``) of mysqldump alone: :meth:`run` with
        ``sysbench=False``, the small table warm in the pool.

        Only the dump's time is read, and it comes from the streams, not the timeline:
        the replay is sampled once per ``switch_at_s`` (``150 / scale`` virtual seconds,
        a sample at the switch for its check) instead of once per virtual second.  A
        replay's events do not depend on where it is sampled (the kernel stops at a
        sample time and resumes exactly), so the time is the one a run sampled every
        second gives (``tests/experiments/test_side_load.py``); at scale 1 the ~900
        samples of the default were 0.3-0.5 s of CPU per run, and the notebook's
        calibration replays the dump alone a dozen times."""
        every = int(150 * NS_PER_S // self.scale)
        return self.run(old_blocks_time_ms, query_ns=0, device=device, sysbench=False,
                        dump_row_ns=dump_row_ns, sample_every_ns=every).dump_seconds * self.scale

    def data_mb(self, leaves: float) -> float:
        """INNODB_BUFFER_POOL_PAGES_INDEX ``data_size`` in MiB of ``leaves`` full leaves of
        the small table, at the document's size (x ``scale``): record bytes, not page bytes."""
        g = self.db.index(sb.SMALL_NAME).geometry
        return leaves * g.per_leaf * g.leaf_record_bytes / 2**20 * self.scale


@functools.lru_cache(maxsize=4)
def _db(scale: int):
    """Both tables of the document divided by ``scale`` (one shared Tablespaces)."""
    return sb.side_load_database(sb.SMALL_ROWS // scale, sb.BIG_ROWS // scale)


#: the sysbench transactions of the last :func:`_oltp` arguments, generated once:
#: ``(db, n_txn, seed, query_ns) -> (Operator, {stream: chunks})``, one entry
_OLTP_MEMO: dict = {}


def _oltp(db, n_txn: int, seed: int, query_ns: int):
    """:func:`~bufsim.workloads.sysbench.oltp_read_only` on the small table, its chunks
    generated once and kept for the next run with the same arguments: notebook 02 replays
    the same transactions in its runs at one scale (concurrent, sysbench alone, both
    old_blocks_time settings, the five I/O schedulers; then the sweep's ten settings at
    its scale), 3.0 s of CPU to generate each time at scale 1 (24 M events).  Equal
    arguments give equal chunks (``oltp_read_only`` draws them from ``seed``) and the
    engine never writes a chunk, so every run replays what it replayed before.  One
    entry, the arguments of the last call: at most the chunks of one scale (about 0.6 GB
    at scale 1, 0.15 GB at 1/4)."""
    key = (n_txn, seed, query_ns)
    hit = _OLTP_MEMO.get("last")
    if hit is None or hit[0] is not db or hit[1] != key:
        op = sb.oltp_read_only(db, sb.SMALL_NAME, n_txn, seed=seed, query_ns=query_ns)
        hit = (db, key, op, {})
        _OLTP_MEMO.clear()
        _OLTP_MEMO["last"] = hit
    op, made = hit[2], hit[3]

    def factory(stream):
        if stream not in made:
            made.clear()                     # one stream's chunks at a time
            made[stream] = list(op.factory(stream))
        return iter(made[stream])
    return Operator(op.name, factory, op.rows, op.gets, op.tablespaces)


def leaf_touches_per_txn(scale: int = 1, *, point_selects: int = 10, ranges: int = 4,
                         range_size: int = 100) -> float:
    """Expected leaf *visits* of one sysbench transaction on the small table: one per
    point select, and ``1 + (m - 1) / P`` per range of ``m`` entries (``P`` rows per
    leaf).  A visit is a burst of gets microseconds apart, which the old-blocks time
    rule sees as one reference."""
    P = _db(scale).index(sb.SMALL_NAME).geometry.per_leaf
    return point_selects + ranges * (1 + (range_size + 1) / P)


def analytic_estimate(side: SideLoad, old_blocks_time_ms: float, req_s: float,
                      dump_seconds: float):
    """:func:`bufsim.analytic.midpoint_lru` for the side load: the small table's
    leaves as a uniform hot set referenced at ``req_s / side.requests_per_txn`` transactions per second
    (:func:`leaf_touches_per_txn` visits each), the dump as one continuous scan of
    the big table's leaves (``per_leaf + 1`` gets each) lasting ``dump_seconds``
    (at the replayed scale), averaged over the dump (``window=(0, dump_seconds)``).

    Returns the model result and the expected share of the small table resident
    (the hot hit ratio: Poisson references see the time average).
    """
    from ..analytic.midpoint import ScanClass, midpoint_lru
    if not (req_s > 0 and dump_seconds > 0):
        raise ValueError(f"req_s={req_s!r} and dump_seconds={dump_seconds!r} must be > 0")
    db = side.db
    small, big = db.index(sb.SMALL_NAME).geometry, db.index(sb.BIG_NAME).geometry
    lam = np.full(small.leaf_pages, req_s / side.requests_per_txn
                  * leaf_touches_per_txn(side.scale) / small.leaf_pages)
    k = big.per_leaf + 1
    scan = ScanClass(pages=int(big.leaf_pages), gets_per_page=int(k),
                     get_time=float(dump_seconds) / (big.leaf_pages * k))
    m = midpoint_lru(lam, [scan], pool_pages=side.pool_pages,
                     old_blocks_time_ms=float(old_blocks_time_ms), window=(0.0, float(dump_seconds)))
    return m, float(m.class_hit_ratio[0])


def scheduler_rates(side: SideLoad, query_ns: int, device: DeviceModel, *,
                    old_blocks_time_ms: int = 0, dump_row_ns: int = 0,
                    schedulers=SCHEDULERS, made=()) -> pd.DataFrame:
    """The concurrent run (sysbench beside the dump) under each I/O scheduler.

    ``device`` carries the fitted service times; each run replaces only its
    ``scheduler`` (the schedulers' constants are Linux's defaults, see
    :class:`bufsim.DeviceModel`; none is fitted).  One row per scheduler: sysbench's
    req/s over the whole dump and over its second half (steady), the dump's time
    (document seconds), sysbench's misses while the dump ran and its mean I/O wait
    per miss (ms).  ``made``: :class:`SideLoadRun` objects made before (notebook 02's
    concurrent runs); one that :meth:`SideLoad.run` made with the same side load and the
    same arguments as a scheduler's run is that run, and is not replayed again.
    """
    rows = []
    for name in schedulers:
        kw = dict(query_ns=int(query_ns), device=device.replace(scheduler=name),
                  dump_row_ns=dump_row_ns)
        want = (side, dict(old_blocks_time_ms=old_blocks_time_ms, sysbench=True, dump=True,
                           dump_at_s=None, switch_at_s=None, sysbench_s=None,
                           sample_every_ns=None, **kw))
        r = next((m for m in made if m.made_by == want), None) or \
            side.run(old_blocks_time_ms, **kw)
        rows.append({"scheduler": name, "sysbench_req_s": r.sysbench_req_s,
                     "sysbench_req_s_steady": r.sysbench_req_s_steady,
                     "dump_s": r.dump_seconds * side.scale,
                     "sysbench_misses": r.sysbench_misses,
                     "io_wait_ms_per_miss": 1e3 * r.sysbench_io_wait_s / max(r.sysbench_misses, 1)})
    return pd.DataFrame(rows)


#: the document whose numbers notebook 02 reproduces
DOCUMENT = "001_b3c329944515dee7.txt"


@dataclass(frozen=True)
class Reported:
    """The side-load numbers of the document: ``data/side_load.csv`` (rates and times)
    and ``data/side_load_pool_contents.csv`` (pool contents per index)."""
    values: pd.DataFrame
    contents: pd.DataFrame

    @classmethod
    def load(cls) -> "Reported":
        from ..paths import data_dir
        values = pd.read_csv(data_dir() / "side_load.csv")
        contents = pd.read_csv(data_dir() / "side_load_pool_contents.csv")
        for name, df in (("side_load.csv", values), ("side_load_pool_contents.csv", contents)):
            if set(df.source) != {DOCUMENT}:
                raise ValueError(f"data/{name} names sources {sorted(set(df.source))}, "
                                 f"expected only {DOCUMENT}")
        return cls(values, contents)

    def value(self, old_blocks_time_ms: int, run: str, metric: str) -> float:
        """A reported number: ``run`` "alone" or "concurrent", ``metric``
        "sysbench_req_per_s" or "mysqldump_seconds"."""
        v = self.values
        r = v[(v.old_blocks_time_ms == old_blocks_time_ms) & (v.run == run) & (v.metric == metric)]
        if r.empty:
            raise KeyError(f"no reported {metric} for run={run!r}, "
                           f"old_blocks_time_ms={old_blocks_time_ms}")
        return float(r.value.iloc[0])

    def mb(self, old_blocks_time_ms: int, when: str, table: str) -> float:
        """Data MB of ``table``'s PRIMARY in the pool ``when`` ("before" or "during" the
        dump); 0 where the document lists none."""
        c = self.contents
        r = c[(c.old_blocks_time_ms == old_blocks_time_ms) & (c.when == when)
              & (c.index_name == f"test.{table}.PRIMARY")]
        return float(r.data_size_mb.iloc[0]) if len(r) else 0.0


def big_table_mb(side: SideLoad, run: SideLoadRun, when: str) -> float:
    """Data MB of the big table resident ``when`` = "before" the dump (the last sample
    before it) or "during" it (at the sample where the small table is lowest)."""
    tl = run.result.timeline
    a, b = run.window_ns
    if when == "before":
        row = tl[tl.time_ns <= a].iloc[-1]
    elif when == "during":
        d = tl[(tl.time_ns > a) & (tl.time_ns <= b)]
        row = d.loc[d[f"pages:{sb.SMALL_NAME}.PRIMARY"].idxmin()]
    else:
        raise ValueError(f"when={when!r} must be 'before' or 'during'")
    return side.data_mb(row[f"pages:{sb.BIG_NAME}.PRIMARY"])   # same rows per leaf


def results_rows(side: SideLoad, doc: Reported, runs: dict, alone: dict) -> list[dict]:
    """The reported-versus-simulated rows of notebook 02 (``build/results/02_*.csv``):
    ``runs`` maps old_blocks_time to the concurrent :class:`SideLoadRun`, ``alone`` to
    ``{"req_s": sysbench alone, "dump_s": dump alone (document seconds)}``."""
    scale = side.scale
    rows = []
    for obt, r in runs.items():
        cfg = f"mysql55 512M O_DIRECT, old_blocks_time {obt}" + ("" if scale == 1 else f", 1/{scale} scale")

        def row(metric, reported, simulated, fitted=False, cfg=cfg):
            return dict(experiment="side load", metric=metric, config=cfg, reported=reported,
                        simulated=simulated, fitted=fitted)
        rate = doc.value(obt, "concurrent", "sysbench_req_per_s")
        secs = doc.value(obt, "concurrent", "mysqldump_seconds")
        rows += [
            row("sysbench alone req/s", doc.value(obt, "alone", "sysbench_req_per_s"), alone[obt]["req_s"], obt == 0),
            row("mysqldump alone s", doc.value(obt, "alone", "mysqldump_seconds"), alone[obt]["dump_s"], obt == 0),
            row("sysbench concurrent req/s (mean over the dump)", rate, r.sysbench_req_s),
            row("sysbench concurrent req/s (steady: 2nd half of the dump)", rate, r.sysbench_req_s_steady),
            row("mysqldump concurrent s", secs, r.dump_seconds * scale),
            row("small PRIMARY MB before dump", doc.mb(obt, "before", sb.SMALL_NAME),
                side.data_mb(r.small_pages_before)),
            row("small PRIMARY MB during dump (lowest)", doc.mb(obt, "during", sb.SMALL_NAME),
                side.data_mb(r.small_pages_min)),
            row("big PRIMARY MB before dump", doc.mb(obt, "before", sb.BIG_NAME), big_table_mb(side, r, "before")),
            row("big PRIMARY MB during dump", doc.mb(obt, "during", sb.BIG_NAME), big_table_mb(side, r, "during")),
        ]
    return rows


def request_unit_check(side: SideLoad, doc: Reported, device: DeviceModel) -> pd.DataFrame:
    """What the document's "req/sec" counts, decided by the document's own numbers.

    With ``old_blocks_time`` 0 the dump takes ``T_c`` = 180 s beside sysbench against
    ``T_a`` = 95 s alone, and the document puts the difference on the one disk the
    two threads share.  A disk-bound dump is delayed only by the device time that
    sysbench's misses take from it, so, with sysbench at ``r`` requests/s and ``m``
    misses per request, each miss must cost the dump ``D = (T_c - T_a) / (r T_c m)``.
    ``m`` lies between the small table's leaf visits per request
    (:func:`leaf_touches_per_txn` over the requests of a transaction: every visit a
    miss, the upper bound) and those visits times the share of the small table the
    document found gone (12.1 of 216.3 MB resident).  On one disk a miss costs the dump
    at least a sequential read (``seq_read_ns``) and at most its own random read, the
    dump's seek back and an idle wait of cfq (``2 random_read_ns + slice_idle_ns``).

    One row per unit of :data:`REQUEST_UNITS`: the misses per request, the implied
    device time per miss (``d_low_ms`` .. ``d_high_ms``), the range one disk allows
    (``allowed_low_ms`` .. ``allowed_high_ms``), ``document_excludes`` (the two ranges
    do not meet), and the sysbench wall time per miss the document implies,
    ``(1/r - 1/r_alone) / m`` (``wait_low_ms`` .. ``wait_high_ms``: what a model must
    give to reproduce the concurrent rate, CPU per request taken from the alone rate).
    """
    r = doc.value(0, "concurrent", "sysbench_req_per_s")
    r_alone = doc.value(0, "alone", "sysbench_req_per_s")
    t_a = doc.value(0, "alone", "mysqldump_seconds")
    t_c = doc.value(0, "concurrent", "mysqldump_seconds")
    gone = 1 - doc.mb(0, "during", sb.SMALL_NAME) / doc.mb(0, "before", sb.SMALL_NAME)
    visits = leaf_touches_per_txn(side.scale)
    lo_ns, hi_ns = device.seq_read_ns, 2 * device.random_read_ns + device.slice_idle_ns
    rows = []
    for unit, per_txn in REQUEST_UNITS.items():
        m_hi, m_lo = visits / per_txn, visits * gone / per_txn
        d = [(t_c - t_a) / (r * t_c * m) * 1e3 for m in (m_hi, m_lo)]
        w = [(1 / r - 1 / r_alone) / m * 1e3 for m in (m_hi, m_lo)]
        rows.append(dict(unit=unit, misses_per_request_low=m_lo, misses_per_request_high=m_hi,
                         d_low_ms=d[0], d_high_ms=d[1], allowed_low_ms=lo_ns / 1e6,
                         allowed_high_ms=hi_ns / 1e6,
                         document_excludes=bool(d[0] > hi_ns / 1e6 or d[1] < lo_ns / 1e6),
                         wait_low_ms=w[0], wait_high_ms=w[1]))
    return pd.DataFrame(rows)


def claims(side: SideLoad, doc: Reported, runs: dict, alone: dict,
           unit_check: pd.DataFrame | None = None) -> pd.DataFrame:
    """The document's claims checked against the runs at old_blocks_time 0 and 1000
    (``runs`` and ``alone`` as for :func:`results_rows`): check, target, measured,
    holds, document_excludes and computed_range.

    sysbench's rates are the document's "after system reaches steady state": the
    second half of the dump (the mean over the whole dump, drain included, is in the
    results table, not a claim).  ``unit_check`` (:func:`request_unit_check`) adds one
    row per reading of "req/sec": a reading the document's own numbers exclude carries
    ``document_excludes`` and the computed ranges."""
    r0, r1 = runs[0], runs[1000]
    rate0 = doc.value(0, "concurrent", "sysbench_req_per_s")

    def dump_ratio(obt):      # simulated concurrent/alone dump time over the reported one
        return ((runs[obt].dump_seconds * side.scale / alone[obt]["dump_s"])
                / (doc.value(obt, "concurrent", "mysqldump_seconds") / doc.value(obt, "alone", "mysqldump_seconds")))

    small_0 = side.data_mb(r0.small_pages_min) / doc.mb(0, "during", sb.SMALL_NAME)
    unit = f"{side.request}s/s"
    rows = [
        (f"sysbench drops more than 150 times, 0: alone / concurrent (steady), {unit}", ">= 150",
         alone[0]["req_s"] / r0.sysbench_req_s_steady, lambda m: m >= 150),
        (f"sysbench concurrent (steady) / reported {rate0:g} req/s, 0, {unit}",
         "0.5 .. 2 (the document's 'about')", r0.sysbench_req_s_steady / rate0, lambda m: 0.5 <= m <= 2),
        ("sysbench improves over 150x with 1000: concurrent 1000 / concurrent 0 (steady)", ">= 150",
         r1.sysbench_req_s / r0.sysbench_req_s_steady, lambda m: m >= 150),
        ("sysbench concurrent / alone, 1000, mean over the whole dump", ">= 0.90",
         r1.sysbench_req_s / alone[1000]["req_s"], lambda m: m >= 0.90),
        ("dump concurrent/alone vs reported ratio, 0", "within 30%", dump_ratio(0), lambda m: abs(m - 1) <= 0.30),
        ("dump concurrent/alone vs reported ratio, 1000", "within 30%", dump_ratio(1000),
         lambda m: abs(m - 1) <= 0.30),
        ("small PRIMARY lowest MB / 12.1 MB, 0", "0.5 .. 2", small_0, lambda m: 0.5 <= m <= 2),
        ("small PRIMARY lowest / before, 1000", ">= 0.95", r1.small_pages_min / r1.small_pages_before,
         lambda m: m >= 0.95),
    ]
    out = [dict(check=c, target=t, measured=m, holds=bool(ok(m)), document_excludes=False,
                computed_range="") for c, t, m, ok in rows]
    if unit_check is not None:
        for u in unit_check.itertuples():
            out.append(dict(
                check=f"'req/sec' read as sysbench {u.unit}s: device time each sysbench miss takes "
                      f"from the dump (95 s alone, 180 s beside 2 req/s)",
                target=f"{u.allowed_low_ms:.2f} .. {u.allowed_high_ms:.1f} ms (one disk)",
                measured=u.d_low_ms, holds=not u.document_excludes,
                document_excludes=bool(u.document_excludes),
                computed_range=(f"needs {u.d_low_ms:.1f} .. {u.d_high_ms:.1f} ms per miss "
                                f"({u.misses_per_request_low:.2f} .. {u.misses_per_request_high:.2f} "
                                f"misses per request); one disk allows {u.allowed_low_ms:.2f} .. "
                                f"{u.allowed_high_ms:.1f} ms")))
    return pd.DataFrame(out)
