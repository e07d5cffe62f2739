"""Hold bufsim's replay against a live MariaDB server: a grid of settings, plans, phases.

For every configuration of the grid (pool size, old_blocks_pct/time, read-ahead,
lru_scan_depth) and every plan of :mod:`bufsim.live.workload`, the server is
restarted (a cold pool), the tables are opened, and the plan runs twice (``cold``,
then ``warm``); the counter deltas of each run are set beside the deltas of a replay
of the same plan's trace, built by bufsim's workload model over the geometry read
from the server, through the ``mariadb1011`` preset (the §13 mechanisms) with the
server's POOL_SIZE and settings.  Nothing is fitted.

:func:`~bufsim.live.tolerance.holds` applies the tolerances of issue 16: pages read
within 5 %, pages made young / not made young within 10 % (or within 50 pages where the
server's count is under 200), NUMBER_PAGES_GET within 2 %; :mod:`bufsim.live.tolerance`
also reads the server's spread over repeated runs, and :mod:`bufsim.live.mechanisms`
says which §13 mechanism explains a row that misses.
"""
from __future__ import annotations

import concurrent.futures as cf
import itertools
from contextlib import contextmanager
from functools import lru_cache
import queue
import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_int
from ..config import PRESETS, DeviceModel, preset as make_preset
from ..engine import replay
from ..pool import Pool
from ..pages import SpaceSpec, Tablespaces
from ..trace import FLAG_MODIFY, FLAG_TEMP, Chunk, Trace
from . import workload as W
from .client import delta
from .mechanisms import explain
from .server import TIMING_SETTINGS, MariaDBServer
from .tolerance import (COMPARED, GAUGES_COMPARED, holds, missing_runs, recheck_claims,
                        repeatability)

__all__ = ["Setting", "QUICK_GRID", "FULL_GRID", "RESIDUAL_SETTINGS", "LOAD_POOL",
           "loaded_server", "run_grid", "results_rows", "grid", "REPEAT_SETTINGS",
           "repeat_runs", "recheck_misses", "RECHECK_LIMIT",
           # re-exported from .tolerance and .mechanisms, as notebook 07 names them
           "COMPARED", "GAUGES_COMPARED", "holds", "repeatability", "missing_runs",
           "recheck_claims", "explain"]


@dataclass(frozen=True)
class Setting:
    """One server configuration of the grid.

    ``read_ahead`` False sets innodb_read_ahead_threshold=0 (off on MariaDB 10.11
    and in bufsim's non-5.5 presets); ``lru_scan_depth`` None keeps the default (1536).
    """

    pool: str = "10M"
    old_blocks_pct: int = 37
    old_blocks_time: int = 1000
    read_ahead: bool = True
    lru_scan_depth: int | None = None

    @property
    def label(self) -> str:
        lsd = "default" if self.lru_scan_depth is None else self.lru_scan_depth
        return (f"pool={self.pool} pct={self.old_blocks_pct} time={self.old_blocks_time} "
                f"ra={'on' if self.read_ahead else 'off'} lsd={lsd}")

    def server_settings(self) -> dict:
        s = {"innodb_buffer_pool_size": self.pool, "innodb_old_blocks_pct": self.old_blocks_pct,
             "innodb_old_blocks_time": self.old_blocks_time,
             "innodb_read_ahead_threshold": 56 if self.read_ahead else 0,
             "innodb_lru_scan_depth": 1536 if self.lru_scan_depth is None else self.lru_scan_depth}
        return s


#: issue 38's MariaDB 10.11 residuals: innodb_lru_scan_depth above the pool's page
#: count (1024 > 379 pages at 6 MiB, 2048 > 1,260 at 20 MiB: how many LRU pages the
#: cleaner leaves, and whether an old sublist exists afterwards), and old_blocks_pct 5
#: with read-ahead on a scan.  Run with the phase-end gauges (``run_grid(gauges=True)``)
#: and repeated (:func:`repeat_runs`) in notebook 07; the first two are in the full
#: grid too, the last two are grid settings already.
RESIDUAL_SETTINGS = (
    Setting("6M", 5, 1000, True, 1024),
    Setting("20M", 37, 0, False, 2048),
    Setting("10M", 5, 1000, True, None),
    Setting("20M", 5, 0, True, 100),
)

#: a short grid for CI and the notebook's quick mode: every pool of about 6/10/20 MiB,
#: every old_blocks_pct and old_blocks_time, read-ahead on and off, both scan depths,
#: and a scan depth above the pool's page count with old_blocks_pct 5 and read-ahead
QUICK_GRID = (
    Setting("6M", 37, 1000, True, None),
    Setting("10M", 5, 0, False, 100),
    Setting("20M", 95, 1000, True, 100),
    Setting("20M", 37, 0, False, None),
    RESIDUAL_SETTINGS[0],
)


