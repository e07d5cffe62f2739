"""Configuration of a replay: the buffer pool, the cost model and the I/O device.

Every configuration is a frozen dataclass validated on construction; an invalid
field raises a :class:`ValueError` that names the field, the value and the allowed
range, before any replay starts.  Presets carry the version defaults of
``docs/semantics.md`` §9 and accept keyword overrides::

    cfg = mysql56(pool_pages=262_144, old_blocks_time_ms=0)
    cfg = cfg.replace(instances=8)

Units: times are integer nanoseconds (``*_ns``) except ``old_blocks_time_ms``,
which is in milliseconds like ``innodb_old_blocks_time``.  Sizes are 16 KiB pages.
"""
from __future__ import annotations

import dataclasses
import decimal
from dataclasses import dataclass, field

from ._units import MAX_INSTANCES, PAGE_SIZE, old_ratio
from ._validation import check_bool, check_int
from .versions import PRESET_VERSIONS, RECORDS, VERSIONS, ServerVersion, by_preset, record

__all__ = [
    "CostModel", "DeviceModel", "PoolConfig", "VERSIONS", "PAGE_SIZE",
    "mysql55", "mysql56", "mysql57", "mysql80", "mysql84", "mariadb105", "mariadb1011",
    "mariadb114", "preset", "PRESETS", "pages_from_bytes",
    "POOL_SIZE_VERSIONS",
]

#: MySQL's minimum innodb_buffer_pool_size (5 MiB) in 16 KiB pages.
MIN_POOL_PAGES = 320
#: the policies, in the order of their codes in the kernels (bufsim.policies.registry
#: derives the codes and the modules from this one list)
POLICIES = ("innodb", "lru", "fifo", "clock", "two_q", "arc")
#: values of DeviceModel.scheduler and DeviceModel.skip_pricing (bufsim.policies.device)
SCHEDULERS = ("fifo", "deadline", "cfq")
SKIP_PRICINGS = ("adjacent", "distance")
#: values of PoolConfig.cleaner_activity
CLEANER_ACTIVITY = ("get", "statement")
_U32 = 2**32 - 1


def _set_int(obj, attr: str, name: str, lo: int, hi: int | None = None) -> int:
    """Check field ``attr`` of a frozen dataclass and store it as a Python int."""
    v = check_int(name, getattr(obj, attr), lo, hi)
    object.__setattr__(obj, attr, v)
    return v


#: Versions :func:`pages_from_bytes` knows the chunk layout of
#: (:attr:`bufsim.versions.ServerVersion.pool_size_rule`).
POOL_SIZE_VERSIONS = tuple(k for k, r in RECORDS.items() if r.pool_size_rule is not None)
#: sizeof(buf_block_t) assumed for MySQL 5.5-5.7 on a 64-bit build.  Those versions
#: allocate the block descriptors *in addition* to the pool (buf_chunk_init reserves
#: them), so POOL_SIZE does not depend on the exact value, only on the 16 KiB
#: alignment of the chunk (one frame lost when mmap returns a 4 KiB-aligned address).
_MYSQL_BLOCK_BYTES = 352
# MySQL 5.7+'s innodb_buffer_pool_chunk_size default is ServerVersion.chunk_bytes.
# MariaDB 10.11 (10.11.19, MDEV-29445 layout): the pool is made of extents of
# innodb_buffer_pool_extent_size = 8 MiB (ServerVersion.extent_bytes); the first frames
# of every extent hold the block descriptors: first_page = E/ps - E/(ps +
# sizeof(buf_block_t)), 5 frames of 16 KiB per extent on the Debian 12 build
# (ServerVersion.extent_first_page; 6 MiB -> 379, 10 MiB -> 630, 20 MiB -> 1,265,
# 1 GiB -> 64,896, all measured on the live server).


