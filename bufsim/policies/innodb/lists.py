"""InnoDB's LRU list and its old sublist (buf0lru.cc, buf0buf.cc): the old-sublist
bounds and their adjustment (buf_LRU_old_adjust_len), buf_LRU_old_init, adding and
removing a block (buf_LRU_add_block_low, buf_LRU_remove_block), buf_page_make_young
and buf_page_peek_if_too_old, over the array state of :mod:`bufsim.policies._state`."""
from numba import njit

from .._state import (
    C_NOT_YOUNG, C_YOUNG, I_CLOCK, I_OLD, I_OLDLEN, I_W, K_NINST, K_OLDTIME, K_RATIO, L1_HEAD,
    L1_LEN, NON_OLD_MIN_LEN, NS_PER_MS, OLD_MIN_LEN, OLD_TOLERANCE, P_ACCESS, P_NEXT, P_OLD,
    P_PREV, P_STAMP, RATIO_DIV, STAMP_MASK, S_INST, insert_after, ix, push_head, unlink,
)


@njit(_nrt=False, cache=True, inline="always")
def now_ms(t_ns):
    """ut_time_ms() of a virtual time.  +1 so that no access is stamped 0 (0 = never)."""
    return t_ns // NS_PER_MS + 1


@njit(_nrt=False, cache=True, inline="always")
def instance_of(stat, cfg, p):
    """The instance of page p (read from the tablespace map only if there are several:
    one cold cache line less per miss)."""
    return 0 if cfg[K_NINST] == 1 else stat[p, S_INST]


# ---- the old sublist ---------------------------------------------------------------------
@njit(_nrt=False, cache=True, inline="always")
def set_old(pst, p, v):
    pst[P_OLD][p] = v


@njit(_nrt=False, cache=True, inline="always")
def old_adjust_len(pst, stat, ist, cfg, i):
    """buf_LRU_old_adjust_len: keep LRU_old_len within +-20 of the target."""
    ist[i, I_OLD], ist[i, I_OLDLEN] = old_adjust(pst[P_PREV], pst[P_NEXT], pst[P_OLD],
                                                 ist[i, L1_LEN], cfg[K_RATIO],
                                                 ist[i, I_OLD], ist[i, I_OLDLEN])


