"""One page get (buf0buf.cc's buf_page_get_gen, the optimistic get and the adaptive
hash index's paths) and a modifying get's note to the flush list."""
from numba import njit

from ..device import device_read
from ..flush import note_modification, note_temp_modification
from .._state import (
    C_AHI, C_GETS, C_READS, FLAG_AHI, FLAG_DESCENT, FLAG_KIND, FLAG_MODIFY, FLAG_RELATCH,
    FLAG_SHORTCUT, FLAG_STEP, FLAG_TEMP, G_ACTIVE, G_FIXED, K_ACTIVITY, K_AHI, K_COST_CLOCK,
    K_COST_MISS, K_COST_YOUNG, K_RA_BTR, K_TEMP_UNLOGGED, PM_FFREE, PM_FMAP, PM_SMISS, P_ACCESS,
    P_READY, P_WHERE, T_CPU, T_IOWAIT, T_MISSES, T_PREV_FIRST, space_pos,
)
from .lists import instance_of, make_block_young, now_ms, peek_if_too_old
from .read import init_for_read, ra_site, read_ahead_linear


@njit(_nrt=False, cache=True, inline="always")
def modify(pst, ist, cnt, glob, cfg, i, f, flags):
    """A modifying get (FLAG_MODIFY) of frame f: a temporary-tablespace page (FLAG_TEMP)
    under MariaDB 10.11 is marked TEMP_DIRTY (no redo, not in the flush list); any other
    goes through buf_flush_note_modification."""
    if (flags & FLAG_TEMP) != 0 and cfg[K_TEMP_UNLOGGED] != 0:
        note_temp_modification(pst, f)
    else:
        note_modification(pst, ist, cnt, glob, i, f)


@njit(_nrt=False, cache=True, inline="always")
def get(pst, stat, ist, cnt, sst, glob, cfg, pm, p, flags, k, t_ns):
    """One page get (buf_page_get_gen / optimistic get / AHI hit / AHI shortcut) of
    page p (a local id) by stream k at t_ns.  Returns the time when the page is
    latched and checked, before the get's own CPU.

    FLAG_RELATCH (16): a cursor re-latch of a remembered position goes through
    every step but is not counted in NUMBER_PAGES_GET.

    Linear read-ahead (:func:`read_ahead_linear`) is tried after a get that is the page's
    first access (its access time was 0), at the pages :func:`ra_site` names, under the
    ``"get"`` rule (``cfg[K_RA_BTR] == 0``) whatever the access kind.  Under the
    ``"btr"`` rule (MariaDB 10.11.7+, MDEV-32068) the kind decides (spec §5.4):
    FLAG_STEP and kind unknown (neither bit) as above (btr_pcur_move_to_next_page);
    FLAG_DESCENT before the get, on the leaf p, when the stream's previous get was the
    first access of another page, its level-1 parent (btr_cur_t::search_leaf), which
    stays buffer-fixed meanwhile; FLAG_NO_RA never."""
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    i = instance_of(stat, cfg, p)
    if cfg[K_ACTIVITY] == 0:
        glob[G_ACTIVE] = 1  # cleaner_activity='get'; 'statement' marks it in the engine
    btr = cfg[K_RA_BTR] != 0
    kind = flags & FLAG_KIND
    if btr and kind == FLAG_DESCENT:
        parent = sst[k, T_PREV_FIRST] - 1
        if parent >= 0 and parent != p and ra_site(stat, pm, glob, cfg, p):
            glob[G_FIXED] = fmap[parent]   # the parent, latched in the descent's mtr
            t_ns = read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, k, t_ns)
            glob[G_FIXED] = -1
    counted = 0 if (flags & FLAG_RELATCH) != 0 else 1
    f = fmap[p]
    resident = f >= 0 and pst[P_WHERE][f] == 1
    hashed = cfg[K_AHI] != 0 and resident and pst[P_ACCESS][f] > 0
    if (flags & FLAG_SHORTCUT) != 0 and hashed:
        # AHI shortcut under the held search latch: one get, no stamp, no check
        cnt[i, C_GETS] += counted
        cnt[i, C_AHI] += 1
        if pst[P_READY][f] > t_ns:
            sst[k, T_IOWAIT] += pst[P_READY][f] - t_ns
            t_ns = pst[P_READY][f]
        if flags & FLAG_MODIFY:
            modify(pst, ist, cnt, glob, cfg, i, f, flags)
        if btr:
            sst[k, T_PREV_FIRST] = 0   # (an accessed page)
        return t_ns
    ahi = (flags & FLAG_AHI) != 0 and hashed
    if ahi:
        cnt[i, C_GETS] += 2 * counted
        cnt[i, C_AHI] += 1
    else:
        cnt[i, C_GETS] += counted
    glob[G_FIXED] = f
    if not resident:
        sst[k, T_MISSES] += 1
        pm[PM_SMISS][space_pos(stat, pm, p)] += 1
        cnt[i, C_READS] += 1
        t_ns = init_for_read(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, p, k, t_ns)
        f = fmap[p]
        glob[G_FIXED] = f
        done = device_read(stat, pm, sst, glob, cfg, p, k, t_ns)
        pst[P_READY][f] = done
        sst[k, T_IOWAIT] += done - t_ns
        t_ns = done + cfg[K_COST_MISS]
        sst[k, T_CPU] += cfg[K_COST_MISS]
    elif pst[P_READY][f] > t_ns:
        sst[k, T_IOWAIT] += pst[P_READY][f] - t_ns
        t_ns = pst[P_READY][f]
    first = pst[P_ACCESS][f] == 0
    if first:
        pst[P_ACCESS][f] = now_ms(t_ns)
        t_ns += cfg[K_COST_CLOCK]
        sst[k, T_CPU] += cfg[K_COST_CLOCK]
    for _ in range(2 if ahi else 1):
        r = peek_if_too_old(pst, ist, cnt, cfg, i, f, t_ns)
        if r & 2:
            t_ns += cfg[K_COST_CLOCK]
            sst[k, T_CPU] += cfg[K_COST_CLOCK]
        if r & 1:
            make_block_young(pst, stat, ist, cnt, cfg, i, f)
            t_ns += cfg[K_COST_YOUNG]
            sst[k, T_CPU] += cfg[K_COST_YOUNG]
    if first and not ahi and (not btr or kind == 0 or kind == FLAG_STEP) \
            and ra_site(stat, pm, glob, cfg, p):
        t_ns = read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, k, t_ns)
    if flags & FLAG_MODIFY:
        modify(pst, ist, cnt, glob, cfg, i, f, flags)
    glob[G_FIXED] = -1
    if btr:
        sst[k, T_PREV_FIRST] = p + 1 if first else 0
    return t_ns
