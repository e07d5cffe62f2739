"""Dirty pages, the flush list and flush-list flushing (InnoDB's ``buf/buf0flu.c[c]``).

A page becomes dirty on its first modifying get after a read or a write: its
``oldest_modification`` (``pst[P_DIRTY][f]``) is set to the LSN and it enters the
head of its instance's flush list (:func:`note_modification`).  Since the LSN only
grows, the list is ordered by oldest_modification, the oldest at the tail.  A dirty
page leaves the list when it is written (:func:`write_page`): by a flush-list batch
(:func:`flush_list`), by the page cleaner's LRU batch or by a user thread's
single-page flush (:mod:`bufsim.policies.innodb`).  A dirty page is never evicted.

Who runs flush-list batches, once per active virtual second (:func:`flush_pass`,
called from :func:`bufsim.policies.innodb.background`):

* **5.5**, ``srv_master_thread`` (5.5 ``srv/srv0srv.c``), one-second loop:
  ``buf_flush_list(PCT_IO(100))`` when ``buf_get_modified_ratio_pct()`` exceeds
  innodb_max_dirty_pages_pct.  Every tenth pass is its 10-second loop: first
  ``buf_flush_list(PCT_IO(100))`` if fewer than ``SRV_PAST_IO_ACTIVITY = PCT_IO(200)``
  page reads and writes happened since the previous 10-second loop, then
  ``buf_flush_list(PCT_IO(100))`` if more than 70% of the pool is dirty, else
  ``buf_flush_list(PCT_IO(10))``.
* **5.6, 5.7, MariaDB**, ``buf_flush_page_cleaner_thread`` ->
  ``page_cleaner_flush_pages_if_needed`` (5.6 ``buf/buf0flu.cc``): nothing if no
  page was modified since the previous pass (``prev_lsn == cur_lsn``; InnoDB keeps
  ``prev_lsn`` for innodb_flushing_avg_loops passes, the model for one), else
  ``PCT_IO(af_get_pct_for_dirty())`` pages: 100% of io_capacity above
  innodb_max_dirty_pages_pct when innodb_max_dirty_pages_pct_lwm is 0; with a
  non-zero lwm, ``dirty_pct * 100 / (max_dirty_pages_pct + 1)`` percent above the lwm.

``buf_flush_list(min_n)`` spreads ``min_n`` evenly over the instances:
``ceil(min_n / instances)`` pages from the tail of each instance's flush list
(5.5 ``buf_flush_list``, ``buf_flush_flush_list_batch``).  ``PCT_IO(p)`` is
``io_capacity * p / 100``.

Simplifications (README, "Dirty pages and flushing"): the LSN counts modifying gets,
not redo bytes, so the redo-driven parts are not modelled: 5.5's adaptive flushing
(``buf_flush_get_desired_flush_rate``: dirty pages times the redo rate over the log
capacity), 5.6's ``af_get_pct_for_lsn`` and the LSN limit of its batch, and its
averaging of the page rate over ``innodb_flushing_avg_loops``; also the pending-I/O
test of 5.5's 10-second loop, the idle server's background flushing (the pass runs
only after activity), flushing of neighbour pages (innodb_flush_neighbors), the
doublewrite buffer, and a write's I/O fix (a page counts as clean once its write is
queued on the device).
"""
from numba import njit

from ._state import (
    C_DIRTIED, C_FLUSH_LIST, C_READ, C_WRITE_REQ, C_WRITTEN, G_FIXED, G_FLUSH_IOS,
    G_FLUSH_LSN, G_FLUSH_PASSES, G_LSN, I_FREE, K_DIRTY_LWM, K_FLUSH, K_IO_CAPACITY,
    K_MAX_DIRTY, K_MASTER_FLUSH, L1_LEN, LF_HEAD, LF_LEN, LF_TAIL, P_DIRTY, P_FNEXT, P_FPREV,
    P_READY, TEMP_DIRTY, TEMP_WRITTEN,
)
from .device import device_write

#: 5.5 srv0srv.c: the 10-second loop flushes PCT_IO(100) when the pool is more than 70%
#: dirty, PCT_IO(10) otherwise
MASTER_10S_DIRTY_PCT = 70
#: 5.5 srv0srv.c SRV_PAST_IO_ACTIVITY = PCT_IO(200): the 10-second loop's "free I/O
#: capacity" test
PAST_IO_ACTIVITY_PCT = 200
#: passes of 5.5's one-second loop per 10-second loop (``for (i = 0; i < 10; i++)``)
MASTER_LOOPS_PER_10S = 10


