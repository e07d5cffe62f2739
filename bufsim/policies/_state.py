"""Array state shared by every policy kernel, and the list primitives over it.

All replay state lives in a handful of NumPy arrays so that the jitted kernels see
no Python objects:

``pst[field][frame]``  mutable per-frame state (:class:`FrameState`, one array per
                       field ``P_*``, each of its own width): one entry per buffer
                       frame (``buf_block_t``), plus ghost entries for 2Q/ARC
``stat[page, field]``  static facts of each distinct page met (columns ``S_*``),
                       read on the miss and read-ahead paths only; with dense keys
                       (see "page ids" below) only the instance, or nothing
``fmap[page]``         the page's frame or -1 (InnoDB's ``page_hash``)
``ist[inst, field]``   per-instance state: up to four array-linked lists, the
                       InnoDB old-sublist pointer, free blocks, freed_page_clock...
``cnt[inst, field]``   per-instance counters (``C_*``), named after
                       INFORMATION_SCHEMA.INNODB_BUFFER_POOL_STATS
``sst[stream, field]`` per-stream clock and counts (``T_*``)
``glob[field]``        device queue, page-cleaner tick, the buffer-fixed frame,
                       the free-frame stack top, the number of distinct pages met
``cfg[field]``         the configuration as integers (``K_*``)

Every kernel is compiled with ``_nrt=False``: it allocates nothing, and without
numba's reference counting of array arguments a replay runs about 4x faster.

The per-frame state is field-major (one contiguous array per field, sized by the
pool) and narrow: links and page ids ``int32``, flags ``uint8``, only the times
``int64`` (:data:`P_DTYPES`).  A list operation touches the link arrays only, whose
working set is 8 bytes per frame, whatever the number of pages the trace names.

The list primitives take an *entry* id: a frame in the engine, a page number in
the policy twin tests (which give every page an entry).  An entry is in at most
one list at a time; ``pst[P_WHERE][e]`` names it (0: none).  Lists 1 and 2 hold
resident pages, lists 3 and 4 are ghost lists (2Q, ARC).
"""
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

# the clocks' units and buf_pool_get's fold, written once in bufsim._units
from .._units import NS_PER_MS, NS_PER_S, fold_instance  # noqa: F401 (re-exported to the kernels)

#: how many events ahead the fast loops prefetch a page's frame-map entry
PREFETCH_AHEAD = 16


def prefetch(a, i):
    """``prefetch(a, i)``: a hint that ``a[i]`` will be read soon (``llvm.prefetch``, read,
    keep in all cache levels); no effect on any value, and nothing at all in plain Python
    (``py_func``, ``NUMBA_DISABLE_JIT``).  The fast loops issue it for the frame-map entry
    of the event PREFETCH_AHEAD ahead, so that its cache miss overlaps the gets before it
    (the map is 4 bytes per page: larger than the caches for a trace over millions of
    pages).  ``i`` must be an index into ``a``."""


@intrinsic
def _prefetch(typingctx, arr, idx):
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # (address, rw = read, locality = 3: keep, cache type = data)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return sig, codegen


@overload(prefetch)
def _prefetch_jit(a, i):
    def impl(a, i):
        _prefetch(a, i)
    return impl


@njit(_nrt=False, cache=True, inline="always")
def ix(i):
    """``a[ix(i)]`` is ``a[i]`` for an index ``i >= 0``, typed unsigned so that numba
    leaves out its negative-index fix-up (``i + (i >> 63 & len)``: three instructions and
    a load of the length per access).  In a pointer-chasing loop that fix-up lengthens
    every iteration and so shortens how many gets' cache misses the CPU overlaps: with
    it gone the LRU fast path's hits ran 1.3-1.4x faster, and InnoDB's fast loop
    1.15-1.35x (paired, 2026-11-27).  Only for indices that cannot be negative (frames
    that exist, pages of the trace); -1 sentinels must be tested first."""
    return np.uint64(i)