@njit(_nrt=False, cache=True, inline="always")
def old_adjust(prv, nxt, isold, length, ratio, old, oldlen):
    """buf_LRU_old_adjust_len's rule on an LRU of ``length`` pages with the old pointer
    ``old`` and old length ``oldlen`` (the engine's fast loop holds them in locals):
    moves the pointer one page at a time until the old length is within
    OLD_TOLERANCE of its target, and returns the new pointer and length."""
    new_len = min(length * ratio // RATIO_DIV, length - (OLD_TOLERANCE + NON_OLD_MIN_LEN))
    while True:
        if oldlen + OLD_TOLERANCE < new_len:
            old = prv[ix(old)]
            oldlen += 1
            isold[ix(old)] = 1
        elif oldlen > new_len + OLD_TOLERANCE:
            isold[ix(old)] = 0
            old = nxt[ix(old)]
            oldlen -= 1
        else:
            return old, oldlen


# buf_LRU_old_adjust_len as arithmetic.  While the LRU is at least OLD_MIN_LEN long its
# old pages are the list's last LRU_old_len pages (LRU_old is the first of them), so the
# rule above only moves that boundary: the old length it leaves is its argument clamped to
# [target - OLD_TOLERANCE, target + OLD_TOLERANCE].  A get that changes the list several
# times (evict the tail, add after LRU_old, make it young) can therefore count the old
# length through each step's clamp and move the pointer once, at the end, by the net
# difference (old_walk): the same pages are old and the same page is LRU_old as after
# the step-by-step calls.  The engine's fast loop does this for a read that old_blocks_time
# 0 makes young at its first access (benchmarks/midpoint_floor.py's one-step kernel does
# it for every get); the twin tests hold it to the step-by-step kernel on every state array.


@njit(_nrt=False, cache=True, inline="always")
def old_bounds(length, ratio):
    """The old lengths buf_LRU_old_adjust_len leaves alone on an LRU of ``length`` pages:
    ``(low, high)``, the target -+ OLD_TOLERANCE."""
    new_len = min(length * ratio // RATIO_DIV, length - (OLD_TOLERANCE + NON_OLD_MIN_LEN))
    return new_len - OLD_TOLERANCE, new_len + OLD_TOLERANCE


@njit(_nrt=False, cache=True, inline="always")
def old_clamp(oldlen, low, high):
    """The old length buf_LRU_old_adjust_len leaves (bounds from :func:`old_bounds`)."""
    if oldlen < low:
        return low
    if oldlen > high:
        return high
    return oldlen


@njit(_nrt=False, cache=True, inline="always")
def old_walk(prv, nxt, isold, old, steps):
    """Move the LRU_old pointer ``steps`` pages towards the head (negative: towards the
    tail), marking the pages it takes in old and those it leaves not old, as
    buf_LRU_old_adjust_len's steps do; returns the new pointer."""
    while steps > 0:
        old = prv[ix(old)]
        isold[ix(old)] = 1
        steps -= 1
    while steps < 0:
        isold[ix(old)] = 0
        old = nxt[ix(old)]
        steps += 1
    return old


@njit(_nrt=False, cache=True)
def old_init(pst, stat, ist, cfg, i):
    """buf_LRU_old_init: mark every page old, LRU_old = head, then adjust."""
    p = ist[i, L1_HEAD]
    while p >= 0:
        set_old(pst, p, 1)
        p = pst[P_NEXT][p]
    ist[i, I_OLD] = ist[i, L1_HEAD]
    ist[i, I_OLDLEN] = ist[i, L1_LEN]
    old_adjust_len(pst, stat, ist, cfg, i)


@njit(_nrt=False, cache=True, inline="always")
def add_block(pst, stat, ist, cfg, i, p, old):
    """buf_LRU_add_block_low: at the head (stamping freed_page_clock) unless this is a
    read and the list has 512 pages, then right after LRU_old (no stamp)."""
    if (not old) or ist[i, L1_LEN] < OLD_MIN_LEN:
        push_head(pst, ist, i, 1, p)
        pst[P_STAMP][p] = ist[i, I_CLOCK] & STAMP_MASK
    else:
        insert_after(pst, ist, i, 1, ist[i, I_OLD], p)
        ist[i, I_OLDLEN] += 1
    L = ist[i, L1_LEN]
    if L > OLD_MIN_LEN:
        set_old(pst, p, 1 if old else 0)
        old_adjust_len(pst, stat, ist, cfg, i)
    elif L == OLD_MIN_LEN:
        old_init(pst, stat, ist, cfg, i)
    else:
        set_old(pst, p, 1 if ist[i, I_OLD] >= 0 else 0)


@njit(_nrt=False, cache=True, inline="always")
def remove_block(pst, stat, ist, cfg, i, p):
    """buf_LRU_remove_block.  The page's old flag is cleared afterwards (it has left
    the list; every insertion sets the flag again)."""
    if p == ist[i, I_OLD]:
        prev = pst[P_PREV][p]
        ist[i, I_OLD] = prev
        set_old(pst, prev, 1)
        ist[i, I_OLDLEN] += 1
    unlink(pst, ist, i, p)
    if ist[i, L1_LEN] < OLD_MIN_LEN:
        q = ist[i, L1_HEAD]
        while q >= 0:
            set_old(pst, q, 0)
            q = pst[P_NEXT][q]
        ist[i, I_OLD] = -1
        ist[i, I_OLDLEN] = 0
        set_old(pst, p, 0)
        return
    if pst[P_OLD][p]:
        ist[i, I_OLDLEN] -= 1
    set_old(pst, p, 0)
    old_adjust_len(pst, stat, ist, cfg, i)


@njit(_nrt=False, cache=True, inline="always")
def make_block_young(pst, stat, ist, cnt, cfg, i, p):
    """buf_LRU_make_block_young: counted in PAGES_MADE_YOUNG only if the page was old."""
    if pst[P_OLD][p]:
        cnt[i, C_YOUNG] += 1
    remove_block(pst, stat, ist, cfg, i, p)
    add_block(pst, stat, ist, cfg, i, p, False)


@njit(_nrt=False, cache=True, inline="always")
def peek_if_too_old(pst, ist, cnt, cfg, i, p, t_ns):
    """buf_page_peek_if_too_old.  Returns bit 0: move the page; bit 1: the clock was read."""
    if ist[i, I_CLOCK] == 0:
        return 0  # warm-up: nothing evicted from this instance yet
    if cfg[K_OLDTIME] != 0 and pst[P_OLD][p]:
        acc = pst[P_ACCESS][p]
        if acc > 0:
            if now_ms(t_ns) - acc >= cfg[K_OLDTIME]:
                return 3
            cnt[i, C_NOT_YOUNG] += 1
            return 2
        cnt[i, C_NOT_YOUNG] += 1
        return 0
    # buf_page_peek_if_young: (clock mod 2^31) < stamp + W
    young = (ist[i, I_CLOCK] & STAMP_MASK) < pst[P_STAMP][p] + ist[i, I_W]
    return 0 if young else 1


# ---- the device: bufsim.policies.device (device_read, device_write) -------------------------
