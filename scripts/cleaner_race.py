"""Measure MariaDB 10.11's page-cleaner race on the live server (issues 38 item 6 and 40).

An investigation script, not part of the package: it starts the private server of
:func:`bufsim.live.validation.loaded_server`, and for one setting

* ``spread``: runs the notebook-07 plans ``runs`` times (each run a cold restart,
  :func:`bufsim.live.validation.repeat_runs`: the server's counts and the replay's), with the
  machine as it is or under CPU load (``--load cpu``: one ``yes > /dev/null`` per core,
  each under ``timeout`` so it ends by itself, and killed by pid when the runs end);
* ``polled``: the same runs, with a second connection reading ``INNODB_BUFFER_POOL_STATS``
  (FREE_BUFFERS, DATABASE_PAGES, OLD_DATABASE_PAGES) every ``--every-ms`` and the LRU
  counters of ``INFORMATION_SCHEMA.INNODB_METRICS`` per phase: how many LRU batches ran
  (buffer_LRU_batch_num_scan), how many blocks the user thread took
  (buffer_LRU_get_free_search) and freed itself (buffer_LRU_search_num_scan), the largest
  LRU and old sublist seen and the least free count.  The poll is bounded in count and time;
  ``--every-ms -1``: no poll; ``--extra innodb_use_native_aio=0``: server settings on top;
* ``pool09``: notebook 09's quick pool check (6 MiB, depth 100, time 1000) ``runs`` times;
* ``sleep09``: its statements one by one, with client sleeps before each (``--sleep-ms``)
  or before the first (``--pre-ms``), and the LRU counters per run;
* ``dbt3``: notebook 09's DBT-3 mrr_bka set at 12 MiB / old_blocks_time 0, counters per
  statement (made young, pages read, the batches' evictions).

The runs of docs/cleaner-race.md (2026-11-29)::

    --mode spread --plans star,scan --load none,cpu
    --mode polled --plans star --load none,cpu --every-ms 0
    --mode polled --plans star --every-ms -1 [--load none,cpu] [--extra innodb_use_native_aio=0]
    taskset -c 0 python scripts/cleaner_race.py --mode polled --plans star --every-ms -1
    --mode pool09 --runs 10 --load none,cpu
    --mode sleep09 --load none,cpu;  --mode sleep09 --sleep-ms 0 --pre-ms 0,2500
    --mode dbt3 --load none,cpu

Usage (from the worktree root; BUFSIM_ROOT and NUMBA_CACHE_DIR as in the Makefile)::

    python scripts/cleaner_race.py --setting 20M,95,1000,on,default --plans star,scan \
        --runs 8 --mode spread --load none --out build/cleaner_race/idle.csv

Writes one CSV (rows of the runs) and prints a summary.  Nothing is fitted.
"""
from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bufsim.live import validation as V   # noqa: E402
from bufsim.live import workload as W      # noqa: E402
from bufsim.live.client import delta      # noqa: E402

METRICS = ("buffer_LRU_batch_num_scan", "buffer_LRU_batch_evict_total_pages",
           "buffer_LRU_get_free_search", "buffer_LRU_search_num_scan",
           "buffer_LRU_get_free_loops", "buffer_LRU_batch_scanned")
POLL_LIMIT_S = 120.0          # a poller stops after this long whatever happens
POLL_LIMIT_N = 200_000        # ... or after this many readings


def parse_setting(text: str) -> V.Setting:
    pool, pct, t, ra, lsd = text.split(",")
    return V.Setting(pool, int(pct), int(t), ra == "on", None if lsd == "default" else int(lsd))