# ---- per-page mutable state ------------------------------------------------------------
# P_DIRTY is the page's oldest_modification (buf_page_t): 0 clean, otherwise the LSN
# (``glob[G_LSN]``) of the modification that first dirtied it since its last write
P_PREV, P_NEXT, P_WHERE, P_OLD, P_ACCESS, P_STAMP, P_READY, P_DIRTY, P_REF, P_PAGE = range(10)
#: P_DIRTY of a temporary-tablespace page modified under MariaDB 10.11 (its
#: oldest_modification 2: dirty, no LSN, not in the flush list; FLAG_TEMP), and of such
#: a page an LRU batch has written, freed when the batch ends (its write completed)
TEMP_DIRTY, TEMP_WRITTEN = -1, -2
# the flush-list links (buf_page_t::list while in buf_pool->flush_list): a dirty page is
# in the LRU *and* in its instance's flush list, so it has links of its own (-1: none)
P_FPREV, P_FNEXT = range(10, 12)
N_P = 12
#: the width of each field: frame links and local page ids fit int32 (a pool or a
#: replay's distinct pages stay below 2**31), list ids and bits uint8, the 31-bit
#: freed_page_clock stamp int32; the access time (ms), read completion (ns) and
#: oldest modification (an LSN) int64
P_DTYPES = (np.int32, np.int32, np.uint8, np.uint8, np.int64, np.int32, np.int64, np.int64,
            np.uint8, np.int32, np.int32, np.int32)
#: the per-frame state as the kernels receive it: one array per field, in ``P_*`` order
FrameState = namedtuple("FrameState",
                        "prev next where old access stamp ready dirty ref page fprev fnext")
# ---- per-page static facts (one row per distinct page the replay has met) -------------
S_INST, S_DENSE, S_SPACE, S_PAGENO, S_PREVLEAF, S_NEXTLEAF = range(6)
N_S = 6
# ---- per-instance state: list l in 1..4 uses columns 3(l-1) .. 3(l-1)+2 -----------------
# (head frame, tail frame, length); InnoDB and lru use list 1, the other policies 1..4
(L1_HEAD, L1_TAIL, L1_LEN, L2_HEAD, L2_TAIL, L2_LEN,
 L3_HEAD, L3_TAIL, L3_LEN, L4_HEAD, L4_TAIL, L4_LEN) = range(12)
I_OLD, I_OLDLEN, I_FREE, I_CLOCK, I_SIZE, I_CAP, I_W, I_AREA, I_P, I_K1, I_K2, I_DROP = range(12, 24)
# the flush list (buf_pool->flush_list): head (newest oldest_modification), tail (the
# oldest, flushed first), length (MODIFIED_DATABASE_PAGES); linked through P_FPREV/P_FNEXT
LF_HEAD, LF_TAIL, LF_LEN = range(24, 27)
N_I = 27
# ---- per-instance counters -------------------------------------------------------------
(C_GETS, C_READ, C_RA, C_RA_EVICTED, C_YOUNG, C_NOT_YOUNG, C_WRITTEN, C_READS,
 C_EVICT, C_WAIT_FREE, C_WRITE_REQ, C_AHI) = range(12)
# flush-list insertions (a clean page's first modification: buf_flush_insert_into_flush_list,
# one flush_list_mutex acquisition each) and pages written by flush-list batches
# (buf_flush_list; NUMBER_PAGES_WRITTEN counts them too)
C_DIRTIED, C_FLUSH_LIST = range(12, 14)
N_C = 14
COUNTER_NAMES = (
    "NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "NUMBER_PAGES_READ_AHEAD",
    "NUMBER_READ_AHEAD_EVICTED", "PAGES_MADE_YOUNG", "PAGES_NOT_MADE_YOUNG",
    "NUMBER_PAGES_WRITTEN", "Innodb_buffer_pool_reads", "evictions",
    "Innodb_buffer_pool_wait_free", "Innodb_buffer_pool_write_requests", "ahi_hits",
    "flush_list_inserts", "flush_list_flushed",
)
# ---- per-stream state ------------------------------------------------------------------
T_CLOCK, T_CPU, T_IOWAIT, T_GETS, T_MISSES, T_EVENTS, T_POS, T_END = range(8)
# the device scheduler's per-stream state (bufsim.policies.device): the stream's last
# page read + 1 (0: none yet) and its seek history (one bit per read, newest lowest)
T_DEVLAST, T_SEEKS = range(8, 10)
# pages linear read-ahead brought in on behalf of the stream (its get triggered the area)
T_RA = 10
# the B-tree read-ahead rule (K_RA_BTR): the dense page index of the stream's previous get
# + 1 if that
# get was the page's first access (its access time was 0), else 0; a FLAG_DESCENT get
# reads it as "the level-1 parent was accessed for the first time"
# (btr_cur_t::search_leaf, btr/btr0cur.cc:1346,1691 of MariaDB 10.11.18)
T_PREV_FIRST = 11
N_T = 12
# ---- global state ----------------------------------------------------------------------
G_DEVFREE, G_DEVLAST, G_NEXT_TICK, G_ACTIVE, G_FIXED, G_DEVBUSY, G_TICKS, G_FTOP, G_NLOCAL, \
    G_MID, G_LEFT, G_AREA = range(12)
