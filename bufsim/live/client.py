"""A PyMySQL connection to MySQL/MariaDB that reads what a buffer-pool replay needs.

:func:`connect` opens a connection by unix socket or TCP on 127.0.0.1 and wraps it in
a :class:`Connection`, whose methods read the settings that decide the pool's
behaviour (:meth:`Connection.settings`), the pool's counters
(:meth:`Connection.pool_stats`: INFORMATION_SCHEMA.INNODB_BUFFER_POOL_STATS beside the
``Innodb_buffer_pool_*`` status variables, one row per pool) and the geometry of
tables (:mod:`bufsim.live.geometry`).  :func:`delta` subtracts two counter readings
taken around a workload.

Errors are :class:`bufsim.live.LiveError` and name what failed: the socket or host
that refused the connection, the privilege a query needs, or a server that died.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..versions import is_mariadb
from .errors import LiveError

__all__ = ["Connection", "ServerSettings", "connect", "delta", "COUNTERS", "GAUGES"]

#: Cumulative counters of INNODB_BUFFER_POOL_STATS (subtracted by :func:`delta`).
COUNTERS = (
    "NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "NUMBER_PAGES_READ_AHEAD",
    "NUMBER_READ_AHEAD_EVICTED", "PAGES_MADE_YOUNG", "PAGES_NOT_MADE_YOUNG",
    "NUMBER_PAGES_CREATED", "NUMBER_PAGES_WRITTEN", "LRU_IO_TOTAL",
)
#: Gauges (a delta keeps the later reading).
GAUGES = ("POOL_SIZE", "FREE_BUFFERS", "DATABASE_PAGES", "OLD_DATABASE_PAGES",
          "MODIFIED_DATABASE_PAGES")
#: Status variables read beside the I_S table (cumulative, lower-cased names).
STATUS = (
    "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_read_ahead", "Innodb_buffer_pool_read_ahead_evicted",
    "Innodb_buffer_pool_pages_made_young", "Innodb_buffer_pool_pages_made_not_young",
    "Innodb_pages_read",
)

#: Statements per round trip in :meth:`Connection.query_many` (see there)
BATCH = 100

# MySQL error codes that mean a missing privilege, and a lost server
_PRIVILEGE = {1044, 1045, 1142, 1143, 1227, 1370}
_GONE = {2002, 2003, 2006, 2013, 2055}


@dataclass(frozen=True)
class ServerSettings:
    """The server settings that matter to a replay (read from the live server).

    ``pool_pages`` is the server's POOL_SIZE (usable frames, after the block
    descriptors), ``buffer_pool_size`` the configured bytes.
    """

    version: str
    page_size: int
    buffer_pool_size: int
    pool_pages: int
    instances: int
    old_blocks_pct: int
    old_blocks_time_ms: int
    read_ahead_threshold: int
    random_read_ahead: bool
    lru_scan_depth: int
    adaptive_hash_index: bool
    flush_method: str
    chunk_size: int

    @property
    def is_mariadb(self) -> bool:
        return is_mariadb(self.version)

    def preset_overrides(self) -> dict:
        """Keyword overrides for a bufsim preset with this server's values."""
        return dict(pool_pages=self.pool_pages, old_blocks_pct=self.old_blocks_pct,
                    old_blocks_time_ms=self.old_blocks_time_ms,
                    read_ahead_threshold=self.read_ahead_threshold,
                    lru_scan_depth=self.lru_scan_depth,
                    adaptive_hash_index=self.adaptive_hash_index)