def grid(pools=("6M", "10M", "20M", "1G"), pcts=(5, 37, 95), times=(0, 1000),
         read_ahead=(True, False), depths=(100, None)) -> tuple:
    """Every combination of the given values (the full grid: 4*3*2*2*2 = 96 settings)."""
    return tuple(Setting(*c) for c in itertools.product(pools, pcts, times, read_ahead, depths))


#: the notebook's full grid: :func:`grid`'s 96 settings and the residual settings
#: that are not among them (98)
FULL_GRID = grid() + tuple(r for r in RESIDUAL_SETTINGS if r not in grid())


def _prep_trace(geo, names) -> Trace:
    """Opening the tables after a restart reads each clustered index root (seen on 10.11)."""
    roots = [geo.dense(t, [geo.table(t).clustered.root])[0] for t in names]
    return Trace(Chunk.from_arrays(np.array(roots, dtype=np.int64)), geo.tablespaces, "open tables")


#: pages of the synthetic system tablespace (space 0) that stands for what the server
#: holds after a restart beyond the tables' roots (dictionary, undo, system pages)
SYSTEM_PAGES = 4096


def with_system_space(ts: Tablespaces) -> Tablespaces:
    """The tables' tablespaces with a system tablespace (space id 0, no leaf links, so
    no read-ahead) appended: the tables' dense page ids do not move."""
    none = np.full(SYSTEM_PAGES, -1)
    return Tablespaces(list(ts.spaces) + [SpaceSpec(0, SYSTEM_PAGES, "system (startup)",
                                                     leaf_links=(none, none))])


def startup_trace(ts: Tablespaces, n: int, created: int = 0) -> Trace:
    """One access each of ``n`` system pages: the pool the server starts the workload with
    (after a restart it already holds pages its startup read; their count is read from
    the server, DATABASE_PAGES, before the first run).

    The last ``created`` of them are modified pages of the temporary tablespace
    (FLAG_MODIFY | FLAG_TEMP): the pages the server creates at startup
    (NUMBER_PAGES_CREATED after the restart: 131 on MariaDB 10.11.19, its temporary
    tablespace) are dirty, and sit in its LRU after the pages read at startup and before
    the tables' roots (INNODB_BUFFER_PAGE_LRU); the server writes all of them once its LRU
    batch reaches them (NUMBER_PAGES_WRITTEN 0 -> 131 during a run) and, being
    temporary, frees them when the writes complete."""
    if not 0 <= created <= n:
        raise ValueError(f"created={created} is out of range; allowed: 0..n ({n})")
    base = int(ts.space_base[-1])
    flags = np.zeros(n, dtype=np.uint8)
    flags[n - created:] = FLAG_MODIFY | FLAG_TEMP
    return Trace(Chunk.from_arrays(base + np.arange(n, dtype=np.int64), 1, 0, 0, flags), ts,
                 "server startup")


_with_system_space, _startup_trace = with_system_space, startup_trace   # the names 07 uses


def _rebase(trace: Trace, ts: Tablespaces) -> Trace:
    return Trace(list(trace), ts, trace.name)


def _totals(traces, cfg) -> pd.Series:
    return replay(Trace.concat(traces), cfg).totals


def _running_totals(traces, cfg) -> list[pd.Series]:
    """The counters summed over instances after each of ``traces`` replayed one after
    another in one pool: ``_totals(traces[:i + 1], cfg)`` for each i (checked equal on
    96 replays of the full-scale live grid, gauges included), in one pass instead of
    one replay per prefix."""
    pool = Pool(cfg, traces[0].tablespaces)
    out = []
    for tr in traces:
        pool.run(tr)
        stats = pool.stats()
        out.append(pd.Series({k: int(v) for k, v in
                              stats.drop(columns=["POOL_ID", "HIT_RATE"]).sum().items()}))
    return out


#: the pool the server loads the tables with when :func:`run_grid` starts it (the runs
#: restart with their own pools): a 6 MiB pool would write and read the tables page by
#: page during the load
LOAD_POOL = "128M"


@dataclass
class _Run:
    """What one server run of :func:`run_grid` measured (a cold and a warm phase)."""

    k: int
    plan: str
    info: object
    resident0: int
    created0: int
    real: list
    ms: list


def _ready(srv: MariaDBServer, st: Setting):
    """Restart ``srv`` with ``st`` (a cold pool), connect to it and read its settings
    (:meth:`bufsim.live.Connection.settings`: variables and INNODB_BUFFER_POOL_STATS, no
    page of any table): the connection a run of :func:`_measure` starts from.  A run's
    server did nothing else between this and the run."""
    srv.restart(**st.server_settings())
    conn = srv.connect(multi_statements=True)
    try:
        return conn, conn.settings()
    except BaseException:
        conn.close()
        raise