# the device scheduler (bufsim.policies.device), all 0 at the start: the stream that holds
# the device + 1 (0: none), the end of its last read, its last page + 1, the start of the
# window reserved for other streams (0: none), the end of the holder's CFQ time slice, the
# time since which the holder's queue has not run empty (deadline), and the stream of the
# last reserved read + 1
G_DEV_OWNER, G_DEV_OFREE, G_DEV_OLAST, G_DEV_RSTART, G_DEV_SLICE, G_DEV_BUSYSINCE, \
    G_DEV_ROWNER = range(12, 19)
# flushing (bufsim.policies.flush): the LSN (log_sys->lsn, counted in page modifications:
# +1 per modifying get), the flushing passes run so far (5.5's master thread: every tenth
# is its 10-second loop), the pages read + written at the last 10-second loop (its I/O
# activity test) and the LSN at the previous 5.6+ page-cleaner pass
G_LSN, G_FLUSH_PASSES, G_FLUSH_IOS, G_FLUSH_LSN = range(19, 23)
# MariaDB 10.11's page cleaner woken for the LRU (buf_LRU_get_free_block ->
# page_cleaner_wakeup) under PoolConfig(cleaner_lag=n > 0): the blocks user threads may
# still take before its LRU batch runs (0: no wake pending; the batch runs when the
# count reaches 0 again; bufsim.policies.innodb.free.get_free_block)
G_CLEANER_PEND = 23
N_G = 24
# ---- event flags (a trace's ``flags`` column; re-exported by bufsim.trace) ---------------
#: The get takes the adaptive-hash-index path: it counts two gets when the page is resident.
FLAG_AHI = 1
#: The get modifies (dirties) the page.
FLAG_MODIFY = 2
#: The get is an adaptive-hash-index hit taken while the caller already holds the search
#: latch (``row_sel_try_search_shortcut_for_mysql``: a unique lookup in a consistent
#: read, such as an ``eq_ref`` probe of a SELECT): one get, no access-time stamp, no
#: make-young check (spec §3.2).  A page that is not resident, or never accessed, or a
#: pool without the adaptive hash index, takes the normal path instead.
FLAG_SHORTCUT = 4
#: The event is the last of a statement: the server's activity count moves when it
#: ends (``innobase_commit`` -> ``srv_active_wake_master_thread`` ->
#: ``srv_inc_activity_count``).  Under ``PoolConfig(cleaner_activity="statement")``
#: only such events and :data:`FLAG_MODIFY` events make the 5.6+ page cleaner's
#: next pass "active" (``srv_check_activity``), as in InnoDB, where page gets do not
#: move the count; under the default ``"get"`` every get does and this bit is inert.
FLAG_STMT_END = 8
#: The get is a cursor re-latch of a remembered position (``btr_pcur_restore_position``
#: -> ``buf_page_optimistic_get`` on a page the cursor already counted): "checked,
#: not counted".  It goes through everything a get does (the access-time stamp, the
#: make-young check, a read if the page is gone) but is not counted in
#: NUMBER_PAGES_GET, nor in the stream's gets.
FLAG_RELATCH = 16
#: With FLAG_MODIFY: the page is one of the temporary tablespace's.  Under MariaDB 10.11
#: such a modification writes no redo and leaves the page out of the flush list, marked
#: by ``oldest_modification = 2`` (``mtr_t::set_modified`` -> ``set_temp_modified``):
#: only an LRU batch writes it, and the page is freed when that write completes
#: (``buf_page_write_complete``).  The other versions treat it as any modification.
FLAG_TEMP = 32
#: Access kind, a 2-bit field (bits 6-7) saying where the server's B-tree code reached the
#: page, which decides where MariaDB >= 10.6.17 / 10.11.7 / 11.x tries linear read-ahead
#: (MDEV-32068, commit f074223ae7: ``buf_page_get_low`` no longer calls
#: ``buf_read_ahead_linear``; its B-tree callers do; ``versions.read_ahead_sites == "btr"``).
#: FLAG_STEP: a leaf reached by a forward leaf step (``btr_pcur_move_to_next_page``,
#: btr/btr0pcur.cc:550 in 10.11.18): read-ahead is tried at its first access.
FLAG_STEP = 64
#: FLAG_DESCENT: a leaf reached by a root-to-leaf descent (``btr_cur_t::search_leaf`` with
#: SEARCH_LEAF / MODIFY_LEAF / SEARCH_PREV / MODIFY_PREV, not change-buffered, not
#: MODIFY_TREE; btr/btr0cur.cc:1648,1691).  The get just before it in the same stream is its
#: level-1 parent's (absent for a tree of height 0): read-ahead is tried on the leaf BEFORE
#: the leaf's get, when that parent's get was its first access.
FLAG_DESCENT = 128
#: FLAG_STEP | FLAG_DESCENT: a get that is never a read-ahead site under the B-tree rule
#: (non-leaf pages, cursor restores and re-latches, backward steps, ``btr_latch_prev``).
#: Neither bit: kind unknown (user traces, synthetic workloads), replayed with the
#: every-first-access rule.  Versions with ``read_ahead_sites == "get"`` ignore the field.
FLAG_NO_RA = FLAG_STEP | FLAG_DESCENT
#: The access-kind field's mask (same value as FLAG_NO_RA).
FLAG_KIND = FLAG_STEP | FLAG_DESCENT
#: All defined flag bits; other bits are rejected.
FLAG_MASK = (FLAG_AHI | FLAG_MODIFY | FLAG_SHORTCUT | FLAG_STMT_END | FLAG_RELATCH | FLAG_TEMP
             | FLAG_STEP | FLAG_DESCENT)