@njit(_nrt=False, cache=True, inline="always")
def pct_io(cfg, p):
    """PCT_IO(p): ``innodb_io_capacity * p / 100`` pages."""
    return cfg[K_IO_CAPACITY] * p // 100


@njit(_nrt=False, cache=True, inline="always")
def note_modification(pst, ist, cnt, glob, i, f):
    """buf_flush_note_modification (``include/buf0flu.ic``, from mtr_commit's
    mtr_memo_note_modifications), for a get that modifies frame f of instance i:
    one write request (``srv_buf_pool_write_requests``), the LSN advances, and a clean
    page gets oldest_modification = the LSN and goes to the flush-list head
    (buf_flush_insert_into_flush_list, under the instance's flush_list_mutex: counted
    in ``flush_list_inserts``)."""
    lsn = glob[G_LSN] + 1
    glob[G_LSN] = lsn
    cnt[i, C_WRITE_REQ] += 1
    if pst[P_DIRTY][f] == 0:
        pst[P_DIRTY][f] = lsn
        h = ist[i, LF_HEAD]
        pst[P_FPREV][f] = -1
        pst[P_FNEXT][f] = h
        if h >= 0:
            pst[P_FPREV][h] = f
        else:
            ist[i, LF_TAIL] = f
        ist[i, LF_HEAD] = f
        ist[i, LF_LEN] += 1
        cnt[i, C_DIRTIED] += 1


@njit(_nrt=False, cache=True, inline="always")
def note_temp_modification(pst, f):
    """A modifying get of a temporary-tablespace page under MariaDB 10.11 (FLAG_TEMP):
    ``mtr_t::set_modified`` -> ``buf_page_t::set_temp_modified`` (10.11.18
    ``mtr/mtr0mtr.cc``, ``include/buf0buf.h``) sets oldest_modification to 2 and returns:
    no redo (the LSN stays), no write request, not in the flush list.  The page is
    dirty (not replaceable) until an LRU batch writes it."""
    if pst[P_DIRTY][f] == 0:
        pst[P_DIRTY][f] = TEMP_DIRTY


@njit(_nrt=False, cache=True, inline="always")
def write_temp_page(pst, cnt, glob, cfg, i, f, t_ns):
    """Write temporary-tablespace frame f (TEMP_DIRTY) of instance i at t_ns: the write is
    queued on the device and NUMBER_PAGES_WRITTEN counts it; the page is marked
    TEMP_WRITTEN, to be freed when the write completes (buf_page_write_complete: ``if
    (!persistent) buf_LRU_free_page``; the caller frees it).  Returns the completion
    time."""
    done = device_write(glob, cfg, t_ns)
    pst[P_DIRTY][f] = TEMP_WRITTEN
    cnt[i, C_WRITTEN] += 1
    return done


@njit(_nrt=False, cache=True, inline="always")
def flush_remove(pst, ist, i, f):
    """buf_flush_remove: frame f leaves instance i's flush list, oldest_modification 0."""
    pr = pst[P_FPREV][f]
    nx = pst[P_FNEXT][f]
    if pr >= 0:
        pst[P_FNEXT][pr] = nx
    else:
        ist[i, LF_HEAD] = nx
    if nx >= 0:
        pst[P_FPREV][nx] = pr
    else:
        ist[i, LF_TAIL] = pr
    ist[i, LF_LEN] -= 1
    pst[P_FPREV][f] = -1
    pst[P_FNEXT][f] = -1
    pst[P_DIRTY][f] = 0


@njit(_nrt=False, cache=True, inline="always")
def write_page(pst, ist, cnt, glob, cfg, i, f, t_ns):
    """Write dirty frame f of instance i at t_ns (buf_flush_page ->
    buf_flush_write_block_low, then buf_flush_write_complete -> buf_flush_remove): the
    write is queued on the device, the page leaves the flush list and is clean, and
    NUMBER_PAGES_WRITTEN counts it.  Returns the write's completion time."""
    done = device_write(glob, cfg, t_ns)
    flush_remove(pst, ist, i, f)
    cnt[i, C_WRITTEN] += 1
    return done