class Connection:
    """A live connection (see module docstring).  Use :func:`connect` to open one."""

    def __init__(self, conn, where: str, user: str, server=None, multi_statements: bool = False):
        self._conn = conn
        self.where = where
        self.user = user
        self.server = server
        #: whether the connection was opened with ``multi_statements=True``
        #: (:meth:`query_many` then sends a batch in one round trip)
        self.multi_statements = bool(multi_statements)

    # ---- plumbing -----------------------------------------------------------------
    def _fail(self, exc, doing: str):
        import pymysql
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        if self.server is not None:
            self.server.check_alive(doing)           # raises if the server died
        if code in _PRIVILEGE:
            raise LiveError(f"{doing}: user {self.user!r} lacks a privilege on {self.where} "
                            f"(server error {code}: {exc.args[1] if len(exc.args) > 1 else exc})") from None
        if code in _GONE or isinstance(exc, pymysql.err.InterfaceError):
            raise LiveError(f"{doing}: the connection to {self.where} was lost ({exc})") from None
        raise LiveError(f"{doing}: server error on {self.where}: {exc}") from None

    def query(self, sql: str, args=None, *, doing: str | None = None) -> list[tuple]:
        """Run one statement; its rows as tuples."""
        import pymysql
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        except pymysql.err.MySQLError as exc:
            self._fail(exc, doing or f"running {sql.split()[0].upper()} {sql[:60]!r}")

    def query_many(self, statements, *, doing: str | None = None,
                   batch: int = BATCH) -> list[tuple]:
        """Run ``statements`` (SQL strings without parameters) in order; the last one's rows.

        On a connection opened with ``multi_statements=True`` they go to the server in
        batches of at most ``batch`` statements (``;``-separated, one round trip per
        batch, the server runs each statement as it would alone); otherwise one round
        trip each.  A failing statement raises :class:`LiveError` naming ``doing``; the
        statements before it have run.

        Why batches (:data:`BATCH`): MariaDB runs the statements of one packet in
        ``dispatch_command``'s loop (``sql/sql_parse.cc``) and frees the session's
        statement memory (``thd->mem_root``) once, after the last, so a packet of 2,000
        point selects grew the server by ~40 MB that it then gave back (11,100 page
        faults, against 1,840 for the same statements in batches of 25-100).
        """
        import pymysql
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch={batch!r} is out of range; allowed: an int >= 1 "
                             "(statements per round trip)")
        statements = [str(s).strip().rstrip(";") for s in statements]
        if not statements:
            return []
        if not self.multi_statements or len(statements) == 1:
            out = None
            for sql in statements:
                out = self.query(sql, doing=doing)
            return out
        try:
            with self._conn.cursor() as cur:
                for k in range(0, len(statements), batch):
                    cur.execute(";\n".join(statements[k:k + batch]))
                    rows = list(cur.fetchall())
                    while cur.nextset():
                        rows = list(cur.fetchall())
                return rows
        except pymysql.err.MySQLError as exc:
            self._fail(exc, doing or f"running a batch of {len(statements)} statements")

    def frame(self, sql: str, args=None, *, doing: str | None = None) -> pd.DataFrame:
        """Run one query; its rows as a DataFrame with the column names."""
        import pymysql
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, args)
                cols = [d[0] for d in cur.description]
                return pd.DataFrame(list(cur.fetchall()), columns=cols)
        except pymysql.err.MySQLError as exc:
            self._fail(exc, doing or f"running {sql[:60]!r}")

    def execute(self, sql: str, args=None, *, doing: str | None = None) -> int:
        """Run one statement; the affected row count."""
        import pymysql
        try:
            with self._conn.cursor() as cur:
                n = cur.execute(sql, args)
            return n
        except pymysql.err.MySQLError as exc:
            self._fail(exc, doing or f"running {sql[:60]!r}")

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- settings and counters ----------------------------------------------------
    def variables(self, like: str = "innodb%") -> dict:
        """Global variables matching ``like`` (lower-case names -> string values)."""
        rows = self.query("SHOW GLOBAL VARIABLES LIKE %s", (like,),
                          doing=f"reading variables like {like!r}")
        return {k.lower(): v for k, v in rows}

    def status(self, names=STATUS) -> dict:
        """Global status variables ``names`` as integers."""
        rows = self.query("SHOW GLOBAL STATUS LIKE 'Innodb_%'", doing="reading SHOW GLOBAL STATUS")
        have = {k.lower(): v for k, v in rows}
        out = {}
        for n in names:
            v = have.get(n.lower())
            out[n] = int(v) if v is not None and str(v).lstrip("-").isdigit() else None
        return out

    def settings(self) -> ServerSettings:
        """The settings that matter (:class:`ServerSettings`), POOL_SIZE included."""
        v = self.variables("innodb%")
        version = self.query("SELECT VERSION()", doing="reading VERSION()")[0][0]
        # POOL_SIZE per pool, without pool_stats()'s frame and status read (4.3 of the
        # 4.5 ms this took; a live grid reads the settings once per run)
        pool_sizes = [int(r[0]) for r in self._pool_rows(("POOL_SIZE",))]
        inst = v.get("innodb_buffer_pool_instances")

        def num(name, default=0):
            x = v.get(name)
            return int(x) if x is not None and str(x).isdigit() else default

        return ServerSettings(
            version=str(version), page_size=num("innodb_page_size", 16384),
            buffer_pool_size=num("innodb_buffer_pool_size"),
            pool_pages=sum(pool_sizes),
            instances=int(inst) if inst is not None else len(pool_sizes),
            old_blocks_pct=num("innodb_old_blocks_pct", 37),
            old_blocks_time_ms=num("innodb_old_blocks_time", 1000),
            read_ahead_threshold=num("innodb_read_ahead_threshold", 56),
            random_read_ahead=v.get("innodb_random_read_ahead", "OFF").upper() == "ON",
            lru_scan_depth=num("innodb_lru_scan_depth", 1024),
            adaptive_hash_index=v.get("innodb_adaptive_hash_index", "OFF").upper() == "ON",
            flush_method=str(v.get("innodb_flush_method", "")),
            chunk_size=num("innodb_buffer_pool_chunk_size"),
        )

    def _pool_rows(self, cols, order: str = "") -> list[tuple]:
        """Rows of INNODB_BUFFER_POOL_STATS's ``cols`` (one per pool); an empty table is
        named as the missing PROCESS privilege it means."""
        rows = self.query(f"SELECT {', '.join(cols)} FROM INFORMATION_SCHEMA.INNODB_BUFFER_POOL_STATS "
                          f"{order}".rstrip(),
                          doing="reading INFORMATION_SCHEMA.INNODB_BUFFER_POOL_STATS (needs PROCESS)")
        if not rows:
            raise LiveError(f"INNODB_BUFFER_POOL_STATS on {self.where} is empty: "
                            f"user {self.user!r} may lack the PROCESS privilege")
        return rows

    def pool_stats(self) -> pd.DataFrame:
        """INNODB_BUFFER_POOL_STATS (one row per pool) with the Innodb_* status variables.

        Needs the PROCESS privilege.  The status variables are server-wide; they are
        put on the first row (NaN on the others).
        """
        cols = ("POOL_ID",) + GAUGES + COUNTERS
        df = pd.DataFrame(self._pool_rows(cols, "ORDER BY POOL_ID"), columns=list(cols))
        for c in df.columns:
            df[c] = pd.to_numeric(df[c]).astype("int64")
        st = self.status()
        for k, val in st.items():
            df[k] = [val] + [None] * (len(df) - 1) if val is not None else None
        return df

    def counters(self) -> pd.Series:
        """The pool counters summed over pools, with the status variables (a Series).

        The sums of :meth:`pool_stats`'s columns (POOL_ID dropped; a status variable the
        server lacks is NaN), read without building its frame: a live grid reads them 3
        times per run (41 ms each through the frame, 4 ms this way, at a load of 17)."""
        cols = GAUGES + COUNTERS
        rows = self._pool_rows(cols)
        sums = [sum(int(r[i]) for r in rows) for i in range(len(cols))]
        st = self.status()
        vals = sums + [st[n] if st[n] is not None else float("nan") for n in STATUS]
        return pd.Series(vals, index=list(cols) + list(STATUS), dtype="float64")

    def statement_ns(self) -> int:
        """The server's own time spent in this connection's statements so far, in ns.

        The sum of SUM_TIMER_WAIT over this thread's rows of
        performance_schema.events_statements_summary_by_thread_by_event_name (the
        server's timer, picoseconds): the difference of two readings taken around a
        workload is the server's time for its statements, without the client's round
        trips.  Needs performance_schema on (start the server with
        :data:`bufsim.live.TIMING_SETTINGS`); raises :class:`LiveError` naming it if off.
        """
        on = self.query("SELECT @@performance_schema", doing="reading @@performance_schema")
        if not on or not int(on[0][0]):
            raise LiveError(f"statement_ns: performance_schema is off on {self.where}; start "
                            "the server with bufsim.live.TIMING_SETTINGS")
        rows = self.query(
            "SELECT COALESCE(SUM(s.SUM_TIMER_WAIT), 0) FROM "
            "performance_schema.events_statements_summary_by_thread_by_event_name s "
            "JOIN performance_schema.threads t ON t.THREAD_ID = s.THREAD_ID "
            "WHERE t.PROCESSLIST_ID = CONNECTION_ID()",
            doing="reading performance_schema statement times")
        return int(rows[0][0]) // 1000

    def geometry(self, schema: str, tables=None, **kwargs):
        """:func:`bufsim.live.geometry.read_geometry` over this connection."""
        from .geometry import read_geometry
        return read_geometry(self, schema, tables, **kwargs)