#: Flags whose event, once done, moves the server's activity count.
FLAG_ACTIVITY = FLAG_STMT_END | FLAG_MODIFY

# ---- configuration ---------------------------------------------------------------------
(K_POLICY, K_FREE_SCAN, K_OLDTIME, K_RATIO, K_RATHRESH, K_SCANDEPTH, K_AHI, K_CLEANER,
 K_COST_CLOCK, K_COST_YOUNG, K_COST_MISS, K_COST_EVICT, K_DEV_RAND, K_DEV_SEQ,
 K_DEV_WRITE, K_NINST, K_ACTIVITY) = range(17)
# the device's scheduler (SCHED_CODES), skip pricing (0 adjacent, 1 distance), CFQ's
# slice_sync and slice_idle and deadline's read_expire (ns)
K_DEV_SCHED, K_DEV_SKIP, K_DEV_SLICE, K_DEV_IDLE, K_DEV_EXPIRE = range(17, 22)
# flushing: innodb_io_capacity, innodb_max_dirty_pages_pct, innodb_max_dirty_pages_pct_lwm
# and whether the background pass flushes the flush list at all (bufsim.policies.flush)
K_IO_CAPACITY, K_MAX_DIRTY, K_DIRTY_LWM, K_FLUSH = range(22, 26)
# the server version's rules, each a field of bufsim.versions.ServerVersion (K_FREE_SCAN,
# above, is its free_scan_code): master_thread_flushing, read_ahead_zero_off,
# read_ahead_next_page_area, read_ahead_fail_early, free_unused_after_read_ahead,
# refill_on_demand, cleaner_batch_unbounded, small_pool_lru_floor, temp_pages_unlogged
(K_MASTER_FLUSH, K_RA_ZERO_OFF, K_RA_NEXT_AREA, K_RA_FAIL_EARLY, K_FREE_UNUSED,
 K_REFILL_DEMAND, K_BATCH_UNBOUNDED, K_LRU_FLOOR_SMALL, K_TEMP_UNLOGGED) = range(26, 35)