def _measure(srv: MariaDBServer, k: int, st: Setting, plan, timing: bool,
             ready=None) -> _Run:
    """One run: restart ``srv`` with ``st`` (a cold pool), open the tables, run ``plan``
    cold then warm, and take the counter deltas of each phase.  ``ready``: the
    ``(connection, settings)`` :func:`_ready` returned for ``srv`` and ``st`` (by
    :func:`_worker`'s standby, beside the previous run), so ``srv`` is not restarted
    here; the connection is closed here.

    The counters are read before the cold phase, between the phases (the cold phase's
    end and the warm phase's start: one reading, no statement runs between them) and
    after the warm phase."""
    conn, info = ready if ready is not None else _ready(srv, st)
    try:
        for t in ("dates", "lineorder", "sbtest"):
            conn.query(f"SELECT * FROM `{W.SCHEMA}`.`{t}` LIMIT 0", doing="opening tables")
        real, ms = [], []
        before = conn.counters()
        resident0 = int(before["DATABASE_PAGES"])
        created0 = int(before["NUMBER_PAGES_CREATED"])
        for _phase in ("cold", "warm"):
            ns0 = conn.statement_ns() if timing else 0
            plan.run(conn)
            ms.append((conn.statement_ns() - ns0) / 1e6 if timing else float("nan"))
            after = conn.counters()
            real.append(delta(before, after))
            before = after
    finally:
        conn.close()
    return _Run(k, plan.name, info, resident0, created0, real, ms)


def _worker(servers: list, jobs: "queue.Queue", done: "queue.Queue",
            stop: threading.Event, timing: bool) -> None:
    """Take (k, setting, plan) jobs until none is left (or ``stop``); put each
    :class:`_Run`, or the exception that ended the worker, on ``done``.

    With one server, each run restarts it (stop, start), connects and then runs.  With
    two (a standby), they take the runs in turn and the restart of the next run's server,
    with its connection and the reading of its settings (:func:`_ready`), goes on in the
    background while this run's server runs its plan: a restart is mostly waiting on
    files (0.05-0.1 s of the server's CPU in 0.6-1 s), and a restarted server left idle
    changes no counter of INNODB_BUFFER_POOL_STATS until it is used, so each run still
    starts from the pool a restart leaves; only one plan runs at a time.  A server is
    left running with the setting of the last run it took (or was restarted for)."""
    ahead: "cf.Future | None" = None
    try:
        with cf.ThreadPoolExecutor(max_workers=1) as starter:
            try:
                nxt = jobs.get_nowait()
            except queue.Empty:
                nxt = None
            i = 0
            while nxt is not None and not stop.is_set():
                k, st, plan = nxt
                srv = servers[i % len(servers)]
                if ahead is not None:
                    ready, ahead = ahead.result(), None
                else:
                    ready = _ready(srv, st)
                try:
                    nxt = jobs.get_nowait()
                except queue.Empty:
                    nxt = None
                if nxt is not None and len(servers) > 1:
                    other = servers[(i + 1) % len(servers)]
                    ahead = starter.submit(_ready, other, nxt[1])
                done.put(_measure(srv, k, st, plan, timing, ready))
                i += 1
            if ahead is not None:
                ahead.result()[0].close()
                ahead = None
    except BaseException as exc:          # handed to the caller's thread, which raises it
        stop.set()
        if ahead is not None:
            try:
                ahead.result()[0].close()
            except BaseException:
                pass
        done.put(exc)


def _rows(scale: W.Scale, seed: int) -> dict:
    """:func:`bufsim.live.workload.generate`, drawn once per scale and seed in a process
    (the loaded server, the grid and the repeat checks use the same rows; 2-4 s each at
    the full scale).  Callers must not modify the frames."""
    if not isinstance(scale, W.Scale) or not isinstance(seed, int):
        return W.generate(scale, seed)             # its own checks name a bad value
    return _rows_cached(scale, seed)


@lru_cache(maxsize=2)
def _rows_cached(scale: W.Scale, seed: int) -> dict:
    return W.generate(scale, seed)