_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _parse_size(nbytes: int | str, name: str = "pool size") -> int:
    """Bytes of an integer or a size string: a finite decimal number >= 0 with an
    optional unit K, M, G or T (powers of 1024), rounded down to whole bytes."""
    if isinstance(nbytes, str):
        s = nbytes.strip().upper()
        mult = _UNITS.get(s[-1:], 1)
        num = s[:-1] if s[-1:] in _UNITS else s
        try:
            d = decimal.Decimal(num.strip())
        except decimal.InvalidOperation:
            d = None
        if d is None or not d.is_finite() or d < 0:
            raise ValueError(f"{name}={nbytes!r} is not a size; allowed: a finite number >= 0 "
                             "of bytes with an optional unit K, M, G or T, like '128M' or "
                             "'1.5G'") from None
        nbytes = int(d * mult)
    return check_int(f"{name} (bytes, or a size like '128M')", nbytes, 0)


def _mysql_chunk_frames(chunk_bytes: int, misaligned: bool = True) -> int:
    """Frames of one chunk as buf_chunk_init computes them (MySQL 5.5-5.7).

    The chunk is ``chunk_bytes`` plus the descriptors rounded up to whole pages;
    the first frame is the first 16 KiB boundary (one page lost if the allocation
    is not 16 KiB-aligned), and frames are given back while the descriptor array
    would overlap them.
    """
    n = chunk_bytes // PAGE_SIZE
    mem = chunk_bytes // PAGE_SIZE * PAGE_SIZE
    mem += -(-(n * _MYSQL_BLOCK_BYTES) // PAGE_SIZE) * PAGE_SIZE
    offset = 4096 if misaligned else 0          # first frame, bytes after the descriptors' start
    size = mem // PAGE_SIZE - (1 if misaligned else 0)
    frame = offset
    while frame < size * _MYSQL_BLOCK_BYTES:
        frame += PAGE_SIZE
        size -= 1
    return size


def pages_from_bytes(nbytes: int | str, version: str | None = None, *, instances: int = 1) -> int:
    """Pages of 16 KiB in a buffer pool of ``nbytes`` (bytes, or ``'128M'``, ``'4G'``).

    Parameters
    ----------
    nbytes : int or str
        innodb_buffer_pool_size: bytes as an integer, or a string of a finite
        number >= 0 with an optional unit K, M, G or T (powers of 1024; without a
        unit the string is bytes too, as the server's option is).
    version : str, optional
        None (default): ``nbytes // 16384``, the nominal page count.  Otherwise the
        server's POOL_SIZE, the frames left once the block descriptors have taken
        their part of each chunk, computed from the version's chunk layout:

        * ``'5.5'``, ``'5.6'``: one chunk per instance (``nbytes / instances``),
          descriptors reserved on top of it; the chunk is mmap'ed (4 KiB-aligned), so
          one frame is lost to 16 KiB alignment: 128 MiB -> 8,191.
        * ``'5.7'``, ``'8.0'``, ``'8.4'``: chunks of innodb_buffer_pool_chunk_size
          (128 MiB) per instance, each as above: 1 GiB -> 8 x 8,191 = 65,528.
        * ``'mariadb10.11'``, ``'mariadb11.4'``: extents of 8 MiB whose first 5 frames
          hold the descriptors, a partial last extent losing 5 as well
          (``buf_pool_t::get_n_blocks``): 6 MiB -> 379, 10 MiB -> 630, 20 MiB -> 1,265.

        The rule is the version record's
        :attr:`~bufsim.versions.ServerVersion.pool_size_rule`.
    instances : int
        innodb_buffer_pool_instances (MySQL only; the size is split evenly).

    Returns
    -------
    int

    References
    ----------
    ``buf_chunk_init`` in ``buf/buf0buf.cc`` (MySQL 5.5-5.7);
    ``buf_pool_t::get_n_blocks`` and ``first_page_in_extent`` in MariaDB 10.11's
    ``buf/buf0buf.cc``; ``docs/semantics.md`` §13.
    """
    nbytes = _parse_size(nbytes)
    if version is None:
        return nbytes // PAGE_SIZE
    if version not in POOL_SIZE_VERSIONS:
        raise ValueError(f"version={version!r} is unknown to pages_from_bytes; allowed: None, "
                         + ", ".join(POOL_SIZE_VERSIONS))
    check_int("instances", instances, 1, MAX_INSTANCES)
    rec = record(version)
    if rec.single_pool:
        if instances != 1:
            raise ValueError(f"instances={instances} is out of range for {rec.server}; allowed: 1")
    if rec.pool_size_rule == "extents":
        per = rec.extent_bytes // PAGE_SIZE
        first = rec.extent_first_page
        full, rest = divmod(nbytes // PAGE_SIZE, per)
        return full * (per - first) + max(0, rest - first)
    per_instance = nbytes // instances
    if rec.pool_size_rule == "instance_chunk":
        return instances * _mysql_chunk_frames(per_instance)
    n_chunks, rest = divmod(per_instance, rec.chunk_bytes)
    frames = n_chunks * _mysql_chunk_frames(rec.chunk_bytes)
    if rest:
        frames += _mysql_chunk_frames(rest)
    return instances * frames


@dataclass(frozen=True)
class CostModel:
    """CPU costs the replay adds to the per-get CPU time carried by the trace.

    The defaults are order-of-magnitude estimates, not measurements of InnoDB;
    notebooks fit them to the documents and say which numbers were fitted.

    Parameters
    ----------
    clock_read_ns
        One clock read (``ut_time_ms``: ``gettimeofday``, about 15-25 ns through the
        vDSO) charged on every old-blocks time check, i.e. each access to an old
        page while ``old_blocks_time_ms > 0`` once the instance has started
        evicting (spec §8).  It is also charged when a first access stamps the
        access time.
    make_young_ns
        Taking the instance mutex and moving a page to the LRU head.
    miss_cpu_ns
        CPU of a synchronous miss apart from the I/O: a free block, LRU and
        page-hash insertion, issuing the read and completing it.
    evict_ns
        A user thread's LRU tail scan freeing one page.
    """

    clock_read_ns: int = 25
    make_young_ns: int = 150
    miss_cpu_ns: int = 5_000
    evict_ns: int = 300

    def __post_init__(self):
        for f in dataclasses.fields(self):
            _set_int(self, f.name, f"cost.{f.name}", 0, 10**12)


@dataclass(frozen=True)
class DeviceModel:
    """One I/O device (one disk head) shared by every stream, with an I/O scheduler.

    A read is *sequential* when it is for the page after the one the head read
    before, in the same tablespace (no seek), otherwise *random*.  Requests are
    served one at a time; which request a new one waits for is the scheduler's
    choice (:mod:`bufsim.policies.device` has the rules and the approximation the
    issue-time completion of the engine needs).

    Parameters
    ----------
    name
        Label used in results.
    random_read_ns
        Service time of a random 16 KiB read (seek + rotation + transfer).
    seq_read_ns
        Service time of a sequential 16 KiB read (transfer only).
    write_ns
        Service time of a 16 KiB page write.
    scheduler
        ``'fifo'`` (default): one queue in issue order.  ``'deadline'``: Linux's
        deadline elevator (block order, reads expire after ``read_expire_ns``).
        ``'cfq'``: Linux CFQ (per-stream queues, time slices of ``slice_sync_ns``,
        idling up to ``slice_idle_ns`` for a stream that is not seeky).
    skip_pricing
        ``'adjacent'`` (default): only the next page is sequential, any other read
        random.  ``'distance'``: a forward read ``d`` pages on in the same tablespace
        costs ``min(random_read_ns, d * seq_read_ns)`` (the skipped pages rotate
        past the head; no seek).
    slice_sync_ns
        CFQ's ``slice_sync``: ``cfq_slice_sync = HZ / 10`` = 100 ms
        (``block/cfq-iosched.c``, Linux 2.6.33-3.x).
    slice_idle_ns
        CFQ's ``slice_idle``: ``cfq_slice_idle = HZ / 125`` = 8 ms (same file).
    read_expire_ns
        deadline's ``read_expire``: ``HZ / 2`` = 500 ms (``block/deadline-iosched.c``).
    """

    name: str = "hdd7200"
    random_read_ns: int = 12_780_000
    seq_read_ns: int = 110_000
    write_ns: int = 12_780_000
    scheduler: str = "fifo"
    skip_pricing: str = "adjacent"
    slice_sync_ns: int = 100_000_000
    slice_idle_ns: int = 8_000_000
    read_expire_ns: int = 500_000_000

    def __post_init__(self):
        for f in ("random_read_ns", "seq_read_ns", "write_ns"):
            _set_int(self, f, f"device.{f}", 0, 10**12)
        for f in ("slice_sync_ns", "slice_idle_ns", "read_expire_ns"):
            _set_int(self, f, f"device.{f}", 1 if f != "slice_idle_ns" else 0, 10**12)
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"device.scheduler={self.scheduler!r} is unknown; allowed: "
                             + ", ".join(SCHEDULERS))
        if self.skip_pricing not in SKIP_PRICINGS:
            raise ValueError(f"device.skip_pricing={self.skip_pricing!r} is unknown; allowed: "
                             + ", ".join(SKIP_PRICINGS))

    def replace(self, **changes) -> "DeviceModel":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def hdd7200(cls) -> "DeviceModel":
        """A 7200 rpm disk: 8.5 ms average seek + 4.17 ms half rotation +
        0.11 ms to transfer 16 KiB at about 150 MB/s."""
        return cls("hdd7200", 12_780_000, 110_000, 12_780_000)

    @classmethod
    def ssd(cls) -> "DeviceModel":
        """A SATA SSD: about 100 us per random read, 16 KiB at 500 MB/s sequential."""
        return cls("ssd", 100_000, 33_000, 60_000)

    @classmethod
    def fs_cache(cls) -> "DeviceModel":
        """Reads served by a warm file-system cache (no O_DIRECT): a pread
        system call and a 16 KiB copy, about 10 us either way."""
        return cls("fs_cache", 10_000, 10_000, 10_000)

    @classmethod
    def instant(cls) -> "DeviceModel":
        """A device that takes no time: the replay measures CPU only."""
        return cls("instant", 0, 0, 0)


DEVICES = {"hdd7200": DeviceModel.hdd7200, "ssd": DeviceModel.ssd,
           "fs_cache": DeviceModel.fs_cache, "instant": DeviceModel.instant}


@dataclass(frozen=True)
class PoolConfig:
    """A buffer pool: its policy, size, InnoDB settings, cost and device model.

    Parameters
    ----------
    policy
        ``'innodb'`` (the faithful midpoint LRU) or a comparison policy:
        ``'lru'``, ``'fifo'``, ``'clock'``, ``'two_q'``, ``'arc'``.  The InnoDB
        settings below apply to ``'innodb'`` only; every policy runs under the
        same clock, cost and device model.
    version
        ``'5.5'``, ``'5.6'``, ``'5.7'``, ``'8.0'``, ``'8.4'``, ``'mariadb10.5'``,
        ``'mariadb10.11'`` or ``'mariadb11.4'`` (the keys of
        :data:`bufsim.versions.RECORDS`, whose record, :attr:`server`, holds every
        rule that differs): decides how free blocks are found (5.5: each reader evicts its own victim;
        later: the page cleaner refills the free list once per second; 10.11 also
        at once whenever a block is taken below lru_scan_depth / 2), the read-ahead
        target and failure count (10.11: the next page-number area), what
        ``read_ahead_threshold=0`` means (5.5: most aggressive; later: off) and
        the user-thread scan depth.
    pool_pages
        innodb_buffer_pool_size in 16 KiB pages, split evenly over the instances.
        At least 320 (MySQL's 5 MiB minimum) for ``'innodb'``, at least 1 otherwise.
        The presets (:func:`mysql56`...) also take bytes as a string with a unit,
        ``'128M'``, ``'4G'`` (:func:`pages_from_bytes`); a string without a unit
        (``'8192'``) is refused rather than guessed to be pages or bytes.
    instances
        innodb_buffer_pool_instances, 1..64.  A page belongs to instance
        ``fold(space, page_no >> 6) mod instances``.  The presets follow the
        version defaults; an explicit value is used as given (the server's rule
        that forces 1 below 1 GiB is applied by the presets only).
    old_blocks_pct
        innodb_old_blocks_pct, 5..95.
    old_blocks_time_ms
        innodb_old_blocks_time in ms, 0..2**32-1.
    read_ahead_threshold
        innodb_read_ahead_threshold, 0..64.
    lru_scan_depth
        innodb_lru_scan_depth (5.6+), 100..2**32-1: the page cleaner's free-list
        target and scan quota per instance and second.
    adaptive_hash_index
        Whether events flagged as adaptive-hash-index hits take that path
        (2 page gets and 2 make-young checks per hit, no read-ahead).
    misc_pages
        Blocks per instance that hold no data pages (AHI and lock heaps).
    cleaner_activity
        What makes the 5.6+ page cleaner's next once-a-second pass run its LRU
        batch (``buf_flush_LRU_tail`` runs only when ``srv_check_activity`` sees
        the server activity count move).  ``'get'`` (default, the behaviour
        before this field existed): any page get.  ``'statement'``: only events
        flagged :data:`bufsim.FLAG_STMT_END` (a statement ended) or
        :data:`bufsim.FLAG_MODIFY`, as in InnoDB, where page gets do not move the
        count; during one long read-only SELECT the cleaner stays idle and user
        threads evict their own victims.
    io_capacity
        innodb_io_capacity, 100..2**32-1 (default 200, minimum 100: ``ha_innodb.cc``
        of 5.5 and 5.6): ``PCT_IO(p)`` = io_capacity * p / 100 pages per flush-list
        flushing pass (:mod:`bufsim.policies.flush`).
    max_dirty_pages_pct
        innodb_max_dirty_pages_pct, 0..99 (default 75 in 5.5, 5.6 and 5.7, 90 in 8.0.3+
        and MariaDB 10.5+: ``ha_innodb.cc``; the presets set it): above this share of dirty pages the master thread (5.5)
        or the page cleaner (5.6+) flushes io_capacity pages a second.
    max_dirty_pages_pct_lwm
        innodb_max_dirty_pages_pct_lwm (5.6+), 0..max_dirty_pages_pct (default 0 in
        5.6: ``ha_innodb.cc``): non-zero starts flushing gradually above it
        (``af_get_pct_for_dirty``).  Ignored by 5.5, which has no such variable.
    cleaner_lag
        Blocks that user threads take, after one of them woke MariaDB 10.11's page
        cleaner for the LRU, before the cleaner's LRU batch runs (versions with
        ``refill_on_demand`` only), 0..2**32-1.  0 (default): the batch runs at the
        wake.  In the server the cleaner is a thread of its own: a thread that takes a
        free block leaving fewer than lru_scan_depth / 2 signals it
        (``buf_LRU_get_free_block`` -> ``page_cleaner_wakeup``) and goes on reading;
        while the cleaner is active no thread signals it again
        (``page_cleaner_active``); its batch (``buf_flush_LRU``) runs once it is
        scheduled and holds ``buf_pool.mutex``.  How many blocks are taken meanwhile
        is thread timing, which the source leaves open: a value > 0 replays one such
        timing (it is not a server setting, and not fitted).
    flush_list_flushing
        Whether the flush-list flushing of :mod:`bufsim.policies.flush` runs (True; a
        switch to compare with the replay before it existed, when dirty pages were
        written only at the LRU tail).
    read_ahead_sites
        Where linear read-ahead is tried: None (default) takes the version's rule,
        :attr:`bufsim.versions.ServerVersion.read_ahead_sites` (``"btr"`` for MariaDB
        10.11 and 11.4: only a leaf reached by a forward step or a descent, by the
        trace's access kind; ``"get"`` for the others: every page's first access).
        ``"get"`` replays any version with the every-first-access rule, e.g. a MariaDB
        10.11 before 10.11.7: ``mariadb1011(read_ahead_sites="get")``.  ``"btr"`` is
        allowed only for a version whose rule it is.
    cost, device
        See :class:`CostModel` and :class:`DeviceModel`.
    """

    policy: str = "innodb"
    version: str = "5.6"
    pool_pages: int = 8192
    instances: int = 1
    old_blocks_pct: int = 37
    old_blocks_time_ms: int = 1000
    read_ahead_threshold: int = 56
    lru_scan_depth: int = 1024
    adaptive_hash_index: bool = True
    misc_pages: int = 0
    cleaner_activity: str = "get"
    io_capacity: int = 200
    max_dirty_pages_pct: int = 75
    max_dirty_pages_pct_lwm: int = 0
    flush_list_flushing: bool = True
    cleaner_lag: int = 0
    read_ahead_sites: str | None = None
    cost: CostModel = field(default_factory=CostModel)
    device: DeviceModel = field(default_factory=DeviceModel.hdd7200)

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"policy={self.policy!r} is unknown; allowed: {', '.join(POLICIES)}")
        if self.version not in VERSIONS:
            raise ValueError(f"version={self.version!r} is unknown; allowed: {', '.join(VERSIONS)}")
        _set_int(self, "instances", "instances", 1, MAX_INSTANCES)
        lo = MIN_POOL_PAGES if self.policy == "innodb" else self.instances
        _set_int(self, "pool_pages", "pool_pages", lo, 2**40)
        _set_int(self, "old_blocks_pct", "old_blocks_pct", 5, 95)
        _set_int(self, "old_blocks_time_ms", "old_blocks_time_ms", 0, _U32)
        _set_int(self, "read_ahead_threshold", "read_ahead_threshold", 0, 64)
        _set_int(self, "lru_scan_depth", "lru_scan_depth", 100, _U32)
        per = self.pool_pages // self.instances
        _set_int(self, "misc_pages", "misc_pages", 0, max(0, per - 64))
        if self.cleaner_activity not in CLEANER_ACTIVITY:
            raise ValueError(f"cleaner_activity={self.cleaner_activity!r} is unknown; "
                             f"allowed: {', '.join(CLEANER_ACTIVITY)}")
        object.__setattr__(self, "adaptive_hash_index",
                           check_bool("adaptive_hash_index", self.adaptive_hash_index))
        _set_int(self, "io_capacity", "io_capacity", 100, _U32)
        _set_int(self, "max_dirty_pages_pct", "max_dirty_pages_pct", 0, 99)
        _set_int(self, "max_dirty_pages_pct_lwm", "max_dirty_pages_pct_lwm", 0,
                 self.max_dirty_pages_pct)
        object.__setattr__(self, "flush_list_flushing",
                           check_bool("flush_list_flushing", self.flush_list_flushing))
        _set_int(self, "cleaner_lag", "cleaner_lag", 0, _U32)
        if self.read_ahead_sites is not None:
            own = record(self.version).read_ahead_sites
            allowed = ("get", "btr") if own == "btr" else ("get",)
            if self.read_ahead_sites not in allowed:
                raise ValueError(
                    f"read_ahead_sites={self.read_ahead_sites!r} is out of range for "
                    f"{record(self.version).server}; allowed: None (the version's "
                    f"{own!r}), " + ", ".join(repr(a) for a in allowed))
        if not isinstance(self.cost, CostModel):
            raise ValueError(f"cost must be a CostModel, got {type(self.cost).__name__}")
        if isinstance(self.device, str):
            if self.device not in DEVICES:
                raise ValueError(f"device={self.device!r} is unknown; allowed: {', '.join(DEVICES)}")
            object.__setattr__(self, "device", DEVICES[self.device]())
        if not isinstance(self.device, DeviceModel):
            raise ValueError(f"device must be a DeviceModel or a preset name, got {type(self.device).__name__}")

    def replace(self, **changes) -> "PoolConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # ---- derived values, as InnoDB computes them -------------------------------------
    @property
    def instance_pages(self) -> int:
        """curr_size of each instance."""
        return self.pool_pages // self.instances

    @property
    def old_ratio(self) -> int:
        """LRU_old_ratio: pct * 1024 / 100 clamped to [51, 1024] (buf_LRU_old_ratio_update_instance)."""
        return old_ratio(self.old_blocks_pct)

    @property
    def young_window(self) -> int:
        """W of buf_page_peek_if_young: curr_size * (1024 - ratio) / 4096."""
        return self.instance_pages * (1024 - self.old_ratio) // 4096

    @property
    def read_ahead_area(self) -> int:
        """BUF_READ_AHEAD_AREA: min(64, smallest power of two >= curr_size / 32)."""
        x = self.instance_pages // 32
        p = 1
        while p < x:
            p *= 2
        return min(64, p)

    @property
    def server(self) -> ServerVersion:
        """The record of :attr:`version`: every rule of the server that differs
        (:mod:`bufsim.versions`)."""
        return record(self.version)

    @property
    def ra_sites(self) -> str:
        """Where linear read-ahead is tried: :attr:`read_ahead_sites`, or the version's
        rule when that is None."""
        return self.read_ahead_sites or self.server.read_ahead_sites

    @property
    def page_cleaner(self) -> bool:
        """Whether a background page cleaner keeps the free list filled (5.6+)."""
        return self.server.page_cleaner

    @property
    def data_pages(self) -> int:
        """Blocks of each instance that can hold data pages: curr_size less the blocks
        taken by the adaptive hash index and lock heaps (``instance_pages - misc_pages``)."""
        return self.instance_pages - self.misc_pages

    def describe(self) -> dict:
        """The effective values, derived ones included (like libCacheSim's ``print``)."""
        d = dataclasses.asdict(self)
        d.update(instance_pages=self.instance_pages, old_ratio=self.old_ratio,
                 young_window=self.young_window, read_ahead_area=self.read_ahead_area,
                 page_cleaner=self.page_cleaner)
        d["read_ahead_sites"] = self.ra_sites
        return d