def delta(before, after) -> pd.DataFrame | pd.Series:
    """Counters accumulated between two readings (gauges keep the later value).

    Parameters
    ----------
    before, after : pandas.DataFrame or pandas.Series
        Two results of :meth:`Connection.pool_stats` (or of
        :meth:`Connection.counters`), taken around a workload.

    Returns
    -------
    Same type as the inputs: cumulative columns as ``after - before``.
    """
    if type(before) is not type(after):
        raise ValueError("delta needs two readings of the same kind (two pool_stats() "
                         "frames or two counters() series)")
    cumulative = set(COUNTERS) | set(STATUS)
    out = after.copy()
    if isinstance(after, pd.DataFrame):
        if list(before.get("POOL_ID", [])) != list(after.get("POOL_ID", [])):
            raise ValueError("delta: the two readings are of different pools")
        for c in after.columns:
            if c in cumulative:
                out[c] = after[c] - before[c]
        return out
    for c in after.index:
        if c in cumulative:
            out[c] = after[c] - before[c]
    return out


def connect(*, socket: str | None = None, host: str | None = None, port: int = 3306,
            user: str = "root", password: str = "", database: str | None = None,
            connect_timeout: float = 10, server=None, multi_statements: bool = False) -> Connection:
    """Open a :class:`Connection` by unix ``socket`` or TCP on ``host`` (loopback only).

    ``multi_statements`` (default False): let :meth:`Connection.query_many` send many
    statements in one round trip (the client flag ``CLIENT_MULTI_STATEMENTS``).

    Raises
    ------
    LiveError
        If the socket/host does not answer or refuses the user; the message names it.
    ValueError
        If neither or both of ``socket`` and ``host`` are given, or ``host`` is not a
        loopback address (bufsim only talks to a server on this machine).
    """
    import pymysql
    if (socket is None) == (host is None):
        raise ValueError("give exactly one of socket= (a unix socket path) or host= (127.0.0.1)")
    if host is not None and host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"host={host!r} is not a loopback address; allowed: 127.0.0.1, ::1, localhost")
    where = f"socket {socket}" if socket is not None else f"{host}:{port}"
    try:
        from pymysql.constants import CLIENT
        kw = dict(user=user, password=password, database=database, autocommit=True,
                  connect_timeout=connect_timeout, local_infile=True,
                  client_flag=CLIENT.MULTI_STATEMENTS if multi_statements else 0)
        if socket is not None:
            # no TLS on a unix socket (the server counts it secure): PyMySQL >= 1.2 would
            # otherwise build a TLS context at every connect (22 ms of CPU loading the CA
            # store; a live grid connects about twice per run)
            conn = pymysql.connect(unix_socket=str(socket), ssl_disabled=True, **kw)
        else:
            conn = pymysql.connect(host=host, port=int(port), **kw)
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        if code in _PRIVILEGE:
            raise LiveError(f"connecting to {where} as {user!r}: access denied ({exc.args[-1]})") from None
        raise LiveError(f"connecting to {where}: no MySQL/MariaDB server answers there ({exc})") from None
    return Connection(conn, where, user, server, multi_statements=multi_statements)