@njit(_nrt=False, cache=True)
def flush_list_batch(pst, ist, cnt, glob, cfg, i, n, t_ns):
    """buf_flush_flush_list_batch (lsn_limit unlimited): write up to n pages of
    instance i from the flush-list tail, oldest first, skipping a page whose read is
    in flight or that is buffer-fixed.  Returns the pages written."""
    p = ist[i, LF_TAIL]
    count = 0
    while p >= 0 and count < n:
        prev = pst[P_FPREV][p]
        if pst[P_READY][p] <= t_ns and p != glob[G_FIXED]:
            write_page(pst, ist, cnt, glob, cfg, i, p, t_ns)
            count += 1
        p = prev
    cnt[i, C_FLUSH_LIST] += count
    return count


@njit(_nrt=False, cache=True)
def flush_list(pst, ist, cnt, glob, cfg, n, t_ns):
    """buf_flush_list(n, IB_ULONGLONG_MAX): ``ceil(n / instances)`` pages from each
    instance's flush list.  Returns the pages written."""
    n_inst = ist.shape[0]
    per = (n + n_inst - 1) // n_inst
    total = 0
    if per <= 0:
        return 0
    for i in range(n_inst):
        total += flush_list_batch(pst, ist, cnt, glob, cfg, i, per, t_ns)
    return total


@njit(_nrt=False, cache=True)
def modified_ratio_pct(ist):
    """buf_get_modified_ratio_pct: ``100 * flush-list pages / (1 + LRU + free)``
    over every instance, integer arithmetic."""
    dirty = 0
    pages = 0
    for i in range(ist.shape[0]):
        dirty += ist[i, LF_LEN]
        pages += ist[i, L1_LEN] + ist[i, I_FREE]
    return 100 * dirty // (1 + pages)


@njit(_nrt=False, cache=True)
def pct_for_dirty(ist, cfg):
    """af_get_pct_for_dirty (5.6 ``buf/buf0flu.cc``): the percentage of io_capacity the
    page cleaner flushes for the share of dirty pages."""
    dirty_pct = modified_ratio_pct(ist)
    hi = cfg[K_MAX_DIRTY]
    lwm = cfg[K_DIRTY_LWM]
    if dirty_pct > 0 and hi == 0:
        return 100
    if lwm == 0:
        return 100 if dirty_pct > hi else 0
    if dirty_pct > lwm:
        return dirty_pct * 100 // (hi + 1)
    return 0


@njit(_nrt=False, cache=True)
def flush_pass(pst, ist, cnt, glob, cfg, t_ns):
    """The flush-list flushing of one active second at t_ns: 5.5's master thread or
    the 5.6+ page cleaner (module docstring).  Returns the pages written."""
    if cfg[K_FLUSH] == 0:
        return 0
    passes = glob[G_FLUSH_PASSES] + 1
    glob[G_FLUSH_PASSES] = passes
    n = 0
    if cfg[K_MASTER_FLUSH] != 0:
        # srv_master_thread, one-second loop (adaptive flushing not modelled)
        if modified_ratio_pct(ist) > cfg[K_MAX_DIRTY]:
            n += flush_list(pst, ist, cnt, glob, cfg, pct_io(cfg, 100), t_ns)
        if passes % MASTER_LOOPS_PER_10S == 0:
            # the 10-second loop
            ios = 0
            for i in range(ist.shape[0]):
                ios += cnt[i, C_READ] + cnt[i, C_WRITTEN]
            if ios - glob[G_FLUSH_IOS] < pct_io(cfg, PAST_IO_ACTIVITY_PCT):
                n += flush_list(pst, ist, cnt, glob, cfg, pct_io(cfg, 100), t_ns)
            if modified_ratio_pct(ist) > MASTER_10S_DIRTY_PCT:
                n += flush_list(pst, ist, cnt, glob, cfg, pct_io(cfg, 100), t_ns)
            else:
                n += flush_list(pst, ist, cnt, glob, cfg, pct_io(cfg, 10), t_ns)
            ios = 0
            for i in range(ist.shape[0]):
                ios += cnt[i, C_READ] + cnt[i, C_WRITTEN]
            glob[G_FLUSH_IOS] = ios       # n_ios_very_old of the next 10 seconds
        return n
    # page_cleaner_flush_pages_if_needed: nothing unless the LSN moved
    if glob[G_LSN] == glob[G_FLUSH_LSN]:
        return 0
    glob[G_FLUSH_LSN] = glob[G_LSN]
    pct = pct_for_dirty(ist, cfg)
    if pct > 0:
        n = flush_list(pst, ist, cnt, glob, cfg, pct_io(cfg, pct), t_ns)
    return n