class CpuLoad:
    """``n`` busy processes (``yes > /dev/null``), each ended by ``timeout`` after
    ``seconds`` at the latest, and killed by pid on exit."""

    def __init__(self, n: int, seconds: float):
        self.n, self.seconds, self.procs = n, seconds, []

    def __enter__(self):
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(
                ["timeout", f"{self.seconds:.0f}", "yes"], stdout=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()      # timeout passes SIGTERM on to its yes, then exits
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def loadavg() -> float:
    return os.getloadavg()[0]


def spread(srv, st, plans, runs, load: str, scale) -> pd.DataFrame:
    """:func:`repeat_runs` of ``st`` on the loaded server ``srv``: one row per run, phase and
    counter, with the replay's count (the replay is deterministic)."""
    t0, la0 = time.time(), loadavg()
    if load == "cpu":
        with CpuLoad(os.cpu_count() or 2, 60 + 20 * runs * len(plans)):
            frame = V.repeat_runs((st,), runs, scale=scale, plans=plans, server=srv, load=False,
                                  gauges=True)
    else:
        frame = V.repeat_runs((st,), runs, scale=scale, plans=plans, server=srv, load=False,
                              gauges=True)
    frame["load"] = load
    frame["loadavg_start"] = la0
    frame["loadavg_end"] = loadavg()
    frame["seconds"] = time.time() - t0
    return frame


class Poller(threading.Thread):
    """Reads FREE_BUFFERS, DATABASE_PAGES and OLD_DATABASE_PAGES every ``every_s`` on its own
    connection until stopped (at most POLL_LIMIT_S seconds and POLL_LIMIT_N readings)."""

    def __init__(self, srv, every_s: float):
        super().__init__(daemon=True)
        self.conn = srv.connect()
        self.every_s = every_s
        self.stop = threading.Event()
        self.rows: list = []
        self.phase = "before"

    def run(self):
        t_end = time.monotonic() + POLL_LIMIT_S
        sql = ("SELECT SUM(FREE_BUFFERS), SUM(DATABASE_PAGES), SUM(OLD_DATABASE_PAGES) "
               "FROM information_schema.INNODB_BUFFER_POOL_STATS")
        try:
            while not self.stop.is_set() and time.monotonic() < t_end \
                    and len(self.rows) < POLL_LIMIT_N:
                r = self.conn.query(sql)[0]
                self.rows.append((self.phase, time.monotonic(), int(r[0]), int(r[1]), int(r[2])))
                if self.every_s > 0:
                    time.sleep(self.every_s)
        finally:
            self.conn.close()


def metrics(conn) -> pd.Series:
    names = ",".join(f"'{m}'" for m in METRICS)
    rows = conn.query(f"SELECT NAME, COUNT FROM information_schema.INNODB_METRICS "
                      f"WHERE NAME IN ({names})")
    return pd.Series({n: float(c) for n, c in rows}).reindex(list(METRICS))


def polled(srv, st, plans, runs, load: str, scale, every_s: float,
           extra: dict | None = None) -> pd.DataFrame:
    """``runs`` cold runs of each plan with the poll; one row per run and phase.
    ``extra``: server settings on top of the setting's (e.g. innodb_use_native_aio=0)."""
    conn = srv.connect()
    geo = conn.geometry(W.SCHEMA)
    conn.close()
    allp = W.plans(geo, V._rows(scale, 0), scale, 0)
    out = []
    cm = CpuLoad(os.cpu_count() or 2, 60 + 20 * runs * len(plans)) if load == "cpu" else None
    if cm:
        cm.__enter__()
    try:
        for r in range(runs):
            for name in plans:
                srv.restart(**st.server_settings(), **(extra or {}))
                conn = srv.connect(multi_statements=True)
                conn.execute("SET GLOBAL innodb_monitor_enable = 'buffer_LRU%'")
                for t in ("dates", "lineorder", "sbtest"):
                    conn.query(f"SELECT * FROM `{W.SCHEMA}`.`{t}` LIMIT 0")
                poll = Poller(srv, every_s)
                if every_s >= 0:        # a negative period: no poll (the counters only)
                    poll.start()
                try:
                    before, mb = conn.counters(), metrics(conn)
                    for phase in ("cold", "warm"):
                        poll.phase = phase
                        t0 = time.monotonic()
                        allp[name].run(conn)
                        secs = time.monotonic() - t0
                        after, ma = conn.counters(), metrics(conn)
                        d, dm = delta(before, after), ma - mb
                        samples = [x for x in poll.rows if x[0] == phase]
                        out.append(dict(
                            config=st.label, plan=name, run=r, phase=phase, load=load,
                            loadavg=loadavg(), seconds=secs,
                            not_made_young=d["PAGES_NOT_MADE_YOUNG"],
                            made_young=d["PAGES_MADE_YOUNG"], pages_read=d["NUMBER_PAGES_READ"],
                            **{m.replace("buffer_LRU_", ""): dm[m] for m in METRICS},
                            polls=len(samples),
                            min_free=min((x[2] for x in samples), default=-1),
                            max_lru=max((x[3] for x in samples), default=-1),
                            max_old=max((x[4] for x in samples), default=-1),
                            polls_with_old=sum(1 for x in samples if x[4] > 0),
                            lru_end=after["DATABASE_PAGES"], free_end=after["FREE_BUFFERS"]))
                        before, mb = after, ma
                        poll.phase = "between"
                finally:
                    poll.stop.set()
                    if poll.is_alive():
                        poll.join()
                    else:
                        poll.conn.close()
                    conn.close()
    finally:
        if cm:
            cm.__exit__(None, None, None)
    return pd.DataFrame(out)


def pool09(runs: int, load: str, pool: str = "6M", lsd: int = 100, obt: int = 1000,
           statements: int = 30, seed: int = 7) -> pd.DataFrame:
    """Notebook 09's quick pool check (its read statements, POOL_STAR's and the OLTP mix's,
    over :data:`bufsim.live.compile_validation.QUICK_SCALE`) ``runs`` times at one pool:
    :func:`bufsim.live.compile_validation.pool_check` with ``repeats=runs``."""
    from bufsim.live import compile_validation as CV
    from bufsim.live.server import MariaDBServer
    t0, la0 = time.time(), loadavg()
    with MariaDBServer({"innodb_buffer_pool_size": "32M"}) as srv:
        CV.prepare(srv, CV.QUICK_SCALE, seed)
        cm = CpuLoad(os.cpu_count() or 2, 120 + 10 * runs) if load == "cpu" else None
        if cm:
            cm.__enter__()
        try:
            f = CV.pool_check(srv, (pool,), statements=statements, seed=seed,
                              settings={"innodb_lru_scan_depth": lsd}, old_blocks_times=(obt,),
                              repeats=runs)
        finally:
            if cm:
                cm.__exit__(None, None, None)
    f["load"], f["loadavg_start"], f["loadavg_end"] = load, la0, loadavg()
    f["seconds"] = time.time() - t0
    return f


def sleep09(runs: int, sleeps_ms=(0, 20), pre_ms=(0,), pool: str = "6M", lsd: int = 100, obt: int = 1000,
            statements: int = 30, seed: int = 7) -> pd.DataFrame:
    """The statements of :func:`pool09` run one by one after a cold restart, ``runs`` times
    with each pause of ``sleeps_ms`` (ms, a client-side sleep before every statement,
    the runs of each pause alternating): NUMBER_PAGES_READ and the LRU counters per run.
    A pause lets the woken page cleaner finish its batch before the next statement
    takes a block; within a statement nothing changes.  ``pre_ms``: a sleep after the
    restart (and the tables' opening) before the first statement, each value in turn:
    the page cleaner's 1-second loop may write the dirty pages the startup left
    meanwhile."""
    from bufsim.live import compile_validation as CV
    from bufsim.live.compile_workload import read_workload
    from bufsim.live.server import MariaDBServer
    w = read_workload(CV.oltp_workload(), statements=statements, seed=seed)
    sqls = [sql for _, sql in CV.POOL_STAR] + [sql for th in w.draw() for _, sql in th]
    sqls = [q for q in sqls if CV._is_read(q)]
    out = []
    with MariaDBServer({"innodb_buffer_pool_size": "32M"}) as srv:
        CV.prepare(srv, CV.QUICK_SCALE, seed)
        for r in range(runs):
            for pause, pre in itertools.product(sleeps_ms, pre_ms):
                srv.restart(innodb_buffer_pool_size=pool, innodb_lru_scan_depth=lsd,
                            innodb_old_blocks_time=obt)
                with srv.connect(database=W.SCHEMA) as conn:
                    conn.execute("SET GLOBAL innodb_monitor_enable = 'buffer_LRU%'")
                    for t in ("dates", "lineorder", "sbtest"):
                        conn.query(f"SELECT * FROM `{W.SCHEMA}`.`{t}` LIMIT 0")
                    if pre:
                        time.sleep(pre / 1000)
                    before, mb = conn.counters(), metrics(conn)
                    for q in sqls:
                        if pause:
                            time.sleep(pause / 1000)
                        conn.query(q)
                    after, ma = conn.counters(), metrics(conn)
                d, dm = delta(before, after), ma - mb
                out.append(dict(run=r, sleep_ms=pause, pre_ms=pre, statements=len(sqls), loadavg=loadavg(),
                                pages_read=d["NUMBER_PAGES_READ"], gets=d["NUMBER_PAGES_GET"],
                                evicted=d.get("NUMBER_PAGES_EVICTED", float("nan")),
                                **{m.replace("buffer_LRU_", ""): dm[m] for m in METRICS},
                                lru_end=after["DATABASE_PAGES"], free_end=after["FREE_BUFFERS"]))
    return pd.DataFrame(out)


def dbt3(runs: int, load: str, pool: str = "12M", obt: int = 0, lsd: int = 100,
         sf: float = 0.01, seed: int = 7, set_name: str = "mrr_bka") -> pd.DataFrame:
    """Notebook 09's DBT-3 pool check for one session set (its supported, exact queries in
    order after a cold restart, as :func:`bufsim.live.compile_dbt3.pool_check` runs them)
    ``runs`` times, with the counters and LRU metrics read around every statement: per
    statement, the pages made young, read, and evicted by the cleaner's batches
    (buffer_LRU_batch_evict_total_pages) and by the user thread (buffer_LRU_get_free_loops:
    takes that found the free list empty)."""
    from bufsim.live import compile_dbt3 as C3
    from bufsim.live import dbt3_load as D
    from bufsim.live.server import MariaDBServer
    out = []
    with MariaDBServer({"innodb_buffer_pool_size": "32M"}) as srv:
        C3.prepare(srv, sf, seed)
        ps = C3.statement_check(srv, settings=(set_name,))
        ok = ps[(ps.unsupported == "") & (ps.compiled == ps.server)]
        sqls = list(zip(ok.template, ok.sql))
        cm = CpuLoad(os.cpu_count() or 2, 120 + 20 * runs) if load == "cpu" else None
        if cm:
            cm.__enter__()
        try:
            for r in range(runs):
                srv.restart(innodb_buffer_pool_size=pool, innodb_old_blocks_time=obt,
                            innodb_lru_scan_depth=lsd)
                with srv.connect(database=D.SCHEMA) as conn:
                    conn.execute("SET GLOBAL innodb_monitor_enable = 'buffer_LRU%'")
                    for q in C3.SETTINGS[set_name]:
                        conn.execute(q)
                    for t in D.TABLES:
                        conn.query(f"SELECT * FROM `{D.SCHEMA}`.`{t}` LIMIT 0")
                    before, mb = conn.counters(), metrics(conn)
                    for name, q in sqls:
                        conn.query(q)
                        after, ma = conn.counters(), metrics(conn)
                        d, dm = delta(before, after), ma - mb
                        out.append(dict(run=r, load=load, query=name, loadavg=loadavg(),
                                        made_young=d["PAGES_MADE_YOUNG"],
                                        not_made_young=d["PAGES_NOT_MADE_YOUNG"],
                                        pages_read=d["NUMBER_PAGES_READ"],
                                        batches=dm["buffer_LRU_batch_num_scan"],
                                        batch_evicted=dm["buffer_LRU_batch_evict_total_pages"],
                                        user_free_loops=dm["buffer_LRU_get_free_loops"],
                                        free_end=after["FREE_BUFFERS"],
                                        lru_end=after["DATABASE_PAGES"]))
                        before, mb = after, ma
        finally:
            if cm:
                cm.__exit__(None, None, None)
    return pd.DataFrame(out)


def _save(frames, out: Path) -> None:
    """The runs so far, written to a temporary name and moved into place."""
    tmp = out.with_suffix(".tmp.csv")
    pd.concat(frames).to_csv(tmp, index=False)
    os.replace(tmp, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setting", default="20M,95,1000,on,default",
                    help="pool,old_blocks_pct,old_blocks_time,read-ahead on|off,lru_scan_depth|default")
    ap.add_argument("--plans", default="star")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--mode", choices=("spread", "polled", "pool09", "sleep09", "dbt3"), default="spread")
    ap.add_argument("--load", default="none", help="none, cpu, or a list: none,cpu")
    ap.add_argument("--scale", choices=("full", "quick"), default="full")
    ap.add_argument("--every-ms", type=float, default=2.0,
                    help="the poll's period (0: back to back; negative: no poll)")
    ap.add_argument("--sleep-ms", default="0,20", help="sleep09: pauses before each statement")
    ap.add_argument("--pre-ms", default="0", help="sleep09: pauses before the first statement")
    ap.add_argument("--extra", default="", help="polled: server settings k=v,k=v on top")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if not 1 <= a.runs <= 50:
        raise SystemExit(f"--runs={a.runs} is out of range; allowed: 1..50")
    st = parse_setting(a.setting)
    plans = tuple(a.plans.split(","))
    scale = W.FULL if a.scale == "full" else W.QUICK
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frames = []
    if a.mode == "sleep09":
        for load in a.load.split(","):
            cm = CpuLoad(os.cpu_count() or 2, 120 + 15 * a.runs) if load == "cpu" else None
            if cm:
                cm.__enter__()
            try:
                f = sleep09(a.runs, tuple(int(x) for x in a.sleep_ms.split(",")),
                            tuple(int(x) for x in a.pre_ms.split(",")))
            finally:
                if cm:
                    cm.__exit__(None, None, None)
            f["load"] = load
            print(f"--- notebook 09's quick statements one by one, 6M, lsd 100, load={load}")
            print(f.to_string())
            frames.append(f)
            _save(frames, out)
        return 0
    if a.mode == "dbt3":
        for load in a.load.split(","):
            f = dbt3(a.runs, load)
            print(f"--- DBT-3 mrr_bka, 12M, time 0, lsd 100, load={load}")
            print(f.groupby("query", sort=False)[["made_young", "pages_read", "batch_evicted",
                                                   "user_free_loops"]].agg(
                lambda x: " ".join(str(int(v)) for v in x)).to_string())
            print("total made young per run:", f.groupby("run").made_young.sum().astype(int).tolist())
            frames.append(f)
            _save(frames, out)
        return 0
    if a.mode == "pool09":
        for load in a.load.split(","):
            f = pool09(a.runs, load)
            print(f"--- notebook 09 quick pool check, 6M, lsd 100, time 1000, load={load} "
                  f"({f.seconds.iloc[0]:.0f} s, loadavg {f.loadavg_start.iloc[0]:.1f} -> "
                  f"{f.loadavg_end.iloc[0]:.1f})")
            print(f.groupby("metric").agg(server=("reported", lambda x: sorted(int(v) for v in x)),
                                          replay=("simulated", "first")).to_string())
            frames.append(f)
            _save(frames, out)
        return 0
    with V.loaded_server(scale, 0) as srv:
        for load in a.load.split(","):
            if a.mode == "spread":
                f = spread(srv, st, plans, a.runs, load, scale)
                s = f[f.metric.isin(["PAGES_NOT_MADE_YOUNG", "NUMBER_PAGES_READ",
                                     "PAGES_MADE_YOUNG"])]
                print(f"--- {st.label} load={load} ({f.seconds.iloc[0]:.0f} s, "
                      f"loadavg {f.loadavg_start.iloc[0]:.1f} -> {f.loadavg_end.iloc[0]:.1f})")
                print(s.groupby(["plan", "phase", "metric"]).agg(
                    server=("reported", lambda x: sorted(int(v) for v in x)),
                    replay=("simulated", "first")).to_string())
            else:
                extra = dict(kv.split("=", 1) for kv in a.extra.split(",") if kv)
                f = polled(srv, st, plans, a.runs, load, scale, a.every_ms / 1000, extra)
                f["extra"] = a.extra
                print(f"--- {st.label} load={load}")
                print(f.to_string())
            frames.append(f)
            _save(frames, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
