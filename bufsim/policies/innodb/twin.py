"""The InnoDB policy's pure-Python twin: its rules written from ``docs/semantics.md``
independently of the jitted kernels' representation, beside them in the policy's package.

An instance's LRU is a Python list (index 0 = head), and the old sublist is not a pointer
but a length, because the old pages are always exactly the last ``old_len`` pages of the
list (§2.4, §2.6).  :class:`InnoDBInstance` is one buffer-pool instance (lists, old
sublist, free blocks, flush list, the page cleaner's LRU batch); :class:`InnoDBPoolRules`
the rules that span the pool (a get, reading in, linear read-ahead, the background
passes), mixed into :class:`bufsim.reference.ReferencePool`, which keeps the streams, the
event order and the device.  Slow (list operations are O(n)); meant for traces of a few
thousand events.
"""
from __future__ import annotations

from .._state import (
    COUNTER_NAMES, FLAG_AHI, FLAG_DESCENT, FLAG_KIND, FLAG_MODIFY, FLAG_RELATCH, FLAG_SHORTCUT,
    FLAG_STEP, FLAG_TEMP,
)

MASK31 = (1 << 31) - 1
#: counter name -> its column in the counters
C = {name: j for j, name in enumerate(COUNTER_NAMES)}


def ms(t_ns: int) -> int:
    """InnoDB's millisecond access time of a virtual time (``ut_time_ms``, 0 = never)."""
    return t_ns // 1_000_000 + 1


class RefPage:
    __slots__ = ("access", "stamp", "ready", "oldest")

    def __init__(self):
        self.access = 0
        self.stamp = 0
        self.ready = 0
        # oldest_modification: 0 clean, else the LSN that dirtied it; -1 a temporary
        # page modified under MariaDB 10.11 (its oldest_modification 2: no LSN, not in
        # the flush list)
        self.oldest = 0