def _make(rec: ServerVersion, overrides: dict, vcpus: int | None = None) -> PoolConfig:
    """A preset: the record's defaults, then the overrides; innodb_buffer_pool_instances
    by the record's rule unless given (``vcpus``: MySQL 8.4's rule only)."""
    unknown = set(overrides) - {f.name for f in dataclasses.fields(PoolConfig)}
    if unknown:
        raise ValueError(f"unknown configuration field(s) {sorted(unknown)}; allowed: "
                         + ", ".join(f.name for f in dataclasses.fields(PoolConfig)))
    args = rec.preset_defaults()
    args.update(overrides)
    if isinstance(args.get("pool_pages"), str):
        v = args["pool_pages"]
        if v.strip()[-1:].upper() not in _UNITS:
            eg = f"pool_pages={v.strip()}" if v.strip().isdigit() else "pool_pages=8192"
            raise ValueError(f"pool_pages={v!r} is a string without a unit; allowed: pages as "
                             f"an integer ({eg}), or bytes as a string with a unit K, M, G "
                             "or T ('128M', '4G')")
        args["pool_pages"] = pages_from_bytes(_parse_size(v, "pool_pages"))
    if "instances" not in overrides:
        args["instances"] = rec.default_instances(args.get("pool_pages", 8192), vcpus)
    return PoolConfig(**args)


