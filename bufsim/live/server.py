"""A private MariaDB server started by bufsim: a temp data directory, a unix socket, no network.

:class:`MariaDBServer` finds ``mariadbd`` and ``mariadb-install-db``, initialises a
data directory in a temporary directory, starts ``mariadbd`` on a unix socket in that
directory with ``--skip-networking`` and the chosen InnoDB settings, waits until it
answers, and stops it by its own process id (SIGTERM, then SIGKILL after a bound),
woken by its exit (a pidfd), not by polls.
The system service is never touched: nothing outside the temporary directory is
read or written by the server (``--no-defaults``).

Restarting with other settings is stop + start on the same data directory
(:meth:`MariaDBServer.restart`), which is also how a run starts with a cold pool.

Errors are :class:`LiveError` and name what failed: a binary not found, a data
directory that could not be initialised, a server that did not come up (with the
tail of its error log), a server that died mid-run (its exit status).  Whatever
fails, no process started here is left behind.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .errors import LiveError

__all__ = ["LiveError", "MariaDBServer", "find_binary", "server_available",
           "DEFAULT_SETTINGS", "TIMING_SETTINGS"]

#: Settings every private server gets unless overridden: reads bypass the OS cache
#: (the pool's misses are real reads), no adaptive hash index (its hits would add page
#: gets), no buffer-pool dump/load across restarts (a restart starts cold), no
#: statistics recalculation in the background (it would read pages).
#:
#: The last three shrink caches a run does not use, set up at every start (a notebook 07
#: run starts a server ~480 times): per start/stop of a 6 MiB server 19,740 -> 8,720
#: minor page faults and 66-68 -> 35-43 ms of system CPU (20 cycles each, MariaDB
#: 10.11.19; docs/live-idle.md).  None is on the path of a page get, a read or an LRU
#: move (``buf_page_get_gen``, ``buf_read_page``, ``buf_page_make_young`` use only the
#: buffer pool), and ``tests/live/test_live.py`` checks that the plans leave the
#: Aria and MyISAM caches untouched, write no temporary table to disk and never wait
#: for the log buffer:
#:
#: * ``aria_pagecache_buffer_size`` (default 128M): Aria's page cache
#:   (``storage/maria/ha_maria.cc``, ``ha_maria_init`` -> ``init_pagecache``), for
#:   Aria tables only: the ``mysql.*`` system tables read at start and internal
#:   temporary tables spilled to disk (the plans are aggregates without GROUP BY).
#: * ``key_buffer_size`` (default 128M): MyISAM's key cache (``mysys/mf_keycache.c``,
#:   ``init_key_cache`` from ``mysqld.cc``'s ``process_key_caches``, block headers
#:   allocated and zeroed at start, ~6,000 faults); no table here is MyISAM.
#: * ``innodb_log_buffer_size`` (default 16M; 2M is 10.11's minimum): the redo log
#:   buffer (``storage/innobase/log/log0log.cc``, ``log_t::create``: ``buf`` and
#:   ``flush_buf`` of this size), which holds redo records from ``mtr_t::commit``
#:   until they are written to ``ib_logfile0``; the runs' SELECTs write next to no
#:   redo (``Innodb_log_waits`` stays 0).
DEFAULT_SETTINGS = {
    "innodb_flush_method": "O_DIRECT",
    "innodb_adaptive_hash_index": "OFF",
    "innodb_buffer_pool_dump_at_shutdown": "OFF",
    "innodb_buffer_pool_load_at_startup": "OFF",
    "innodb_stats_auto_recalc": "OFF",
    "innodb_stats_persistent": "ON",
    "innodb_log_file_size": "48M",
    "innodb_doublewrite": "OFF",
    "performance_schema": "OFF",
    "skip_name_resolve": "ON",
    "aria_pagecache_buffer_size": "1M",
    "key_buffer_size": "64K",
    "innodb_log_buffer_size": "2M",
}

#: Settings that turn on the server's own statement timer: performance_schema, whose
#: per-thread statement summaries (events_statements_summary_by_thread_by_event_name)
#: :meth:`bufsim.live.Connection.statement_ns` reads.  Off by default (DEFAULT_SETTINGS);
#: performance_schema takes no buffer-pool pages.
TIMING_SETTINGS = {
    "performance_schema": "ON",
    "performance_schema_consumer_events_statements_current": "ON",
}

_SEARCH = ("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin", "/usr/libexec")


def find_binary(*names: str) -> str | None:
    """The first of ``names`` found on PATH or in the usual sbin folders, or None."""
    for name in names:
        p = shutil.which(name)
        if p:
            return p
        for d in _SEARCH:
            c = Path(d) / name
            if c.is_file() and os.access(c, os.X_OK):
                return str(c)
    return None


def server_available() -> tuple[bool, str]:
    """Whether a private server can be started here, and if not, why (for test skips)."""
    if find_binary("mariadbd", "mysqld") is None:
        return False, ("no mariadbd binary (install MariaDB: `make mariadb`, or "
                       "apt-get install mariadb-server)")
    if find_binary("mariadb-install-db", "mysql_install_db") is None:
        return False, "no mariadb-install-db binary (install mariadb-server)"
    try:
        import pymysql  # noqa: F401
    except ImportError:
        return False, "PyMySQL is not installed (pip install pymysql)"
    return True, ""


def _setting_arg(key: str, value) -> str:
    k = key.replace("_", "-")
    if isinstance(value, bool):
        value = "ON" if value else "OFF"
    return f"--{k}={value}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_exit(proc: subprocess.Popen, timeout: float) -> None:
    """Reap ``proc``, waiting at most ``timeout`` s (``subprocess.TimeoutExpired`` after).

    Woken by the exit itself through a pidfd (Linux 5.3+; elsewhere ``Popen.wait``):
    ``Popen.wait(timeout)`` polls with sleeps that double up to 50 ms, so a server that
    stops in 0.07-0.15 s was reaped 25 ms late on average, on the path of every restart
    (median stop 0.116 -> 0.078 s over 15 restarts each, 20 MiB, load 9)."""
    fd = None
    if proc.returncode is None:
        try:
            fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):       # no pidfd here, or the process is reaped
            fd = None
    if fd is None:
        proc.wait(timeout=timeout)
        return
    try:
        if not select.select([fd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    proc.wait()


class MariaDBServer:
    """A private ``mariadbd`` in a temporary directory, on a unix socket, networking off.

    Parameters
    ----------
    settings : dict, optional
        Server variables (``innodb_buffer_pool_size='6M'``, ``innodb_old_blocks_pct=5``,
        ``innodb_read_ahead_threshold=0``, ``innodb_lru_scan_depth=100``, ...), passed
        as ``--name=value`` on top of :data:`DEFAULT_SETTINGS`.
    mariadbd, install_db : str, optional
        Paths of the binaries; found on PATH and in ``/usr/sbin`` when omitted.
    start_timeout, stop_timeout : float
        Seconds to wait for the server to answer, and for it to exit after SIGTERM
        before SIGKILL.
    keep : bool
        Keep the temporary directory on close (for debugging).

    Examples
    --------
    >>> with MariaDBServer({"innodb_buffer_pool_size": "6M"}) as srv:   # doctest: +SKIP
    ...     conn = srv.connect()
    """

    def __init__(self, settings: dict | None = None, *, mariadbd: str | None = None,
                 install_db: str | None = None, start_timeout: float = 90.0,
                 stop_timeout: float = 30.0, keep: bool = False):
        self.settings = dict(settings or {})
        self.mariadbd = mariadbd or find_binary("mariadbd", "mysqld")
        self.install_db = install_db or find_binary("mariadb-install-db", "mysql_install_db")
        if self.mariadbd is None or not os.access(self.mariadbd, os.X_OK):
            raise LiveError(f"mariadbd not found or not executable ({self.mariadbd!r}); "
                            "install mariadb-server (`make mariadb`)")
        if self.install_db is None or not os.access(self.install_db, os.X_OK):
            raise LiveError(f"mariadb-install-db not found or not executable ({self.install_db!r}); "
                            "install mariadb-server (`make mariadb`)")
        for name, bound in (("start_timeout", start_timeout), ("stop_timeout", stop_timeout)):
            if not isinstance(bound, (int, float)) or not 0 < bound <= 3600:
                raise ValueError(f"{name}={bound!r} is out of range; allowed: 0 < seconds <= 3600")
        self.start_timeout = float(start_timeout)
        self.stop_timeout = float(stop_timeout)
        self.keep = keep
        self.tmpdir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self._log_fh = None

    # ---- paths --------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self._dir() / "data"

    @property
    def socket(self) -> str:
        return str(self._dir() / "mysqld.sock")

    @property
    def error_log(self) -> Path:
        return self._dir() / "error.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def _dir(self) -> Path:
        if self.tmpdir is None:
            raise LiveError("the server has no directory yet: call start() first")
        return self.tmpdir

    # ---- lifecycle ----------------------------------------------------------------
    def _user_args(self) -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    def _init_datadir(self) -> None:
        self.tmpdir = Path(tempfile.mkdtemp(prefix="bufsim-mariadb-"))
        if os.geteuid() == 0:
            os.chmod(self.tmpdir, 0o755)
        self.datadir.mkdir()
        cmd = [self.install_db, "--no-defaults", f"--datadir={self.datadir}",
               "--auth-root-authentication-method=normal", "--skip-test-db",
               "--skip-name-resolve", f"--tmpdir={self.tmpdir}", *self._user_args()]
        basedir = Path(self.mariadbd).resolve().parent.parent
        cmd.append(f"--basedir={basedir}")
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.start_timeout)
        except subprocess.TimeoutExpired:
            self._remove_dir()
            raise LiveError(f"mariadb-install-db did not finish within {self.start_timeout:.0f} s") from None
        if r.returncode != 0:
            tail = (r.stderr or r.stdout)[-1500:]
            self._remove_dir()
            raise LiveError(f"mariadb-install-db failed with exit status {r.returncode}: {tail}")

    def command(self) -> list[str]:
        """The mariadbd command line (settings included)."""
        args = [self.mariadbd, "--no-defaults", f"--datadir={self.datadir}",
                f"--socket={self.socket}", f"--pid-file={self._dir() / 'mysqld.pid'}",
                f"--log-error={self.error_log}", "--skip-networking",
                f"--tmpdir={self._dir()}", *self._user_args()]
        merged = dict(DEFAULT_SETTINGS)
        merged.update(self.settings)
        args += [_setting_arg(k, v) for k, v in merged.items()]
        return args

    def start(self) -> "MariaDBServer":
        """Initialise the data directory (first start only), start mariadbd, wait for it."""
        if self.proc is not None and self.proc.poll() is None:
            raise LiveError(f"the server is already running (pid {self.proc.pid})")
        if self.tmpdir is None:
            self._init_datadir()
        try:
            if os.path.exists(self.socket):
                os.unlink(self.socket)
            self._log_fh = open(self._dir() / "stdout.log", "ab")
            self.proc = subprocess.Popen(self.command(), stdout=self._log_fh,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            self._wait_ready()
        except BaseException:
            self._kill()
            if not self.keep:
                self._remove_dir()
            raise
        return self

    def _log_tail(self, n: int = 1500) -> str:
        try:
            return self.error_log.read_text(errors="replace")[-n:]
        except OSError:
            return "(no error log)"

    def _wait_ready(self) -> None:
        import pymysql
        deadline = time.monotonic() + self.start_timeout
        last = None
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise LiveError(f"mariadbd exited with status {code} during startup; "
                                f"error log: {self._log_tail()}")
            if os.path.exists(self.socket):
                try:
                    pymysql.connect(unix_socket=self.socket, user="root", connect_timeout=5,
                                    ssl_disabled=True).close()   # no TLS context per poll
                    return
                except pymysql.err.MySQLError as exc:
                    last = exc
            time.sleep(0.02)
        raise LiveError(f"mariadbd (pid {self.proc.pid}) did not accept connections on "
                        f"{self.socket} within {self.start_timeout:.0f} s (last error: {last}); "
                        f"error log: {self._log_tail()}")

    def check_alive(self, doing: str = "running") -> None:
        """Raise :class:`LiveError` naming ``doing`` if the server process has exited."""
        if self.proc is None:
            raise LiveError(f"the server is not running while {doing}: call start() first")
        code = self.proc.poll()
        if code is not None:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            raise LiveError(f"mariadbd (pid {self.proc.pid}) {how} while {doing}; "
                            f"error log: {self._log_tail(800)}")

    def _kill(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
                _wait_exit(p, self.stop_timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=30)
            except ProcessLookupError:
                pass
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def stop(self) -> None:
        """Stop the server by its pid (SIGTERM, SIGKILL after ``stop_timeout``); keep the datadir."""
        self._kill()

    def restart(self, **settings) -> "MariaDBServer":
        """Stop, update the settings with ``settings``, start again on the same data directory."""
        self.stop()
        self.settings.update(settings)
        return self.start()

    def clone(self, **settings) -> "MariaDBServer":
        """A second private server over a copy of this one's data directory (not started).

        This server must be stopped (a running server's files are not a consistent
        copy).  The copy gets a temporary directory, socket and error log of its own,
        this server's settings updated with ``settings``, and the same binaries and
        bounds; closing it removes only its own directory.  A copy of a loaded data
        directory is how two servers run the same tables side by side without loading
        them twice (``cp -a`` of a ~130 MiB directory takes well under a second).
        """
        if self.tmpdir is None:
            raise LiveError("clone: this server has no data directory yet: call start() first")
        if self.proc is not None and self.proc.poll() is None:
            raise LiveError(f"clone: the server is running (pid {self.proc.pid}); stop() it first")
        other = MariaDBServer(dict(self.settings, **settings), mariadbd=self.mariadbd,
                              install_db=self.install_db, start_timeout=self.start_timeout,
                              stop_timeout=self.stop_timeout, keep=self.keep)
        tmp = Path(tempfile.mkdtemp(prefix="bufsim-mariadb-"))
        try:
            if os.geteuid() == 0:
                os.chmod(tmp, 0o755)
            shutil.copytree(self.datadir, tmp / "data", symlinks=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        other.tmpdir = tmp
        return other

    def _remove_dir(self) -> None:
        if self.tmpdir is not None and not self.keep:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def close(self) -> None:
        """Stop the server and remove its temporary directory."""
        try:
            self._kill()
        finally:
            self._remove_dir()

    def __enter__(self) -> "MariaDBServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # a forgotten server must not outlive its owner
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.close()
        except Exception:
            pass

    # ---- clients ------------------------------------------------------------------
    def connect(self, **kwargs):
        """A :class:`bufsim.live.Connection` to this server over its socket, as root."""
        from .client import connect
        self.check_alive("connecting")
        return connect(socket=self.socket, user=kwargs.pop("user", "root"), server=self, **kwargs)

    def __repr__(self):
        state = "running" if self.proc is not None and self.proc.poll() is None else "stopped"
        return f"MariaDBServer({state}, pid={self.pid}, socket={self.socket if self.tmpdir else None})"