@contextmanager
def loaded_server(scale: W.Scale = W.QUICK, seed: int = 0, *, timing: bool = False):
    """A private server holding the tables of ``scale`` and ``seed``, for several
    :func:`run_grid` / :func:`repeat_runs` calls with ``server=`` and ``load=False`` (one
    load for all of them); stopped and removed on exit.  It loads with a
    :data:`LOAD_POOL` pool; each run restarts it with its own setting.  ``timing``:
    performance_schema on (:data:`bufsim.live.TIMING_SETTINGS`), as ``run_grid(timing=True)``
    needs."""
    srv = MariaDBServer(dict(innodb_buffer_pool_size=LOAD_POOL,
                             **(TIMING_SETTINGS if timing else {})))
    with cf.ThreadPoolExecutor(max_workers=1) as ex:   # the rows are drawn while the
        rows = ex.submit(_rows, scale, seed)            # server's data directory is made
        try:
            srv.start()
            data = rows.result()
        except BaseException:
            srv.close()
            raise
    try:
        with srv.connect() as conn:
            W.load(conn, data)
        yield srv
    finally:
        srv.close()


def run_grid(settings=QUICK_GRID, *, scale: W.Scale = W.QUICK, seed: int = 0,
             plans=("scan", "star", "point", "krange"), server: MariaDBServer | None = None,
             preset: str = "mariadb1011", startup: bool = True, timing: bool = False,
             progress=None, load: bool = True, workers: int = 1,
             gauges: bool = False, standby: bool = True, runs=None,
             memo: dict | None = None) -> pd.DataFrame:
    """Run the grid on a private server (started here unless given) and replay each run.

    Every run restarts the server with its setting (a cold pool), opens the tables and
    runs one plan twice (``cold``, then ``warm``); a plan's statements go to the server
    in batches of 100, one round trip each (:meth:`bufsim.live.Connection.query_many`).

    ``preset`` names the bufsim preset of the replay (``mariadb1011`` by default, with
    the §13 mechanisms; ``mariadb105`` to see what they change); it gets the server's
    POOL_SIZE, old_blocks_pct/time, read_ahead_threshold, lru_scan_depth and
    adaptive-hash-index setting, and the ``ssd`` device model.

    ``startup`` (default True): the replay's pool starts as the server's does after its
    restart, holding as many pages as the server reports (DATABASE_PAGES before the
    first run: its startup's pages, stood for by a system tablespace read once, the
    last NUMBER_PAGES_CREATED of them modified, as the server's pages created at startup
    are; then the tables' roots); False starts from an empty pool with the roots only.

    ``timing`` (default False): also measure each run with the server's own statement
    timer (performance_schema, :data:`bufsim.live.TIMING_SETTINGS`, turned on when the
    server is started here; a given ``server`` must have it on) into ``server_ms``: the
    time the server spent in the plan's statements, client round trips excluded.  It is
    reported, not fed to the replay.

    ``load`` (default True): generate the tables from ``scale`` and ``seed`` and load
    them; False: a given ``server`` holds them already (loaded by an earlier call with
    the same scale and seed), so only the rows are generated again, for the plans.

    ``gauges`` (default False): also compare :data:`~bufsim.live.tolerance.GAUGES_COMPARED`
    at the end of each phase (the LRU's pages, and its old sublist's), beside the replay's
    at the same point.

    ``workers`` (default 1, at most 8): servers running the grid side by side, each on
    a copy of the loaded data directory (:meth:`MariaDBServer.clone`), taking the runs
    in turn; each run still restarts its own server, and the replays run in the calling
    thread meanwhile.  A given ``server`` is left running, with the setting of the last
    run it took.  A restart is mostly waiting (for the server's files and threads,
    0.05-0.07 s of its CPU in 0.4-0.6 s), which a second server fills.

    ``standby`` (default True): each worker has a second server (another copy of the
    data directory), and the two take its runs in turn: while one runs its plan, the
    other is restarted with the next run's setting, connected to and its settings read
    (:func:`_ready`), so the restart's wait leaves the runs' path while only one plan
    runs at a time (8 full-scale settings, 32 runs, at a load of 13-16: 41.8-41.9 s with
    the standby, 73.5 s without; a second standby gained nothing on the quick grid).  Each run still starts on a server
    restarted for it that has run nothing since (a restarted server left idle changes no
    counter of INNODB_BUFFER_POOL_STATS: checked on MariaDB 10.11.19 over 3 s at 6 and
    20 MiB); the tables are opened when the run starts, as without a standby.  False:
    one server per worker, restarted before each run (the quick grid took 20.5-25.0 s
    this way against 14.4-16.4 s with the standby, on the loaded machine).

    ``runs``: the (setting, plan name) pairs of ``settings`` x ``plans`` to run, in one
    call (:func:`recheck_misses` reruns a round's runs this way: one start, copy and
    standby for them all); None (default) runs every pair.

    ``memo``: a dict kept across calls over the same tables (``scale``, ``seed``, the
    geometry read from the server; checked, a ValueError where it differs): each plan's
    trace and each distinct replay (configuration, plan, startup pages) is made once for
    every call given it (notebook 07's grid, recheck and repeat checks); None (default):
    a memo of this call only.  A replay is a pure function of those inputs, so a memo
    changes no row.
    Measured (full scale, 1 GiB, pct 95, time 1000, star and scan alternating, 4 batches
    each way): every run counted the same as without a standby (star warm not made young
    151,081-151,082, scan 52,791-52,792) except the first scan of some batches (3 of 6:
    50,074-51,301, within issue 16's 10 %); without a standby none of 8 runs in 2 batches moved;
    the cause is not found (a start and stop of the copy before its first run did not
    remove it).  Those batches ran at a load of 6-18 (other sessions on 2 cores); at a
    load of 3-6, 8 batches with a standby counted 52,791-52,792 in every run.  The
    restart beside a run is CPU and I/O beside the query: at 20 MiB, time 1000, read-ahead
    off, the default depth (scan, star, krange; load 1-2), 2 of 96 rows counted pages not
    made young (44 and 5) with a standby and 1 of 96 (1) without; in full notebook runs
    at load 6-18 such rows counted 82-946 (0 in the idle run without a standby).

    Returns
    -------
    pandas.DataFrame
        One row per configuration, plan, phase and counter: ``config``, ``plan``,
        ``phase``, ``metric``, ``reported`` (the server's delta), ``simulated`` (the
        replay's), ``holds``, the server's POOL_SIZE as ``pool_pages``, and ``server_ms``
        (NaN unless ``timing``), in the order of ``settings``, then ``plans``.
    """
    workers, settings, plans, runs = _checked_grid(settings, plans, preset, workers, load,
                                                   server, runs, memo)
    own = server is None
    extra = TIMING_SETTINGS if timing else {}
    srv = server or MariaDBServer(dict(settings[0].server_settings(),
                                       innodb_buffer_pool_size=LOAD_POOL, **extra))
    servers = [srv]
    stop = threading.Event()
    threads = []
    try:
        geo, all_plans, memo = _load_and_read(srv, scale, seed, load, memo)
        srv.stop()
        servers += [srv.clone() for _ in range(workers * (2 if standby else 1) - 1)]
        per = 2 if standby else 1
        teams = [servers[i * per:(i + 1) * per] for i in range(workers)]
        jobs, left = _queue_runs(settings, plans, runs, all_plans)
        n_jobs = jobs.qsize()
        done: queue.Queue = queue.Queue()
        threads = [threading.Thread(target=_worker, args=(team, jobs, done, stop, timing),
                                    name=f"bufsim-live-{i}", daemon=True)
                   for i, team in enumerate(teams)]
        for t in threads:
            t.start()
        rows = _replay_runs(done, n_jobs, left, settings, plans, all_plans, geo, preset,
                            startup, memo, gauges, progress)
    finally:
        _shut_down(stop, threads, servers[1:] + ([srv] if own else []))
    return pd.DataFrame([r for key in sorted(rows) for r in rows[key]])


