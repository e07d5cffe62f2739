"""The live-server tier: a private MariaDB server, its settings, geometry and counters.

* :class:`MariaDBServer` starts a private ``mariadbd`` in a temp directory on a unix
  socket (networking off) and stops it by its pid (:mod:`bufsim.live.server`).
* :func:`connect` / :class:`Connection` read settings, INNODB_BUFFER_POOL_STATS and
  table geometry over PyMySQL (:mod:`bufsim.live.client`, :mod:`bufsim.live.geometry`).
* :mod:`bufsim.live.workload` generates small SSB-like and sysbench-like tables, loads
  them, runs scans and index plans cold and warm, and builds the matching traces.
* :mod:`bufsim.live.compile` turns a user's SQL into a trace: the server's plan
  (EXPLAIN FORMAT=JSON, the optimizer trace) over the live geometry
  (:mod:`bufsim.live.compile_plan`, :mod:`bufsim.live.compile_btree`,
  :mod:`bufsim.live.compile_dml`); :mod:`bufsim.live.compile_workload` reads workload
  files (``bufsim live trace``); :mod:`bufsim.live.compile_validation` is notebook 09's
  driver.
* :mod:`bufsim.live.validation` is notebook 07's driver: a grid of settings and plans run
  on the server and replayed; :mod:`bufsim.live.tolerance` holds issue 16's tolerances and
  reads the server's spread over repeated runs, :mod:`bufsim.live.mechanisms` names the
  §13 mechanism behind a row that misses.
"""
from .client import COUNTERS, GAUGES, Connection, ServerSettings, connect, delta
from .server import (DEFAULT_SETTINGS, TIMING_SETTINGS, LiveError, MariaDBServer, find_binary,
                     server_available)

__all__ = ["COUNTERS", "GAUGES", "Connection", "ServerSettings", "connect", "delta",
           "DEFAULT_SETTINGS", "TIMING_SETTINGS", "LiveError", "MariaDBServer", "find_binary", "server_available"]