def mysql55(**overrides) -> PoolConfig:
    """MySQL 5.5 defaults: old_blocks_time 0, no page cleaner, one instance,
    read_ahead_threshold 0 means most aggressive."""
    return _make(by_preset("mysql55"), overrides)


def mysql56(**overrides) -> PoolConfig:
    """MySQL 5.6 defaults: old_blocks_time 1000, lru_scan_depth 1024, 8 instances
    from 1 GiB up (1 below)."""
    return _make(by_preset("mysql56"), overrides)


def mysql57(**overrides) -> PoolConfig:
    """MySQL 5.7 defaults: as 5.6; the user-thread scan looks at 100 tail pages first."""
    return _make(by_preset("mysql57"), overrides)


def mysql80(**overrides) -> PoolConfig:
    """MySQL 8.0 defaults: 5.7's buffer-pool rules with innodb_max_dirty_pages_pct 90 and
    innodb_max_dirty_pages_pct_lwm 10 (8.0.3); innodb_flush_neighbors 0 is recorded in
    :attr:`PoolConfig.server` (a replay writes one page at a time anyway)."""
    return _make(by_preset("mysql80"), overrides)


def mysql84(*, vcpus: int | None = None, **overrides) -> PoolConfig:
    """MySQL 8.4 LTS defaults: as 8.0 with the adaptive hash index off,
    innodb_io_capacity 10000, and innodb_buffer_pool_instances 1 below 1 GiB, else
    ``clamp(min(size / 256 MiB, vcpus / 4), 1, 64)``; ``vcpus`` (the server's logical
    processors) defaults to :data:`bufsim.versions.DEFAULT_VCPUS` (16)."""
    return _make(by_preset("mysql84"), overrides, vcpus)