# PoolConfig.cleaner_lag: blocks taken between the wake of MariaDB 10.11's page cleaner
# for the LRU and its batch (0: the batch runs at the wake)
K_CLEANER_LAG = 35
# where linear read-ahead is tried (bufsim.versions.ServerVersion.read_ahead_sites): 0 "get",
# every first access (buf_page_get_gen); 1 "btr", the B-tree callers only (MDEV-32068),
# which read the access kind of the trace's flags (FLAG_STEP, FLAG_DESCENT)
K_RA_BTR = 36
N_K = 37
SCHED_CODES = {"fifo": 0, "deadline": 1, "cfq": 2}
SKIP_CODES = {"adjacent": 0, "distance": 1}

#: K_FREE_SCAN codes (bufsim.versions.FREE_SCAN_CODES): the first free-block scan looks
#: at 100 + LRU size / 10 blocks (5.5), lru_scan_depth (5.6), or 100 (5.7+, MariaDB)
SCAN_TENTH, SCAN_DEPTH, SCAN_THRESHOLD = 0, 1, 2

# InnoDB constants (include/buf0lru.h, buf/buf0lru.cc)
OLD_MIN_LEN = 512
OLD_TOLERANCE = 20
NON_OLD_MIN_LEN = 5
RATIO_DIV = 1024
LRU_MIN_LEN = 256          # BUF_LRU_MIN_LEN: the page cleaner stops below it
STAMP_MASK = (1 << 31) - 1  # buf_page_t::freed_page_clock is a 31-bit field


@njit(_nrt=False, cache=True, inline="always")
def list_len(ist, i, l):
    return ist[i, 3 * (l - 1) + 2]


@njit(_nrt=False, cache=True, inline="always")
def list_head(ist, i, l):
    return ist[i, 3 * (l - 1)]


@njit(_nrt=False, cache=True, inline="always")
def list_tail(ist, i, l):
    return ist[i, 3 * (l - 1) + 1]


@njit(_nrt=False, cache=True, inline="always")
def push_head(pst, ist, i, l, p):
    """Link page p at the head of list l of instance i."""
    b = 3 * (l - 1)
    h = ist[i, b]
    pst[P_PREV][p] = -1
    pst[P_NEXT][p] = h
    if h >= 0:
        pst[P_PREV][h] = p
    else:
        ist[i, b + 1] = p
    ist[i, b] = p
    ist[i, b + 2] += 1
    pst[P_WHERE][p] = l


@njit(_nrt=False, cache=True, inline="always")
def insert_after(pst, ist, i, l, a, p):
    """Link page p right after page a (towards the tail) in list l."""
    b = 3 * (l - 1)
    n = pst[P_NEXT][a]
    pst[P_PREV][p] = a
    pst[P_NEXT][p] = n
    pst[P_NEXT][a] = p
    if n >= 0:
        pst[P_PREV][n] = p
    else:
        ist[i, b + 1] = p
    ist[i, b + 2] += 1
    pst[P_WHERE][p] = l


@njit(_nrt=False, cache=True, inline="always")
def unlink(pst, ist, i, p):
    """Unlink page p from whichever list holds it."""
    l = pst[P_WHERE][p]
    b = 3 * (l - 1)
    pr = pst[P_PREV][p]
    nx = pst[P_NEXT][p]
    if pr >= 0:
        pst[P_NEXT][pr] = nx
    else:
        ist[i, b] = nx
    if nx >= 0:
        pst[P_PREV][nx] = pr
    else:
        ist[i, b + 1] = pr
    ist[i, b + 2] -= 1
    pst[P_PREV][p] = -1
    pst[P_NEXT][p] = -1
    pst[P_WHERE][p] = 0


@njit(_nrt=False, cache=True, inline="always")
def move_to_head(pst, ist, i, p):
    """Move page p to the head of the list it is in."""
    l = pst[P_WHERE][p]
    if ist[i, 3 * (l - 1)] == p:
        return
    unlink(pst, ist, i, p)
    push_head(pst, ist, i, l, p)


@njit(_nrt=False, cache=True, inline="always")
def drop(pst, ist, i, p):
    """Unlink ghost entry p for good (it leaves every list) and remember it in
    ``ist[i, I_DROP]`` so that the engine can free its frame."""
    unlink(pst, ist, i, p)
    ist[i, I_DROP] = p


def walk(pst, ist, i, l):
    """Pages of list l from head to tail (plain Python; for tests and snapshots)."""
    out = []
    p = int(ist[i, 3 * (l - 1)])
    while p >= 0:
        out.append(p)
        p = int(pst[P_NEXT][p])
    return out