def _shut_down(stop: threading.Event, threads: list, servers: list) -> None:
    """Stop :func:`run_grid`'s workers (``stop``, then wait for each thread) and close
    ``servers``, in their order (a server given to run_grid is not among them)."""
    stop.set()
    for t in threads:
        t.join()
    for s in servers:
        s.close()


def _checked_grid(settings, plans, preset, workers, load, server, runs, memo) -> tuple:
    """:func:`run_grid`'s arguments checked before any server starts: ``workers``, the
    settings and plans as tuples, and ``runs`` as a set of (setting label, plan name)."""
    if preset not in PRESETS:
        raise ValueError(f"preset={preset!r} is unknown; allowed: {', '.join(PRESETS)}")
    workers = check_int("workers", workers, 1, 8)
    settings = tuple(settings)
    if not settings:
        raise ValueError("settings is empty; allowed: one or more Setting")
    plans = tuple(plans)
    unknown = [p for p in plans if p not in PLANS]
    if unknown or not plans:
        raise ValueError(f"plans={plans!r} names unknown plans {unknown}; allowed: "
                         f"one or more of {', '.join(PLANS)}")
    if not load and server is None:
        raise ValueError("load=False needs a server= that holds the tables already")
    if runs is not None:
        runs = {(st.label if isinstance(st, Setting) else st, str(p)) for st, p in runs}
        pairs = {(st.label, p) for st in settings for p in plans}
        if not runs or not runs <= pairs:
            raise ValueError(f"runs names (setting, plan) pairs {sorted(runs - pairs)[:3]} "
                             f"outside settings x plans; allowed: one or more of those pairs")
    if memo is not None and not isinstance(memo, dict):
        raise ValueError(f"memo must be a dict or None, got {type(memo).__name__}")
    return workers, settings, plans, runs