def mariadb105(**overrides) -> PoolConfig:
    """MariaDB 10.5 defaults: one pool, lru_scan_depth 1536, adaptive hash index off."""
    return _make(by_preset("mariadb105"), overrides)


def mariadb1011(**overrides) -> PoolConfig:
    """MariaDB 10.11 defaults (one pool, lru_scan_depth 1536, adaptive hash index off)
    with the mechanisms of ``docs/semantics.md`` §13 that 10.5's
    preset lacks: a thread that takes a free block leaving fewer than lru_scan_depth / 2
    has the cleaner refill the free list to lru_scan_depth from the LRU tail at once
    (down to 256 LRU pages), pages that hold no data are freed after a read-ahead,
    linear read-ahead reads the area of the next page number, and its failure count
    aborts one failure earlier; linear read-ahead is tried at the B-tree's sites only
    (10.11.7+, MDEV-32068: ``read_ahead_sites="btr"``; ``"get"`` for 10.11.6 and
    before).  Size the pool with
    ``pages_from_bytes(size, version="mariadb10.11")``."""
    return _make(by_preset("mariadb1011"), overrides)


def mariadb114(**overrides) -> PoolConfig:
    """MariaDB 11.4 LTS defaults: 10.11's buffer pool (every §13 mechanism) with the
    server's innodb_max_dirty_pages_pct 90.  Not checked against a live 11.4 server
    (only 10.11 runs here).  Size the pool with ``pages_from_bytes(size,
    version="mariadb11.4")``."""
    return _make(by_preset("mariadb114"), overrides)


_PRESET_FUNCTIONS = {f.__name__: f for f in (mysql55, mysql56, mysql57, mysql80, mysql84,
                                              mariadb105, mariadb1011, mariadb114)}
#: The one registry of presets: name -> function, in the order of
#: :data:`bufsim.versions.RECORDS` (CLI choices, sweeps, advice and notebooks read it).
PRESETS = {name: _PRESET_FUNCTIONS[name] for name in PRESET_VERSIONS}


def preset(name: str, **overrides) -> PoolConfig:
    """A preset by name (``'mysql55'``, ``'mysql56'``, ``'mysql57'``, ``'mysql80'``,
    ``'mysql84'``, ``'mariadb105'``, ``'mariadb1011'``, ``'mariadb114'``: the keys of
    :data:`PRESETS`)."""
    if name not in PRESETS:
        raise ValueError(f"preset={name!r} is unknown; allowed: {', '.join(PRESETS)}")
    return PRESETS[name](**overrides)
