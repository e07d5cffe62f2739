"""Server versions as data: one frozen record per server version bufsim models.

Every behaviour of the buffer pool that differs between MySQL 5.5, 5.6, 5.7, 8.0, 8.4
and MariaDB 10.5, 10.11, 11.4 is a named field of that version's :class:`ServerVersion`
record, with the server source it comes from beside it.  The rest of the package reads
fields (``config.server.refill_on_demand``, ``record("5.5").page_cleaner``); no module
but this one compares version names (``tests/test_layout.py`` checks it).  The presets
of :mod:`bufsim.config` are built from these records, so adding a server is one record
here and its tests.

Sources are cited as ``file: function`` or ``file: sysvar`` of the server's tree
(``storage/innobase/`` omitted): MySQL's ``mysql/mysql-server`` (branches 5.5, 5.6, 5.7,
8.0, 8.4) and ``MariaDB/server`` (10.5, 10.11, 11.4); ``spec §n`` is
``docs/semantics.md`` (its section numbers); ``docs/guide-versions.md`` has the table of
every preset's defaults and what was and was not checked.

>>> record("5.5").page_cleaner, record("8.4").adaptive_hash_index
(False, False)
>>> default_instances("8.4", 16 * 2**30 // 16384, vcpus=16)
4
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ._units import MAX_INSTANCES, PAGE_SIZE
from ._validation import check_int

__all__ = ["ServerVersion", "RECORDS", "VERSIONS", "PRESET_VERSIONS", "CONTENTION_PRESETS", "record", "by_preset",
           "from_server_string", "is_mariadb", "default_instances", "DEFAULT_VCPUS", "FREE_SCAN_CODES",
           "READ_AHEAD_SITES",
           "ONE_GIB_PAGES"]

#: innodb_buffer_pool_size of 1 GiB in 16 KiB pages (BUF_POOL_SIZE_THRESHOLD,
#: ``include/srv0start.h`` of 5.6-8.4).
ONE_GIB_PAGES = 2**30 // PAGE_SIZE
#: innodb_buffer_pool_chunk_size's default, 128 MiB (5.7+ ``handler/ha_innodb.cc``:
#: buffer_pool_chunk_size).
CHUNK_BYTES = 128 * 2**20
#: Logical processors the MySQL 8.4 preset assumes when its instance rule needs them and
#: none are given (``std::thread::hardware_concurrency()`` on the server's machine; a
#: replay does not read this machine's, so that a preset gives the same pool everywhere).
DEFAULT_VCPUS = 16
#: Codes of :attr:`ServerVersion.free_scan` in the kernels' configuration array.
FREE_SCAN_CODES = {"tenth": 0, "scan_depth": 1, "threshold": 2}
_INSTANCE_RULES = ("one", "eight_from_1g", "size_and_cpus")
#: The values of :attr:`ServerVersion.read_ahead_sites`.
READ_AHEAD_SITES = ("get", "btr")
_POOL_SIZE_RULES = (None, "instance_chunk", "chunks", "extents")


@dataclass(frozen=True)
class ServerVersion:
    """What one server version does, field by field (module docstring).

    Attributes
    ----------
    key
        The value of :attr:`bufsim.PoolConfig.version` (``"5.6"``, ``"mariadb10.11"``).
    preset
        The name of the preset built from this record (``"mysql56"``).
    server
        The server's name and version, as a user reads it.
    mariadb
        A MariaDB server (``SELECT VERSION()`` says ``-MariaDB``).
    """

    key: str
    preset: str
    server: str
    mariadb: bool

    # ---- defaults of system variables (the preset's values) ----------------------------
    #: innodb_old_blocks_time, ms (``handler/ha_innodb.cc``: old_blocks_time; 0 in 5.5,
    #: 1000 from 5.6.6 on and in every MariaDB).
    old_blocks_time_ms: int
    #: innodb_lru_scan_depth (``handler/ha_innodb.cc``: LRU_scan_depth; 1024 in MySQL 5.6+,
    #: 1536 in MariaDB 10.5+; 5.5 has no such variable and the field keeps bufsim's
    #: default, unused there).
    lru_scan_depth: int
    #: innodb_adaptive_hash_index (``handler/ha_innodb.cc``: adaptive_hash_index,
    #: ``btr_search_enabled``): ON up to MySQL 8.0, OFF in 8.4 and in MariaDB 10.5+
    #: (MDEV-20487).
    adaptive_hash_index: bool
    #: innodb_old_blocks_pct (``handler/ha_innodb.cc``: old_blocks_pct, 100 * 3 / 8 = 37
    #: in every version).
    old_blocks_pct: int = 37
    #: innodb_read_ahead_threshold (``handler/ha_innodb.cc``: read_ahead_threshold, 56).
    read_ahead_threshold: int = 56
    #: innodb_io_capacity (``handler/ha_innodb.cc``: io_capacity; 200 up to 8.0 and in
    #: MariaDB, 10000 in 8.4).
    io_capacity: int = 200
    #: innodb_io_capacity_max (``handler/ha_innodb.cc``: io_capacity_max; 2000, 8.4: twice
    #: io_capacity).  Recorded, not modelled: the LRU and flush-list batches of
    #: :mod:`bufsim.policies.flush` are bounded by io_capacity only.
    io_capacity_max: int = 2000
    #: innodb_max_dirty_pages_pct (``handler/ha_innodb.cc``: max_dirty_pages_pct; 75 in
    #: 5.5-5.7, 90 from 8.0.3 (WL#9707) and in MariaDB from 10.5: ``mariadbd --verbose
    #: --help`` of Debian's 10.11.19 prints 90).
    max_dirty_pages_pct: int = 75
    #: innodb_max_dirty_pages_pct_lwm (``handler/ha_innodb.cc``: max_dirty_pages_pct_lwm;
    #: 0 in 5.6/5.7 and MariaDB, 10 from 8.0.3).  5.5 has no such variable.
    max_dirty_pages_pct_lwm: int = 0
    #: innodb_flush_neighbors (``handler/ha_innodb.cc``: flush_neighbors; 1 up to 5.7 and in
    #: MariaDB, 0 from 8.0.3).  Recorded, not modelled: a replay writes one page at a time.
    flush_neighbors: int = 1
    #: innodb_page_cleaners (``handler/ha_innodb.cc``: page_cleaners; none in 5.5, one
    #: thread in 5.6, 4 in 5.7/8.0, as many as instances in 8.4, one in MariaDB 10.5+).
    #: ``"instances"`` stands for 8.4's rule.  Recorded, not modelled: the cleaner's pass
    #: visits every instance in turn.
    page_cleaners: int | str = 1
    #: How innodb_buffer_pool_instances defaults from the pool size (spec §6.3):
    #: ``"one"`` (5.5: 1; MariaDB 10.5+: a single pool, the variable ignored then
    #: removed), ``"eight_from_1g"`` (5.6-8.0, ``handler/ha_innodb.cc``:
    #: innobase_init / innodb_init_params: 8 if the pool is at least 1 GiB, else 1),
    #: ``"size_and_cpus"`` (8.4, ``handler/ha_innodb.cc``: innodb_init_params: 1 below
    #: 1 GiB, else ``clamp(min(size / (chunk * 2), vcpus / 4), 1, 64)``).
    instances_rule: str = "eight_from_1g"

    # ---- behaviour the kernels follow -------------------------------------------------
    #: A page cleaner thread refills the free list once a second
    #: (``buf/buf0flu.cc``: buf_flush_page_cleaner_thread / _coordinator ->
    #: buf_flush_LRU_tail; 5.6+, MariaDB); 5.5 has none and each user thread evicts its
    #: own victim (``buf/buf0lru.c``: buf_LRU_get_free_block).
    page_cleaner: bool = True
    #: Flush-list flushing is 5.5's master thread's one- and ten-second loops
    #: (``srv/srv0srv.c``: srv_master_thread) rather than the page cleaner's
    #: page_cleaner_flush_pages_if_needed (``buf/buf0flu.cc``, 5.6+).
    master_thread_flushing: bool = False
    #: How many LRU-tail blocks a user thread's first scan for a free block looks at
    #: (``buf/buf0lru.cc``: buf_LRU_get_free_block -> buf_LRU_scan_and_free_block):
    #: ``"tenth"`` (5.5 buf_LRU_search_and_free_block: 100 + the LRU's size / 10),
    #: ``"scan_depth"`` (5.6: srv_LRU_scan_depth), ``"threshold"`` (5.7+, MariaDB:
    #: BUF_LRU_SEARCH_SCAN_THRESHOLD = 100).
    free_scan: str = "threshold"
    #: innodb_read_ahead_threshold = 0 switches linear read-ahead off
    #: (``buf/buf0rea.cc``: buf_read_ahead_linear, 5.6+); in 5.5 (``buf/buf0rea.c``) 0 is
    #: the most aggressive setting.
    read_ahead_zero_off: bool = True
    #: Linear read-ahead at the last page of an area reads the area of the next page
    #: *number* and needs both leaf links set (MariaDB 10.11+ ``buf/buf0rea.cc``:
    #: buf_read_ahead_linear ``++id``); MySQL and MariaDB 10.5 read the area of
    #: FIL_PAGE_NEXT / FIL_PAGE_PREV (spec §5.2).
    read_ahead_next_page_area: bool = False
    #: Linear read-ahead counts ``min(64 - threshold, area)`` down and gives up at zero,
    #: one failure earlier than MySQL's ``fail_count > threshold`` (MariaDB 10.11+
    #: ``buf/buf0rea.cc``: buf_read_ahead_linear).
    read_ahead_fail_early: bool = False
    #: A read-ahead page that holds no data (FIL_PAGE_TYPE_ALLOCATED) is freed from the
    #: pool once read (MariaDB 10.11+ ``buf/buf0rea.cc`` / ``buf/buf0buf.cc``:
    #: buf_page_t::read_complete; spec §13, measured on 10.11.19).
    free_unused_after_read_ahead: bool = False
    #: A thread that takes a free block leaving fewer than innodb_lru_scan_depth / 2 has
    #: the page cleaner refill the free list at once (MariaDB 10.11+ ``buf/buf0lru.cc``:
    #: buf_LRU_get_free_block -> buf_pool_t::page_cleaner_wakeup; spec §13).  When the
    #: woken batch runs is thread timing: :attr:`bufsim.PoolConfig.cleaner_lag`.  The
    #: replay's once-a-second pass still runs the LRU batch unconditionally: a newer
    #: source gates it by need_LRU_eviction (``buf/buf0flu.cc``: buf_flush_page_cleaner),
    #: but with that gate the LRU the live 10.11.19 leaves held in fewer rows of
    #: notebook 07's grid (``docs/cleaner-race.md``).
    refill_on_demand: bool = False
    #: The cleaner's LRU batch has no scan quota: it runs until lru_scan_depth blocks are
    #: free or the LRU is down to its floor (MariaDB 10.11+ ``buf/buf0flu.cc``:
    #: buf_flush_LRU_list_batch); MySQL's scans at most min(lru_scan_depth, LRU length)
    #: (5.6 ``buf/buf0flu.cc``: buf_flush_LRU_tail).
    cleaner_batch_unbounded: bool = False
    #: The LRU batch's floor is ``min(usable size / 20 - 1, 256)`` for small pools
    #: (MariaDB 10.11+ ``buf/buf0flu.cc``: buf_flush_LRU_list_batch, buf_lru_min_len),
    #: else BUF_LRU_MIN_LEN = 256 (``include/buf0lru.h``).
    small_pool_lru_floor: bool = False
    #: A temporary-tablespace page modified writes no redo, stays out of the flush list
    #: and is freed when its LRU write completes (MariaDB 10.11+ ``mtr/mtr0mtr.cc``:
    #: mtr_t::set_modified -> set_temp_modified; ``buf/buf0flu.cc``:
    #: buf_page_write_complete).  Elsewhere it is any modified page.
    temp_pages_unlogged: bool = False
    #: Where linear read-ahead is tried (spec §5.4).  ``"get"``: on every page's first
    #: access since it was read, whatever the page (MySQL 5.5-8.4 ``buf/buf0buf.cc``:
    #: buf_page_get_gen, ``if (!access_time) buf_read_ahead_linear(...)``; MariaDB 10.5,
    #: 10.6 <= 10.6.16 and 10.11 <= 10.11.6 ``buf/buf0buf.cc``: buf_page_get_low).
    #: ``"btr"``: only where the B-tree code asks for it (MariaDB >= 10.6.17 / 10.11.7 /
    #: 11.x, MDEV-32068, commit f074223ae7, "Some calls to buf_read_ahead_linear() seem to
    #: be useless": buf_page_get_low no longer calls it): a leaf reached by a forward step,
    #: at its first access (``btr/btr0pcur.cc``: btr_pcur_move_to_next_page), and a leaf
    #: reached by a descent, *before* its get, when its level-1 parent was accessed for the
    #: first time (``btr/btr0cur.cc``: btr_cur_t::search_leaf).  The replay tells these
    #: apart by the trace's access kind (:data:`bufsim.FLAG_STEP`,
    #: :data:`bufsim.FLAG_DESCENT`, :data:`bufsim.FLAG_NO_RA`); a get of unknown kind
    #: (neither bit) follows the ``"get"`` rule.  A 10.11 server before 10.11.7:
    #: ``mariadb1011(read_ahead_sites="get")`` (:attr:`bufsim.PoolConfig.read_ahead_sites`).
    read_ahead_sites: str = "get"

    # ---- POOL_SIZE: the frames a pool of a given size has ----------------------------
    #: How :func:`bufsim.pages_from_bytes` derives POOL_SIZE: ``"instance_chunk"``
    #: (5.5/5.6 ``buf/buf0buf.cc``: buf_chunk_init, one chunk per instance, descriptors
    #: on top, one frame lost to 16 KiB alignment), ``"chunks"`` (5.7+: chunks of
    #: :attr:`chunk_bytes` per instance, each as above), ``"extents"`` (MariaDB 10.11+
    #: after MDEV-29445, ``buf/buf0buf.cc``: buf_pool_t::get_n_blocks,
    #: first_page_in_extent), None (not known: only the nominal page count).
    pool_size_rule: str | None = None
    #: innodb_buffer_pool_chunk_size (5.7+ ``handler/ha_innodb.cc``:
    #: buffer_pool_chunk_size, 128 MiB).
    chunk_bytes: int = CHUNK_BYTES
    #: MariaDB: innodb_buffer_pool_extent_size (8 MiB) and the frames of each extent that
    #: hold the block descriptors (5 on the Debian 12 build of 10.11.19, measured: 6 MiB ->
    #: 379, 10 MiB -> 630, 20 MiB -> 1,265 frames).
    extent_bytes: int = 8 * 2**20
    extent_first_page: int = 5
    #: The smallest innodb_buffer_pool_size the server starts with, 16 KiB pages: 5 MiB in
    #: MySQL (``handler/ha_innodb.cc``: buffer_pool_size, srv_buf_pool_min_size) and MariaDB
    #: 10.5 (``handler/ha_innodb.cc``: min_buffer_pool_size, (BUF_LRU_MIN_LEN +
    #: BUF_LRU_MIN_LEN / 4) pages rounded up to 1 MiB); 6 MiB in MariaDB 10.11+ after
    #: MDEV-29445, whose extents hold their block descriptors (measured on the Debian 12
    #: build of 10.11.19: "innodb_page_size=16384 requires innodb_buffer_pool_size >= 6 MiB
    #: current 5 MiB", ``handler/ha_innodb.cc``: innodb_init_params).
    min_pool_bytes: int = 5 * 2**20
    #: Whether an explicit instance count other than 1 is allowed in POOL_SIZE
    #: (MariaDB 10.5+ has a single pool).
    single_pool: bool = False

    # ---- mutex rules of the contention model (bufsim.contention) ----------------------
    #: Whether the contention model's mutex rules are known for this version (5.5-5.7;
    #: 8.0 split buf_pool->mutex into LRU_list_mutex, free_list_mutex, ... and MariaDB
    #: 10.5 made the pool one ``buf_pool.mutex``: not modelled).
    contention_modelled: bool = False
    #: Every page get takes its instance's buf_pool->mutex (5.5 ``buf/buf0buf.c``:
    #: buf_page_get_gen -> buf_pool_mutex_enter); from 5.6 a hit takes only the
    #: page_hash rw-lock (spec §6.2).
    get_takes_pool_mutex: bool = False
    #: innodb_adaptive_hash_index_parts (5.7+ ``handler/ha_innodb.cc``:
    #: adaptive_hash_index_parts, 8); one search latch before 5.7.
    ahi_parts: int = 8

    def __post_init__(self):
        if self.instances_rule not in _INSTANCE_RULES:
            raise ValueError(f"instances_rule={self.instances_rule!r} is unknown; allowed: "
                             + ", ".join(_INSTANCE_RULES))
        if self.free_scan not in FREE_SCAN_CODES:
            raise ValueError(f"free_scan={self.free_scan!r} is unknown; allowed: "
                             + ", ".join(FREE_SCAN_CODES))
        if self.read_ahead_sites not in READ_AHEAD_SITES:
            raise ValueError(f"read_ahead_sites={self.read_ahead_sites!r} is unknown; allowed: "
                             + ", ".join(READ_AHEAD_SITES))
        if self.pool_size_rule not in _POOL_SIZE_RULES:
            raise ValueError(f"pool_size_rule={self.pool_size_rule!r} is unknown; allowed: "
                             + ", ".join(map(str, _POOL_SIZE_RULES)))

    @property
    def free_scan_code(self) -> int:
        """:attr:`free_scan` as the kernels' code (:data:`FREE_SCAN_CODES`)."""
        return FREE_SCAN_CODES[self.free_scan]

    def preset_defaults(self) -> dict:
        """The :class:`bufsim.PoolConfig` fields a preset takes from this record."""
        return dict(version=self.key, old_blocks_time_ms=self.old_blocks_time_ms,
                    old_blocks_pct=self.old_blocks_pct,
                    read_ahead_threshold=self.read_ahead_threshold,
                    lru_scan_depth=self.lru_scan_depth,
                    adaptive_hash_index=self.adaptive_hash_index,
                    io_capacity=self.io_capacity,
                    max_dirty_pages_pct=self.max_dirty_pages_pct,
                    max_dirty_pages_pct_lwm=self.max_dirty_pages_pct_lwm)

    def default_instances(self, pool_pages: int, vcpus: int | None = None) -> int:
        """innodb_buffer_pool_instances by default for a pool of ``pool_pages`` 16 KiB
        pages (:attr:`instances_rule`); ``vcpus`` (8.4 only) defaults to
        :data:`DEFAULT_VCPUS`."""
        if self.instances_rule == "one":
            return 1
        if pool_pages < ONE_GIB_PAGES:
            return 1
        if self.instances_rule == "eight_from_1g":
            return 8
        cpus = DEFAULT_VCPUS if vcpus is None else check_int("vcpus", vcpus, 1, 2**16)
        bp_hint = pool_pages * PAGE_SIZE // (self.chunk_bytes * 2)
        return max(1, min(bp_hint, cpus // 4, MAX_INSTANCES))

    def replace(self, **changes) -> "ServerVersion":
        """A copy with some fields changed (a server built or configured otherwise)."""
        return dataclasses.replace(self, **changes)


_MYSQL55 = ServerVersion(
    "5.5", "mysql55", "MySQL 5.5", False, old_blocks_time_ms=0, lru_scan_depth=1024,
    adaptive_hash_index=True, page_cleaners=0, instances_rule="one", page_cleaner=False,
    master_thread_flushing=True, free_scan="tenth", read_ahead_zero_off=False,
    pool_size_rule="instance_chunk", contention_modelled=True, get_takes_pool_mutex=True,
    ahi_parts=1)
_MYSQL56 = ServerVersion(
    "5.6", "mysql56", "MySQL 5.6", False, old_blocks_time_ms=1000, lru_scan_depth=1024,
    adaptive_hash_index=True, page_cleaners=1, free_scan="scan_depth",
    pool_size_rule="instance_chunk", contention_modelled=True, ahi_parts=1)
_MYSQL57 = ServerVersion(
    "5.7", "mysql57", "MySQL 5.7", False, old_blocks_time_ms=1000, lru_scan_depth=1024,
    adaptive_hash_index=True, page_cleaners=4, pool_size_rule="chunks",
    contention_modelled=True)
#: MySQL 8.0 (8.0.3 changed innodb_max_dirty_pages_pct 75 -> 90,
#: innodb_max_dirty_pages_pct_lwm 0 -> 10 and innodb_flush_neighbors 1 -> 0); the LRU,
#: free-list, read-ahead and page-cleaner rules bufsim models are 5.7's
#: (``buf/buf0lru.cc``: buf_LRU_get_free_block, ``buf/buf0rea.cc``:
#: buf_read_ahead_linear, ``buf/buf0flu.cc``: buf_flush_page_coordinator_thread).
_MYSQL80 = ServerVersion(
    "8.0", "mysql80", "MySQL 8.0", False, old_blocks_time_ms=1000, lru_scan_depth=1024,
    adaptive_hash_index=True, max_dirty_pages_pct=90, max_dirty_pages_pct_lwm=10,
    flush_neighbors=0, page_cleaners=4, pool_size_rule="chunks")
#: MySQL 8.4 LTS (8.4.0 changed innodb_adaptive_hash_index ON -> OFF,
#: innodb_io_capacity 200 -> 10000, innodb_io_capacity_max 2000 -> 2 x io_capacity,
#: innodb_page_cleaners 4 -> innodb_buffer_pool_instances and the instance rule).
_MYSQL84 = ServerVersion(
    "8.4", "mysql84", "MySQL 8.4", False, old_blocks_time_ms=1000, lru_scan_depth=1024,
    adaptive_hash_index=False, io_capacity=10000, io_capacity_max=20000,
    max_dirty_pages_pct=90, max_dirty_pages_pct_lwm=10, flush_neighbors=0,
    page_cleaners="instances",
    instances_rule="size_and_cpus", pool_size_rule="chunks")
_MARIADB105 = ServerVersion(
    "mariadb10.5", "mariadb105", "MariaDB 10.5", True, old_blocks_time_ms=1000,
    lru_scan_depth=1536, adaptive_hash_index=False, max_dirty_pages_pct=90, instances_rule="one",
    single_pool=True)
_MARIADB_SPEC13 = dict(read_ahead_next_page_area=True, read_ahead_fail_early=True,
                       free_unused_after_read_ahead=True, refill_on_demand=True,
                       cleaner_batch_unbounded=True, small_pool_lru_floor=True,
                       temp_pages_unlogged=True, pool_size_rule="extents", single_pool=True,
                       min_pool_bytes=6 * 2**20)
#: MariaDB 10.11 as Debian 12 ships it (10.11.18/.19, >= 10.11.7): read-ahead at the
#: B-tree's sites (MDEV-32068, ``read_ahead_sites="btr"``).
_MARIADB1011 = ServerVersion(
    "mariadb10.11", "mariadb1011", "MariaDB 10.11", True, old_blocks_time_ms=1000,
    lru_scan_depth=1536, adaptive_hash_index=False, max_dirty_pages_pct=90, instances_rule="one",
    read_ahead_sites="btr", **_MARIADB_SPEC13)
#: MariaDB 11.4 LTS: the buffer pool code of 10.11 (the §13 mechanisms are in
#: ``buf/buf0lru.cc``, ``buf0flu.cc`` and ``buf0rea.cc`` of both).
_MARIADB114 = ServerVersion(
    "mariadb11.4", "mariadb114", "MariaDB 11.4", True, old_blocks_time_ms=1000,
    lru_scan_depth=1536, adaptive_hash_index=False, max_dirty_pages_pct=90,
    instances_rule="one", read_ahead_sites="btr", **_MARIADB_SPEC13)

#: Every record, by :attr:`ServerVersion.key`, oldest first.
RECORDS: dict[str, ServerVersion] = {r.key: r for r in (
    _MYSQL55, _MYSQL56, _MYSQL57, _MYSQL80, _MYSQL84, _MARIADB105, _MARIADB1011, _MARIADB114)}
#: The values :attr:`bufsim.PoolConfig.version` accepts.
VERSIONS = tuple(RECORDS)
#: preset name -> version key (the one registry of presets).
PRESET_VERSIONS = {r.preset: r.key for r in RECORDS.values()}
#: The presets whose versions' mutex rules the contention model has
#: (:attr:`ServerVersion.contention_modelled`).
CONTENTION_PRESETS = tuple(r.preset for r in RECORDS.values() if r.contention_modelled)


def record(version: str) -> ServerVersion:
    """The record of a version key (``"5.6"``, ``"mariadb10.11"``)."""
    if version not in RECORDS:
        raise ValueError(f"version={version!r} is unknown; allowed: {', '.join(VERSIONS)}")
    return RECORDS[version]


def by_preset(name: str) -> ServerVersion:
    """The record a preset (``"mysql56"``) is built from."""
    if name not in PRESET_VERSIONS:
        raise ValueError(f"preset={name!r} is unknown; allowed: {', '.join(PRESET_VERSIONS)}")
    return RECORDS[PRESET_VERSIONS[name]]


def from_server_string(text: str) -> ServerVersion | None:
    """The record of a server's ``SELECT VERSION()`` (``'10.11.19-MariaDB-0+deb12u1'``,
    ``'8.0.36'``) or of a label such as ``'5.5.30'``: the record of the same major and
    minor version, or None if bufsim has none.

    >>> from_server_string("10.11.19-MariaDB-0+deb12u1").key
    'mariadb10.11'
    >>> from_server_string("5.6.10").preset
    'mysql56'
    """
    t = str(text).strip()
    mariadb = "mariadb" in t.lower()
    parts = t.split("-")[0].split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    key = f"{int(parts[0])}.{int(parts[1])}"
    if mariadb:
        key = "mariadb" + key
    return RECORDS.get(key)


def is_mariadb(text: str) -> bool:
    """Whether a ``SELECT VERSION()`` string is a MariaDB server's."""
    return "mariadb" in str(text).lower()


def default_instances(version: str, pool_pages: int, *, vcpus: int | None = None) -> int:
    """:meth:`ServerVersion.default_instances` of a version key."""
    return record(version).default_instances(pool_pages, vcpus)