def _load_and_read(srv: MariaDBServer, scale: W.Scale, seed: int, load: bool,
                   memo: dict | None) -> tuple:
    """Start ``srv`` unless it runs, load the tables of ``scale`` and ``seed`` (with
    ``load``) and read their geometry: ``(geometry, plans by name, memo)``, the memo
    :func:`run_grid` was given (checked to be of the same tables) or a new one."""
    if srv.proc is None or srv.proc.poll() is not None:
        srv.start()
    conn = srv.connect()
    data = _rows(scale, seed)
    if load:
        W.load(conn, data)
    geo = conn.geometry(W.SCHEMA)
    conn.close()
    all_plans = W.plans(geo, data, scale, seed)
    memo = {} if memo is None else memo
    context = (scale, seed, _geometry_key(geo))
    if memo.setdefault("context", context) != context:
        raise ValueError("memo holds the replays of other tables (scale, seed or geometry "
                         "differ); allowed: a memo of calls over the same tables, or None")
    return geo, all_plans, memo


def _queue_runs(settings: tuple, plans: tuple, runs, all_plans: dict) -> tuple:
    """The jobs of :func:`run_grid`'s workers, (setting's index, setting, plan) for each
    setting then plan (only the pairs of ``runs`` unless it is None), and how many runs
    each setting has."""
    jobs: queue.Queue = queue.Queue()
    left = {k: 0 for k in range(len(settings))}
    for k, st in enumerate(settings):
        for name in plans:
            if runs is None or (st.label, name) in runs:
                jobs.put((k, st, all_plans[name]))
                left[k] += 1
    return jobs, left


def _replay_runs(done: queue.Queue, n_jobs: int, left: dict, settings: tuple, plans: tuple,
                 all_plans: dict, geo, preset: str, startup: bool, memo: dict, gauges: bool,
                 progress) -> dict:
    """Take the ``n_jobs`` runs the workers put on ``done`` as they come (raising the
    exception that ended a worker) and replay each (:func:`_replay_rows`): its rows by
    (setting's index, plan's index).  ``progress(finished, settings)`` is called as each
    setting's last run is replayed."""
    n_settings = sum(1 for n in left.values() if n)
    prep0 = _prep_trace(geo, ("dates", "lineorder", "sbtest"))
    rows: dict = {}
    finished = 0
    for _ in range(n_jobs):
        run = done.get()
        if isinstance(run, BaseException):
            raise run
        rows[(run.k, plans.index(run.plan))] = _replay_rows(
            run, settings[run.k], all_plans[run.plan], geo, prep0, preset, startup, memo,
            gauges)
        left[run.k] -= 1
        if progress is not None and not left[run.k]:
            finished += 1
            progress(finished, n_settings)
    return rows


def _geometry_key(geo) -> tuple:
    """What identifies the tables ``geo`` was read from, for :func:`run_grid`'s memo: per
    table its space and pages, per index its root, height, rows and pages."""
    return tuple((t.name, t.space_id, t.n_pages,
                  tuple((ix.name, ix.root, ix.height, ix.rows,
                         hash(np.asarray(ix.pages(), dtype=np.int64).tobytes()))
                        for ix in t.indexes))
                 for t in geo.tables.values())


#: the plans of :func:`bufsim.live.workload.plans`, by name
PLANS = ("scan", "star", "point", "krange")