def new_page_state(n_pages: int) -> FrameState:
    """State arrays for ``n_pages`` entries (frames in the engine; pages in the policy
    twin tests, which index it by page directly)."""
    pst = FrameState(*(np.zeros(n_pages, dtype=t) for t in P_DTYPES))
    pst[P_PREV][:] = -1
    pst[P_NEXT][:] = -1
    pst[P_PAGE][:] = -1
    pst[P_FPREV][:] = -1
    pst[P_FNEXT][:] = -1
    return pst


def copy_page_state(pst: FrameState) -> FrameState:
    """A copy of every array of ``pst``."""
    return FrameState(*(a.copy() for a in pst))


def page_state_nbytes(pst: FrameState) -> int:
    return sum(a.nbytes for a in pst)


def walk_flush(pst, ist, i):
    """Frames of instance i's flush list from head (newest) to tail (oldest), plain Python."""
    out = []
    p = int(ist[i, LF_HEAD])
    while p >= 0:
        out.append(p)
        p = int(pst[P_FNEXT][p])
    return out


# ---- the page map: dense page index -> local id (open addressing, linear probing) ----------
@njit(_nrt=False, cache=True, inline="always")
def _slot0(d, mask):
    x = np.uint64(d) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(x >> np.uint64(29)) & mask


@njit(_nrt=False, cache=True, inline="always")
def hash_slot(hk, d):
    """The slot of key d in the hash ``hk`` (linear probing): where d is, or the empty
    slot (-1) where it would go."""
    mask = hk.shape[0] - 1
    h = _slot0(d, mask)
    while hk[h] != d and hk[h] >= 0:
        h = (h + 1) & mask
    return h


# ---- page ids: dense keys or local ids ---------------------------------------------------
# Where the tablespaces' dense numbering is small enough (bufsim._pool_state.DENSE_MAP_MAX_PAGES), a
# page's id in the kernels *is* its dense index (**dense keys**): ``fmap`` has an entry per
# page number, a trace's pages need no translation, and the per-page facts are computed
# from the space arrays on the miss and read-ahead paths; ``stat`` then has one column,
# the instance (S_INST = 0) of every page number if there are several instances, and no
# row otherwise.  Otherwise (huge, sparse numberings) ids are **local ids** given in order
# of first appearance, an open-addressing hash maps dense indices to them, and ``stat``
# holds each met page's facts in a row.  ``stat.shape[1] == 1`` tells the kernels which.

# ---- the page map tuple ``pm`` that the kernels receive ------------------------------------
#: positions in ``pm``: the page -> frame map, the free-frame stack, the hash keys and
#: values (empty with dense keys), per space: first dense index, size, space id;
#: the dense pages that hold no data (MariaDB 10.11 frees them after a read-ahead); per
#: space the offset of its own leaf links in ``PM_LPREV``/``PM_LNEXT`` (-1: page n's
#: neighbours are n - 1 and n + 1), and those links as page numbers (-1: none); per page
#: (local id) 1 if it is the first or last page of its read-ahead area of
#: ``glob[G_AREA]`` pages (a compact copy of one fact; empty with dense keys); per space
#: the synchronous reads (misses) of its pages, int64, written by the kernels
(PM_FMAP, PM_FFREE, PM_HK, PM_HV, PM_BASE, PM_SIZE, PM_SIDS, PM_UNUSED, PM_LOFF,
 PM_LPREV, PM_LNEXT, PM_EDGE, PM_SMISS) = range(13)


@njit(_nrt=False, cache=True, inline="always")
def dense_keys(stat):
    """True when page ids are dense page indices (see above)."""
    return stat.shape[1] == 1


@njit(_nrt=False, cache=True, inline="always")
def space_pos(stat, pm, p):
    """Position (in the tablespaces) of page p's space."""
    if not dense_keys(stat):
        return stat[p, S_SPACE]
    base = pm[PM_BASE]
    if base.shape[0] == 1:
        return np.int64(0)
    return np.int64(np.searchsorted(base, p, side="right") - 1)


@njit(_nrt=False, cache=True, inline="always")
def dense_of(stat, p):
    """Dense page index of page p."""
    return np.int64(p) if dense_keys(stat) else stat[p, S_DENSE]