class InnoDBInstance:
    """One buffer-pool instance: LRU list, old-sublist length, free count, clock."""

    def __init__(self, pool, idx: int):
        cfg = pool.config
        self.pool = pool
        self.idx = idx
        self.lru: list[int] = []
        self.old_len = 0
        self.size = cfg.instance_pages
        self.free = cfg.data_pages
        self.clock = 0
        self.ratio = cfg.old_ratio
        self.window = cfg.young_window
        self.area = cfg.read_ahead_area
        self.pages: dict[int, RefPage] = {}
        self.flush: list[int] = []   # the flush list, index 0 = head (newest)
        self.counters = [0] * len(COUNTER_NAMES)

    def count(self, name, n=1):
        self.counters[C[name]] += n

    # ---- old sublist (§2) --------------------------------------------------------------
    def is_old(self, p: int) -> bool:
        if len(self.lru) < 512:
            return False
        return self.lru.index(p) >= len(self.lru) - self.old_len

    def old_pages(self) -> set[int]:
        if len(self.lru) < 512:
            return set()
        return set(self.lru[len(self.lru) - self.old_len:])

    def adjust(self):
        L = len(self.lru)
        target = min(L * self.ratio // 1024, L - 25)
        while self.old_len + 20 < target:
            self.old_len += 1
        while self.old_len > target + 20:
            self.old_len -= 1

    def add(self, p: int, old: bool):
        L = len(self.lru)
        if not old or L < 512:
            self.lru.insert(0, p)
            self.pages[p].stamp = self.clock & MASK31
        else:
            self.lru.insert(L - self.old_len + 1, p)
            self.old_len += 1
        L += 1
        if L == 512:
            self.old_len = 512
        if L >= 512:
            self.adjust()

    def remove(self, p: int):
        L = len(self.lru)
        idx = self.lru.index(p)
        first_old = L - self.old_len if L >= 512 else L
        self.lru.pop(idx)
        if L - 1 < 512:
            self.old_len = 0
            return
        if idx > first_old:
            self.old_len -= 1  # an old page that was not the boundary page
        self.adjust()

    def make_young(self, p: int):
        if self.is_old(p):
            self.count("PAGES_MADE_YOUNG")
        self.remove(p)
        self.add(p, False)

    def too_old(self, p: int, t_ns: int) -> tuple[bool, bool]:
        """(move?, clock read?) per buf_page_peek_if_too_old."""
        if self.clock == 0:
            return False, False
        pg = self.pages[p]
        if self.pool.config.old_blocks_time_ms and self.is_old(p):
            if pg.access > 0:
                if ms(t_ns) - pg.access >= self.pool.config.old_blocks_time_ms:
                    return True, True
                self.count("PAGES_NOT_MADE_YOUNG")
                return False, True
            self.count("PAGES_NOT_MADE_YOUNG")
            return False, False
        young = (self.clock & MASK31) < pg.stamp + self.window
        return (not young), False

    # ---- freeing (§4) ---------------------------------------------------------------------
    def replaceable(self, p, t_ns):
        pg = self.pages[p]
        return pg.oldest == 0 and pg.ready <= t_ns and p != self.pool.fixed

    # ---- dirty pages and the flush list (bufsim.policies.flush) ---------------------------
    def note_modification(self, p, temp=False):
        """A modifying get: a write request; a clean page takes the new LSN as its
        oldest modification and goes to the flush-list head.  A temporary page
        (FLAG_TEMP) under MariaDB 10.11: only marked dirty (-1), nothing else."""
        if temp and self.pool.config.server.temp_pages_unlogged:
            if self.pages[p].oldest == 0:
                self.pages[p].oldest = -1
            return
        self.pool.lsn += 1
        self.count("Innodb_buffer_pool_write_requests")
        pg = self.pages[p]
        if pg.oldest == 0:
            pg.oldest = self.pool.lsn
            self.flush.insert(0, p)
            self.count("flush_list_inserts")

    def write(self, p, t_ns) -> int:
        """Write dirty page p: queued on the device, clean at once, off the flush list."""
        done = self.pool.device_write(t_ns)
        self.flush.remove(p)
        self.pages[p].oldest = 0
        self.count("NUMBER_PAGES_WRITTEN")
        return done

    def flush_batch(self, n, t_ns) -> int:
        """Up to n pages from the flush-list tail, skipping pages being read or fixed."""
        written = 0
        for p in list(reversed(self.flush)):
            if written >= n:
                break
            if self.pages[p].ready <= t_ns and p != self.pool.fixed:
                self.write(p, t_ns)
                written += 1
        self.count("flush_list_flushed", written)
        return written

    def evict(self, p):
        self.remove(p)
        del self.pages[p]
        self.clock += 1
        self.free += 1
        self.count("evictions")

    def free_from_tail(self, limit, t_ns) -> bool:
        candidates = self.lru[::-1] if limit < 0 else self.lru[::-1][:limit]
        for p in candidates:
            if self.replaceable(p, t_ns):
                if self.pages[p].access == 0:
                    self.count("NUMBER_READ_AHEAD_EVICTED")
                self.evict(p)
                return True
        return False

    def get_free_block(self, stream, t_ns: int) -> int:
        cfg = self.pool.config
        while True:
            if self.free > 0:
                self.free -= 1
                if cfg.server.refill_on_demand:
                    self.refill_on_demand(t_ns)  # §13: the free list refilled on demand
                return t_ns
            first = {"tenth": 100 + self.size // 10,
                     "scan_depth": cfg.lru_scan_depth}.get(cfg.server.free_scan, 100)
            if self.free_from_tail(first, t_ns) or self.free_from_tail(-1, t_ns):
                t_ns += cfg.cost.evict_ns
                stream.cpu += cfg.cost.evict_ns
                continue
            self.count("Innodb_buffer_pool_wait_free")
            dirty = [p for p in reversed(self.lru) if self.pages[p].oldest
                     and self.pages[p].ready <= t_ns and p != self.pool.fixed]
            if dirty and self.pages[dirty[0]].oldest < 0:
                # a temporary page: written, then freed when the write completes
                done = self.pool.device_write(t_ns)
                self.count("NUMBER_PAGES_WRITTEN")
                stream.io_wait += done - t_ns
                t_ns = done
                self.pages[dirty[0]].oldest = 0
                self.evict(dirty[0])
                continue
            if dirty:
                done = self.write(dirty[0], t_ns)
                stream.io_wait += done - t_ns
                t_ns = done
                continue
            pending = [self.pages[p].ready for p in self.lru if self.pages[p].ready > t_ns]
            if not pending:
                raise RuntimeError("no block can be freed")
            stream.io_wait += min(pending) - t_ns
            t_ns = min(pending)

    def need_lru_eviction(self) -> bool:
        """MariaDB 10.11's buf_pool_t::need_LRU_eviction: more than 256 pages in the LRU
        and fewer than lru_scan_depth / 2 free."""
        return len(self.lru) > 256 and self.free < self.pool.config.lru_scan_depth // 2

    def refill_on_demand(self, t_ns):
        """After a take: wake the page cleaner if need_lru_eviction (buf_LRU_get_free_block
        -> page_cleaner_wakeup); its LRU batch runs at once, or with ``cleaner_lag`` = n
        after n more takes, during which no take wakes it again (page_cleaner_active),
        if need_lru_eviction still holds then (buf_flush_page_cleaner).  The pending
        wake is the pool's (one page cleaner)."""
        pool = self.pool
        pend = pool.cleaner_pend
        if pend > 0:
            pool.cleaner_pend = pend - 1
            if pend == 1 and self.need_lru_eviction():
                self.cleaner_pass(t_ns)
        elif self.need_lru_eviction():
            if pool.config.cleaner_lag == 0:
                self.cleaner_pass(t_ns)
            else:
                pool.cleaner_pend = pool.config.cleaner_lag

    def cleaner_pass(self, t_ns):
        """The page cleaner's LRU batch: from the tail until lru_scan_depth blocks are
        free or the LRU is down to its floor; 5.6/5.7 scan at most lru_scan_depth
        pages, MariaDB 10.11 has no scan quota and its floor is min(pool / 20 - 1, 256)
        (10.11.18 buf_flush_LRU_list_batch, ``buf_lru_min_len``)."""
        cfg = self.pool.config
        depth = cfg.lru_scan_depth
        quota = len(self.lru) if cfg.server.cleaner_batch_unbounded else min(depth, len(self.lru))
        floor = min(self.size // 20 - 1, 256) if cfg.server.small_pool_lru_floor else 256
        written_temp = []
        for p in list(reversed(self.lru))[:quota]:
            if self.free >= depth or len(self.lru) <= floor:
                break
            if self.replaceable(p, t_ns):
                self.evict(p)
            elif self.pages[p].oldest and self.pages[p].ready <= t_ns and p != self.pool.fixed:
                if self.pages[p].oldest < 0:
                    # a temporary page: written, and freed when its write completes,
                    # after the batch's stop test (buf_page_write_complete)
                    self.pool.device_write(t_ns)
                    self.count("NUMBER_PAGES_WRITTEN")
                    written_temp.append(p)
                else:
                    self.write(p, t_ns)
        for p in written_temp:
            self.pages[p].oldest = 0
            self.evict(p)


class InnoDBPoolRules:
    """The InnoDB rules of :class:`bufsim.reference.ReferencePool` that span its instances:
    a get (buf_page_get_gen and the adaptive hash index's paths), reading in, linear
    read-ahead, and the background passes (the page cleaner's LRU batch, flush-list
    flushing).  The pool holds the state they read: ``config``, ``inst``, ``inst_of``,
    ``ts``, ``unused``, ``fixed``, ``space_misses``, the background pass's ``next_tick``,
    ``active``, ``ticks``, ``cleaner_pend``, ``lsn``, ``flush_passes``, ``flush_ios``, ``flush_lsn``, and its
    device (``device_read``, ``device_write``)."""

    def cleaner_passes_due(self, t_ns: int) -> None:
        """The background passes at every whole second up to ``t_ns``, each run only if
        the server was active since the previous one: the 5.6+ page cleaner's LRU
        batch, then the version's flush-list flushing."""
        cfg = self.config
        if cfg.policy == "innodb" and (cfg.page_cleaner or cfg.flush_list_flushing):
            while self.next_tick <= t_ns:
                if self.active:
                    if cfg.page_cleaner:
                        self.cleaner_pend = 0   # a pending wake is consumed: the cleaner ran
                        for inst in self.inst:
                            inst.cleaner_pass(self.next_tick)
                        self.ticks += 1
                    self.flush_pass(self.next_tick)
                    self.active = False
                self.next_tick += 1_000_000_000

    # ---- flush-list flushing (bufsim.policies.flush) -------------------------------------
    def dirty_pct(self) -> int:
        dirty = sum(len(inst.flush) for inst in self.inst)
        return 100 * dirty // (1 + sum(len(inst.lru) + inst.free for inst in self.inst))

    def ios(self) -> int:
        return sum(inst.counters[C["NUMBER_PAGES_READ"]] + inst.counters[C["NUMBER_PAGES_WRITTEN"]]
                   for inst in self.inst)

    def flush_list_batches(self, n: int, t: int) -> None:
        per = -(-n // len(self.inst))
        if per > 0:
            for inst in self.inst:
                inst.flush_batch(per, t)

    def flush_pass(self, t: int) -> None:
        cfg = self.config
        if not cfg.flush_list_flushing:
            return
        self.flush_passes += 1

        def pct_io(p):
            return cfg.io_capacity * p // 100

        if cfg.server.master_thread_flushing:   # srv_master_thread
            if self.dirty_pct() > cfg.max_dirty_pages_pct:
                self.flush_list_batches(pct_io(100), t)
            if self.flush_passes % 10 == 0:   # the 10-second loop
                if self.ios() - self.flush_ios < pct_io(200):
                    self.flush_list_batches(pct_io(100), t)
                self.flush_list_batches(pct_io(100) if self.dirty_pct() > 70 else pct_io(10), t)
                self.flush_ios = self.ios()
            return
        if self.lsn == self.flush_lsn:   # page_cleaner_flush_pages_if_needed
            return
        self.flush_lsn = self.lsn
        d, hi, lwm = self.dirty_pct(), cfg.max_dirty_pages_pct, cfg.max_dirty_pages_pct_lwm
        if d > 0 and hi == 0:
            pct = 100
        elif lwm == 0:
            pct = 100 if d > hi else 0
        else:
            pct = d * 100 // (hi + 1) if d > lwm else 0
        if pct:
            self.flush_list_batches(pct_io(pct), t)

    def innodb_get(self, p, flags, st, t):
        """One get of page p by stream st at t (spec §3.3, §5.4); returns the time."""
        cfg = self.config
        btr = cfg.ra_sites == "btr"
        kind = flags & FLAG_KIND
        if cfg.cleaner_activity == "get":
            self.active = True
        if btr and kind == FLAG_DESCENT and st.prev_first is not None and st.prev_first != p:
            # search_leaf: the level-1 parent was accessed for the first time: read-ahead
            # on the leaf before its get, the parent fixed meanwhile
            parent = st.prev_first
            pinst = self.inst[self.inst_of[parent]]
            self.fixed = parent if parent in pinst.pages else -1
            t = self.read_ahead_linear(p, st, t)
            self.fixed = -1
        t, first = self._get(p, flags, st, t, not btr or kind in (0, FLAG_STEP))
        if btr:
            st.prev_first = p if first else None
        return t

    def _get(self, p, flags, st, t, may_read_ahead):
        """The get itself; returns (time, whether it was the page's first access)."""
        cfg = self.config
        inst = self.inst[self.inst_of[p]]
        resident = p in inst.pages
        hashed = cfg.adaptive_hash_index and resident and inst.pages[p].access > 0
        counted = 0 if flags & FLAG_RELATCH else 1  # checked, not counted
        if flags & FLAG_SHORTCUT and hashed:  # AHI shortcut: one get, no stamp, no check
            inst.count("NUMBER_PAGES_GET", counted)
            inst.count("ahi_hits")
            pg = inst.pages[p]
            if pg.ready > t:
                st.io_wait += pg.ready - t
                t = pg.ready
            if flags & FLAG_MODIFY:
                inst.note_modification(p, temp=bool(flags & FLAG_TEMP))
            return t, False
        ahi = bool(flags & FLAG_AHI) and hashed
        inst.count("NUMBER_PAGES_GET", (2 if ahi else 1) * counted)
        if ahi:
            inst.count("ahi_hits")
        self.fixed = p
        if not resident:
            st.misses += 1
            self.space_misses[self.ts.page_space_idx[p]] += 1
            inst.count("Innodb_buffer_pool_reads")
            t = self.read_in(p, st, t)
            done = self.device_read(p, t, st)
            inst.pages[p].ready = done
            st.io_wait += done - t
            t = done + cfg.cost.miss_cpu_ns
            st.cpu += cfg.cost.miss_cpu_ns
        elif inst.pages[p].ready > t:
            st.io_wait += inst.pages[p].ready - t
            t = inst.pages[p].ready
        pg = inst.pages[p]
        first = pg.access == 0
        if first:
            pg.access = ms(t)
            t += cfg.cost.clock_read_ns
            st.cpu += cfg.cost.clock_read_ns
        for _ in range(2 if ahi else 1):
            move, clock_read = inst.too_old(p, t)
            if clock_read:
                t += cfg.cost.clock_read_ns
                st.cpu += cfg.cost.clock_read_ns
            if move:
                inst.make_young(p)
                t += cfg.cost.make_young_ns
                st.cpu += cfg.cost.make_young_ns
        if first and not ahi and may_read_ahead:
            t = self.read_ahead_linear(p, st, t)
        if flags & FLAG_MODIFY:
            inst.note_modification(p, temp=bool(flags & FLAG_TEMP))
        self.fixed = -1
        return t, first

    def read_in(self, p, st, t):
        """buf_page_init_for_read."""
        inst = self.inst[self.inst_of[p]]
        t = inst.get_free_block(st, t)
        inst.pages[p] = RefPage()
        inst.add(p, True)
        inst.count("NUMBER_PAGES_READ")
        return t

    def read_ahead_linear(self, p, st, t):
        cfg = self.config
        thr = cfg.read_ahead_threshold
        if thr == 0 and cfg.server.read_ahead_zero_off:
            return t
        inst = self.inst[self.inst_of[p]]
        area = inst.area
        ts = self.ts
        sp = ts.page_space_idx[p]
        base, size = int(ts.space_base[sp]), int(ts.space_size[sp])
        pn = p - base
        low = pn - pn % area
        high = low + area
        next_page_area = cfg.server.read_ahead_next_page_area
        if next_page_area:
            if pn == low:   # 10.11: ``descending= page_id != low``: the first page never
                return t
        elif pn not in (low, high - 1):
            return t
        if pn % 16384 == 1 or high > size:
            return t
        if p not in inst.pages:   # the page itself not in the page hash: fail at once
            return t
        direction = -1 if pn == low else 1
        limit = min(64 - thr, area)
        if cfg.server.read_ahead_fail_early:  # §13: the count of failures aborts at zero
            limit = limit - 1 if limit > 0 else area
        fails = 0
        pred = None
        for j in range(low, high):
            q = base + j
            qi = self.inst[self.inst_of[q]]
            acc = qi.pages[q].access if q in qi.pages else 0
            if acc == 0:
                fails += 1
            elif pred is not None and acc != pred and (1 if acc > pred else -1) != direction:
                fails += 1
            if fails > limit:
                return t
            if acc:
                pred = acc
        prev_leaf, next_leaf = int(ts.prev_leaf[p]), int(ts.next_leaf[p])
        if next_page_area:  # §13: the last page reads the next page-number area
            if prev_leaf < 0 or next_leaf < 0:
                return t
            if pn == high - 1:
                target = p + 1
            elif next_leaf == p + 1:   # §5.4: a middle page, towards its previous leaf
                target = prev_leaf
            else:
                return t
        elif pn == low and next_leaf == p + 1:
            target = prev_leaf
        elif pn == high - 1 and prev_leaf == p - 1:
            target = next_leaf
        else:
            return t
        if target < 0:
            return t
        tpn = target - base
        low = tpn - tpn % area
        high = low + area
        if tpn not in (low, high - 1) or high > size:
            return t
        n = 0
        for j in range(low, high):
            q = base + j
            if j % 16384 == 1 or q in self.inst[self.inst_of[q]].pages:
                continue
            t = self.read_in(q, st, t)
            self.inst[self.inst_of[q]].pages[q].ready = self.device_read(q, t, st)
            n += 1
            if cfg.server.free_unused_after_read_ahead and q in self.unused:  # §13: a page with no data is freed at once
                self.inst[self.inst_of[q]].evict(q)
        inst.count("NUMBER_PAGES_READ_AHEAD", n)
        st.read_ahead += n
        return t