def _replay_rows(run: _Run, st: Setting, plan, geo, prep: Trace, preset: str,
                 startup: bool, memo: dict, gauges: bool = False) -> list[dict]:
    """The rows of one run: the server's deltas beside the replay's.

    ``memo`` keeps what does not change from run to run (a plan's trace over the
    geometry, the system tablespace), built at the first run that needs it, and the
    replay's counters of each distinct input (configuration, plan, startup pages): a
    replay is a pure function of them, and the repeat check and the recheck run the
    same setting several times (the same counters as replaying each run again)."""
    info = run.info
    cfg = make_preset(preset, device=DeviceModel.ssd(), **info.preset_overrides())
    if plan.name not in memo:
        memo[plan.name] = plan.trace(geo)
    tr = memo[plan.name]
    if startup:
        # the pool as the server starts the run: its startup pages, then the
        # tables' roots (the count is the server's, not fitted)
        if ("roots", cfg) not in memo:
            memo[("roots", cfg)] = int(_running_totals([prep], cfg)[0]["DATABASE_PAGES"])
        n_roots = memo[("roots", cfg)]
        n_sys = min(max(run.resident0 - n_roots, 0), SYSTEM_PAGES)
        if "system space" not in memo:
            ts = memo["system space"] = _with_system_space(geo.tablespaces)
            memo["rebased prep"] = _rebase(prep, ts)
        ts = memo["system space"]
        created = min(run.created0, n_sys)
        key = ("totals", plan.name, cfg, n_sys, created)
        if key not in memo:
            prep = Trace.concat([_startup_trace(ts, n_sys, created), memo["rebased prep"]]) \
                if n_sys else memo["rebased prep"]
            if ("rebased", plan.name) not in memo:
                memo[("rebased", plan.name)] = _rebase(tr, ts)
            tr = memo[("rebased", plan.name)]
            memo[key] = _running_totals([prep, tr, tr], cfg)
    else:
        key = ("totals", plan.name, cfg, None, None)
        if key not in memo:
            memo[key] = _running_totals([prep, tr, tr], cfg)
    t0, t1, t2 = memo[key]
    out = []
    for phase, r, s, end, t in (("cold", run.real[0], t1 - t0, t1, run.ms[0]),
                                ("warm", run.real[1], t2 - t1, t2, run.ms[1])):
        # counters: the phase's delta; gauges: the value at the phase's end
        pairs = [(m, r[m], s[m]) for m in COMPARED]
        pairs += [(m, r[m], end[m]) for m in (GAUGES_COMPARED if gauges else ())]
        for m, real, sim in pairs:
            out.append(dict(config=st.label, plan=run.plan, phase=phase, metric=m,
                            reported=float(real), simulated=float(sim),
                            holds=holds(m, float(real), float(sim)),
                            pool_pages=info.pool_pages, server_ms=t))
    return out


#: the settings whose server counts issue 16's repeat check runs again: 20 MiB,
#: old_blocks_time 1000, the default lru_scan_depth, read-ahead on (where the full grid's
#: three misses were) and the same setting with read-ahead off
REPEAT_SETTINGS = (Setting("20M", 95, 1000, True, None), Setting("20M", 95, 1000, False, None))


def repeat_runs(settings=REPEAT_SETTINGS, repeats: int = 5, *, first: pd.DataFrame | None = None,
                **kwargs) -> pd.DataFrame:
    """Run every setting ``repeats`` times on the live server (:func:`run_grid`, to which
    ``kwargs`` go; the settings alternate, and each run restarts the server as every run
    of the grid does) and number the runs of each row in ``repeat`` (0, 1, ...).

    ``first``: a :func:`run_grid` frame made with the same ``kwargs`` (scale, seed,
    preset, server, timing) whose rows hold some of ``settings`` for every plan asked for
    (and the gauges, with ``gauges=True``): the grid's run of such a setting is a cold run
    of the same configuration made the same way (a restart, then the plan cold and warm),
    so it is that setting's run 0 and only ``repeats - 1`` more are made (notebook 07's
    repeat checks: 12 of their 60 server runs are grid runs of the same settings).  Its
    rows are taken as they are (columns of :func:`run_grid`).

    The server's counts of one setting need not repeat: its page cleaner is a thread of
    its own, and what a run counts can depend on when its batches fall (see
    :func:`~bufsim.live.tolerance.repeatability`)."""
    repeats = check_int("repeats", repeats, 1, 100)
    settings = tuple(settings)
    keys = ["config", "plan", "phase", "metric"]
    reused = _grid_runs(first, settings, kwargs) if first is not None else {}
    need = [repeats - (s.label in reused) for s in settings]
    todo = tuple(s for r in range(repeats) for s, n in zip(settings, need) if r < n)
    parts = [reused[s.label] for s in settings if s.label in reused]
    if todo:
        parts.append(run_grid(todo, **kwargs))
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
    frame["repeat"] = frame.groupby(keys).cumcount()
    return frame


def _grid_runs(first: pd.DataFrame, settings, kwargs) -> dict:
    """The rows of ``first`` (a :func:`run_grid` frame) that are a whole run of a setting of
    ``settings`` for :func:`repeat_runs`: every plan of ``kwargs["plans"]`` (all by
    default), both phases, every counter compared (and the gauges with ``gauges``), once;
    by the setting's label, in :func:`run_grid`'s columns."""
    if not isinstance(first, pd.DataFrame):
        raise ValueError(f"first must be a run_grid DataFrame or None, got {type(first).__name__}")
    cols = ["config", "plan", "phase", "metric", "reported", "simulated", "holds",
            "pool_pages", "server_ms"]
    missing = [c for c in cols if c not in first.columns]
    if missing:
        raise ValueError(f"first lacks the run_grid column(s) {missing}; allowed: a frame "
                         f"run_grid returned")
    plans = tuple(kwargs.get("plans", PLANS))
    metrics = COMPARED + (GAUGES_COMPARED if kwargs.get("gauges", False) else ())
    want = len(plans) * 2 * len(metrics)
    out = {}
    for s in settings:
        rows = first[(first.config == s.label) & first.plan.isin(plans) & first.metric.isin(metrics)]
        if len(rows) == want and not rows.duplicated(["plan", "phase", "metric"]).any():
            order = {p: i for i, p in enumerate(plans)}
            out[s.label] = rows.sort_values("plan", key=lambda c: c.map(order), kind="stable")[cols]
    return out