@njit(_nrt=False, cache=True, inline="always")
def page_no(stat, pm, p):
    """Page number of page p in its space."""
    if not dense_keys(stat):
        return stat[p, S_PAGENO]
    return p - pm[PM_BASE][space_pos(stat, pm, p)]


@njit(_nrt=False, cache=True, inline="always")
def _links(pm, d, sp, pn):
    """Dense indices of the leaf links of dense page d (page pn of space position sp),
    -1 for none."""
    base = d - pn
    off = pm[PM_LOFF][sp]
    if off < 0:
        prev = d - 1 if pn > 0 else -1
        nxt = d + 1 if pn < pm[PM_SIZE][sp] - 1 else -1
    else:
        a = pm[PM_LPREV][off + pn]
        b = pm[PM_LNEXT][off + pn]
        prev = a + base if a >= 0 else -1
        nxt = b + base if b >= 0 else -1
    return np.int64(prev), np.int64(nxt)


@njit(_nrt=False, cache=True, inline="always")
def leaf_links(stat, pm, p):
    """Dense indices of page p's previous and next leaf (-1: none)."""
    if not dense_keys(stat):
        return stat[p, S_PREVLEAF], stat[p, S_NEXTLEAF]
    sp = space_pos(stat, pm, p)
    return _links(pm, np.int64(p), sp, p - pm[PM_BASE][sp])


@njit(_nrt=False, cache=True, inline="always")
def edge_rule(pn, area):
    """Whether page number pn is the first or last page of its read-ahead area of
    ``area`` pages."""
    # BUF_READ_AHEAD_AREA is a power of two (PoolConfig.read_ahead_area): a mask, no division
    r = pn & (area - 1)
    return area > 0 and (r == 0 or r == area - 1)


@njit(_nrt=False, cache=True, inline="always")
def is_edge(stat, pm, glob, p):
    """Whether page p is the first or last page of its read-ahead area (of
    ``glob[G_AREA]`` pages): only those start a linear read-ahead."""
    if not dense_keys(stat):
        return pm[PM_EDGE][p] != 0
    return edge_rule(page_no(stat, pm, p), glob[G_AREA])


@njit(_nrt=False, cache=True)
def hash_add(pm, stat, glob, n_inst, d, sp, pn):
    """Id of dense page d (page pn of space position sp): d itself with dense keys;
    otherwise its local id, registering it with its static facts, leaf links
    included, if it is new (the caller guarantees room)."""
    if dense_keys(stat):
        return np.int64(d)
    hk = pm[PM_HK]
    h = hash_slot(hk, d)
    if hk[h] == d:
        return np.int64(pm[PM_HV][h])
    p = glob[G_NLOCAL]
    hk[h] = d
    pm[PM_HV][h] = p
    glob[G_NLOCAL] = p + 1
    prev, nxt = _links(pm, d, sp, pn)
    stat[p, S_DENSE] = d
    stat[p, S_SPACE] = sp
    stat[p, S_PAGENO] = pn
    stat[p, S_INST] = fold_instance(pm[PM_SIDS][sp], pn, n_inst)
    stat[p, S_PREVLEAF] = prev
    stat[p, S_NEXTLEAF] = nxt
    pm[PM_FMAP][p] = -1
    pm[PM_EDGE][p] = 1 if edge_rule(pn, glob[G_AREA]) else 0
    return p


@njit(_nrt=False, cache=True, inline="always")
def local_of(pm, d):
    """Id of dense page d: d itself with dense keys (no hash); otherwise its local id,
    or -1 if the replay has not met it."""
    hk = pm[PM_HK]
    if hk.shape[0] == 0:
        return np.int64(d)
    h = hash_slot(hk, d)
    return np.int64(pm[PM_HV][h]) if hk[h] == d else np.int64(-1)


@njit(_nrt=False, cache=True)
def register(pm, stat, glob, n_inst, d):
    """Local id of dense page d of the trace, registering it if it is new (the caller
    guarantees room): the miss path of :func:`local_of`."""
    base = pm[PM_BASE]
    sp = 0 if base.shape[0] == 1 else np.searchsorted(base, d, side="right") - 1
    return hash_add(pm, stat, glob, n_inst, d, sp, d - base[sp])