#: at most this many server runs (a setting and a plan) run again by :func:`recheck_misses`:
#: 3 reruns of each take 3-5 minutes on this project's loaded 2-core machine; a preset
#: that misses more (``mariadb105`` misses about 700 rows of the full grid) is not
#: within the server's spread, rerun or not
RECHECK_LIMIT = 24


def recheck_misses(frame: pd.DataFrame, settings, repeats: int = 2, *,
                   limit: int = RECHECK_LIMIT, **kwargs) -> pd.DataFrame:
    """Run again the server runs of ``frame`` (a :func:`run_grid` frame of ``settings``)
    that hold a row that misses, at most ``repeats`` times each, and set each missing row's
    count in the grid's run and in the reruns beside the replay's
    (:func:`~bufsim.live.tolerance.repeatability`).  The reruns go round by round, and a
    server run stops being run again once every row of it that missed is within the
    server's spread: where the server's count of a row spreads widely (the star plan's
    not made young at 20 MiB with the default ``lru_scan_depth``: 0-5,857 over 128 cold
    runs, 23 of them at 50 or less, ``docs/cleaner-race.md``), a few runs may not yet show
    the count the replay gives.

    A row holds when the replay is within the server's own spread over repeated runs:
    one run's count can be off where the server's page cleaner, a thread of its own, ran
    its batches late (issue 16's repeat check; on this 2-core machine the grid's misses
    move from one run of the grid to the next).  Only the (setting, plan) pairs with a
    missing row run again, a round's runs in one :func:`run_grid` call (its ``runs``;
    ``kwargs`` go to it: ``scale``, ``seed``, ``server``, ``load``, ``preset``, ``workers``,
    ``memo``, ...; ``gauges`` as the grid's run had it; the rounds share one ``memo``, so a
    replay made in an earlier round, or in the grid's call given the same memo, is not
    made again).  Returns one row per missing row: the server's
    min / median / max over the grid's run (``repeat`` 0) and the reruns (1..repeats),
    the replay's count, in how many runs it holds, and ``within_spread``; empty (with
    those columns) when no row misses, with no server started.  More than ``limit``
    runs to run again (:func:`~bufsim.live.tolerance.missing_runs`) is an error, raised
    before any run."""
    repeats = check_int("repeats", repeats, 1, 100)
    limit = check_int("limit", limit, 1, 10_000)
    by_label = {s.label: s for s in settings}
    unknown = sorted(set(frame.config) - set(by_label))
    if unknown:
        raise ValueError(f"frame has configs {unknown} that are not in settings; allowed: "
                         f"the labels of the settings the frame was run with")
    keys = ["config", "plan", "phase", "metric"]
    missed = frame.loc[~frame.holds.astype(bool), keys]
    pairs = missing_runs(frame)
    if len(pairs) > limit:
        raise ValueError(f"{len(pairs)} server runs hold a row that misses; limit={limit}: "
                         f"allowed at most {limit} runs to run again")
    memo = kwargs.pop("memo", None)
    memo = {} if memo is None else memo
    first = frame.merge(pairs, on=["config", "plan"]).assign(repeat=0)
    runs = [first]
    spread = repeatability(first).merge(missed, on=keys)
    for k in range(1, repeats + 1):
        todo = spread.loc[~spread.within_spread.astype(bool), ["config", "plan"]] \
            .drop_duplicates()
        if todo.empty:
            break
        sts = tuple(by_label[c] for c in todo.config.drop_duplicates())
        plans = tuple(todo.plan.drop_duplicates())
        runs.append(run_grid(sts, plans=plans, runs=list(zip(todo.config, todo.plan)),
                             memo=memo, **kwargs).assign(repeat=k))
        both = pd.concat(runs, ignore_index=True)[list(first.columns)]
        spread = repeatability(both).merge(missed, on=keys)
    return spread.reset_index(drop=True)


def results_rows(frame: pd.DataFrame, experiment: str = "live MariaDB 10.11") -> list[dict]:
    """Rows for :func:`bufsim.results.write_results` (``fitted`` False, ``holds`` kept)."""
    out = []
    for r in frame.itertuples(index=False):
        out.append(dict(experiment=experiment, metric=f"{r.plan} {r.phase} {r.metric}",
                        config=r.config, reported=r.reported, simulated=r.simulated,
                        fitted=False, holds=bool(r.holds)))
    return out
