"""The I/O device: one disk head, a service time per request, and an I/O scheduler.

The engine decides a read's completion time when the read is *issued* (a stream that
misses knows at once how long it waits; a read-ahead page is stamped with the time it
lands).  A scheduler here can therefore not move a request that is already booked;
it decides only where a *new* request goes: after everything booked (FIFO), or into a
window reserved after the current holder of the device has been served longer.

Service time (``skip_pricing``)
    A read of page ``last + 1`` of the same tablespace, ``last`` being the page the
    head read before, is *sequential* (``seq_read_ns``: transfer only); any other read
    is *random* (``random_read_ns``: seek, rotation and transfer).  With
    ``skip_pricing="distance"`` a forward read of page ``last + d`` (``d > 1``, same
    tablespace) costs ``min(random_read_ns, d * seq_read_ns)``: the head stays on its
    track and lets the ``d - 1`` skipped pages rotate past, which takes as long as
    transferring them.  Source: the disk service-time model of Ruemmler & Wilkes, "An
    introduction to disk drive modeling", IEEE Computer 27(3), 1994: a request costs
    seek + rotational latency + transfer, and a request on the track under the head
    needs no seek, only the rotation to its sector.  ``d = 1`` is the sequential
    price, a skip longer than ``random / seq`` pages (116 on ``hdd7200``) the random
    one; head and track switches within such a skip are not charged.

Schedulers (``DeviceModel.scheduler``)
    ``fifo``
        One queue in issue order (the model before the schedulers existed, bit for bit).
    ``cfq``
        Linux CFQ (``block/cfq-iosched.c``, Linux 2.6.33-3.x; Documentation/block/
        cfq-iosched.txt): one queue per stream (a stream is one thread's I/O context);
        the queue being served holds the device for a time slice of ``slice_sync``
        (``cfq_slice_sync = HZ / 10``, 100 ms), and when it runs empty the scheduler
        *idles* up to ``slice_idle`` (``cfq_slice_idle = HZ / 125``, 8 ms) waiting for
        its next request, unless the queue is *seeky*: more than 4 of its last 32 reads
        (``CFQQ_SEEKY``: ``hweight32(seek_history) > 32 / 8``) started more than 800
        sectors (``CFQQ_SEEK_THR``, 400 KiB, 25 pages of 16 KiB) away from the queue's
        previous read, or in another tablespace.  A new queue starts not seeky.
    ``deadline``
        Linux deadline (``block/deadline-iosched.c``; Documentation/block/
        deadline-iosched.txt): requests are dispatched in block order, one way, so a
        stream that keeps requests queued ahead of the head is served on and on; a read
        older than ``read_expire`` (``HZ / 2``, 500 ms) is dispatched first when the
        batch in progress ends (``fifo_batch`` = 16 requests).

The one mechanism (issue-time approximation)
    The device has a *holder*: the stream of the last read booked in issue order.  A
    read of another stream, issued at ``t`` while the holder keeps the device, does
    not go after the booked work but into a window reserved from ``rstart``:

    * cfq: the holder keeps the device if it is not seeky, ``t`` is before its slice
      ends and its last read completed less than ``slice_idle`` before ``t`` (or is
      still in flight): ``rstart`` = the slice's end.
    * deadline: the holder keeps the device if its last read is still in flight at
      ``t`` and its queue has not run empty for at least ``read_expire`` before ``t``
      (each of its issues since then found earlier reads of it still queued): its
      next request is already there, ahead of the head, whenever the elevator picks
      the next one, and it is predicted to stay so for another ``read_expire``.  A
      stream that reads one page at a time, or issues a read-ahead batch once the
      previous one has landed, lets its queue run empty and does not keep the device.
      (Taking one ``read_expire`` of streaming as the evidence is this model's
      predictor, not a Linux rule.)  ``rstart`` = ``t + read_expire``, the read's
      expiry.

    The holder's later reads fill the time before ``rstart`` (each one only if it
    ends by ``rstart``); reads of other streams queue after the reserved ones, in
    issue order.  A holder's read that does not fit goes after the reserved reads and
    starts a new slice (cfq: ``slice_sync`` from its start).  Once ``t`` passes
    ``rstart`` the reservation is over and the stream of the last reserved read
    holds the device.  Writes (page cleaner, single-page flush) are booked after
    everything, in issue order, and change no holder.

What it leaves out
    It assumes the holder goes on reading until the window: if the holder stops
    (cfq: idles longer than ``slice_idle``; deadline: its queue runs empty) after a
    reservation was made, the reserved reads still wait for ``rstart`` and the
    device idles before it.  Requests already booked are never reordered, so the
    elevator's block order does not let a new read overtake queued ones.  Not
    modelled: CFQ's workload classes (sync / sync-noidle / async service trees and
    their shares), ioprio slice scaling, preemption, ``low_latency`` slice capping,
    the think-time test of idling and ``cfq_quantum``; deadline's write batches and
    ``writes_starved``, request merging, and the rest of the batch in progress when
    a read expires (at most ``fifo_batch`` - 1 reads).

State: ``glob[G_DEVFREE]`` (end of all booked work), ``glob[G_DEVLAST]`` (the page at
its end, -1 none or a write), ``glob[G_DEVBUSY]``, ``glob[G_DEV_*]`` (the holder, the
end of its last read, its last page, the reserved window, the slice end, the start of
the holder's busy run (deadline) and the last reserved stream; ids and pages stored + 1 so that 0 means none), and per
stream ``sst[k, T_DEVLAST]`` (last page + 1) and ``sst[k, T_SEEKS]`` (seek history).
:class:`RefDevice` is the pure-Python twin; tests compare the two request by request.
"""
from __future__ import annotations

from numba import njit

from ._state import (
    G_DEV_BUSYSINCE, G_DEV_OFREE, G_DEV_OLAST, G_DEV_OWNER, G_DEV_RSTART,
    G_DEV_ROWNER, G_DEV_SLICE, G_DEVBUSY, G_DEVFREE, G_DEVLAST, K_DEV_EXPIRE, K_DEV_IDLE, K_DEV_RAND,
    K_DEV_SCHED, K_DEV_SEQ, K_DEV_SKIP, K_DEV_SLICE, K_DEV_WRITE, dense_of, space_pos,
    SCHED_CODES, SKIP_CODES, T_DEVLAST, T_SEEKS,
)

__all__ = ["device_read", "device_write", "RefDevice", "SCHEDULERS",
           "SKIP_PRICINGS", "CFQ_SEEK_PAGES", "CFQ_SEEKY_MIN"]

SCHEDULERS = tuple(SCHED_CODES)
SKIP_PRICINGS = tuple(SKIP_CODES)
SCHED_FIFO, SCHED_DEADLINE, SCHED_CFQ = 0, 1, 2
#: CFQQ_SEEK_THR = 8 * 100 sectors of 512 bytes = 400 KiB = 25 pages of 16 KiB: a read
#: farther than this from the queue's previous one is a seek (cfq_update_io_seektime)
CFQ_SEEK_PAGES = 8 * 100 * 512 // 16384
#: CFQQ_SEEKY: more than 32 / 8 seeks among the last 32 reads
CFQ_SEEKY_MIN = 32 // 8 + 1
_HIST_MASK = (1 << 32) - 1


# ---- service time ------------------------------------------------------------------------
@njit(_nrt=False, cache=True, inline="always")
def _svc(stat, pm, cfg, p, last):
    """Service time of a read of page p after a read of page ``last`` (-1: none)."""
    rnd = cfg[K_DEV_RAND]
    seq = cfg[K_DEV_SEQ]
    if seq == rnd or last < 0 or space_pos(stat, pm, p) != space_pos(stat, pm, last):
        return rnd
    d = dense_of(stat, p) - dense_of(stat, last)
    if d == 1:
        return seq
    if d > 1 and cfg[K_DEV_SKIP] != 0:
        return min(rnd, d * seq)
    return rnd


@njit(_nrt=False, cache=True)
def _popcount32(x):
    c = 0
    while x != 0:
        x &= x - 1
        c += 1
    return c


@njit(_nrt=False, cache=True)
def _sched_read(stat, pm, sst, glob, cfg, p, k, t_ns):
    """A read of page p by stream k at t_ns under deadline or cfq (module docstring)."""
    # per-stream seek history (CFQ's seeky test)
    prev = sst[k, T_DEVLAST] - 1
    seek = 0
    if prev >= 0 and (space_pos(stat, pm, p) != space_pos(stat, pm, prev)
                      or abs(dense_of(stat, p) - dense_of(stat, prev)) > CFQ_SEEK_PAGES):
        seek = 1
    sst[k, T_SEEKS] = ((sst[k, T_SEEKS] << 1) | seek) & _HIST_MASK
    sst[k, T_DEVLAST] = p + 1
    rstart = glob[G_DEV_RSTART]
    if rstart > 0 and t_ns >= rstart:
        # the window has begun: the reservation is over, its last stream holds the device
        glob[G_DEV_RSTART] = 0
        rstart = 0
        glob[G_DEV_OWNER] = glob[G_DEV_ROWNER]
        glob[G_DEV_OFREE] = glob[G_DEVFREE]
        glob[G_DEV_OLAST] = glob[G_DEVLAST] + 1
        glob[G_DEV_BUSYSINCE] = t_ns
    owner = glob[G_DEV_OWNER] - 1
    if rstart > 0:
        if k == owner:
            svc = _svc(stat, pm, cfg, p, glob[G_DEV_OLAST] - 1)
            start = max(t_ns, glob[G_DEV_OFREE])
            if start + svc <= rstart:
                # the holder's read fills the time before the window
                glob[G_DEV_OFREE] = start + svc
                glob[G_DEV_OLAST] = p + 1
                glob[G_DEVBUSY] += svc
                return start + svc
            glob[G_DEV_RSTART] = 0  # it does not fit: after the reserved reads, new slice
            glob[G_DEV_SLICE] = 0
        else:
            # another stream: after the reserved reads, in issue order
            return _book_reserved(stat, pm, glob, cfg, p, k, max(t_ns, glob[G_DEVFREE]))
    elif owner >= 0 and owner != k:
        ofree = glob[G_DEV_OFREE]
        if cfg[K_DEV_SCHED] == SCHED_CFQ:
            seeky = _popcount32(sst[owner, T_SEEKS]) >= CFQ_SEEKY_MIN
            holds = (not seeky) and t_ns < glob[G_DEV_SLICE] and t_ns <= ofree + cfg[K_DEV_IDLE]
            window = glob[G_DEV_SLICE]
        else:
            holds = t_ns < ofree and t_ns - glob[G_DEV_BUSYSINCE] >= cfg[K_DEV_EXPIRE]
            window = t_ns + cfg[K_DEV_EXPIRE]
        if holds:
            # a window is reserved; the holder keeps filling the time before it
            start = max(window, glob[G_DEVFREE])
            glob[G_DEV_RSTART] = start
            return _book_reserved(stat, pm, glob, cfg, p, k, start)
    # after everything booked, in issue order; stream k holds the device
    svc = _svc(stat, pm, cfg, p, glob[G_DEVLAST])
    start = max(t_ns, glob[G_DEVFREE])
    if k != owner:
        glob[G_DEV_BUSYSINCE] = t_ns
        glob[G_DEV_SLICE] = start + cfg[K_DEV_SLICE]
    else:
        if t_ns >= glob[G_DEV_OFREE]:
            glob[G_DEV_BUSYSINCE] = t_ns     # its queue had run empty
        if start >= glob[G_DEV_SLICE]:
            glob[G_DEV_SLICE] = start + cfg[K_DEV_SLICE]
    glob[G_DEVFREE] = start + svc
    glob[G_DEVLAST] = p
    glob[G_DEVBUSY] += svc
    glob[G_DEV_OWNER] = k + 1
    glob[G_DEV_OFREE] = start + svc
    glob[G_DEV_OLAST] = p + 1
    return start + svc


@njit(_nrt=False, cache=True, inline="always")
def _book_reserved(stat, pm, glob, cfg, p, k, start):
    """Book stream k's read of page p at ``start`` in the window reserved for streams
    other than the holder (k then holds the next slice); returns its completion."""
    svc = _svc(stat, pm, cfg, p, glob[G_DEVLAST])
    glob[G_DEVFREE] = start + svc
    glob[G_DEVLAST] = p
    glob[G_DEVBUSY] += svc
    glob[G_DEV_ROWNER] = k + 1
    glob[G_DEV_SLICE] = start + cfg[K_DEV_SLICE]
    return start + svc


@njit(_nrt=False, cache=True, inline="always")
def device_read(stat, pm, sst, glob, cfg, p, k, t_ns):
    """Queue a 16 KiB read of page p (a local id) by stream k at t_ns; return its
    completion time."""
    if cfg[K_DEV_SCHED] != SCHED_FIFO:
        return _sched_read(stat, pm, sst, glob, cfg, p, k, t_ns)
    last = glob[G_DEVLAST]
    # the sequential test reads the pages' static facts: only when it can matter
    if cfg[K_DEV_SKIP] != 0:
        svc = _svc(stat, pm, cfg, p, last)
    elif cfg[K_DEV_SEQ] != cfg[K_DEV_RAND] and last >= 0 and \
            dense_of(stat, p) == dense_of(stat, last) + 1 and \
            space_pos(stat, pm, p) == space_pos(stat, pm, last):
        svc = cfg[K_DEV_SEQ]
    else:
        svc = cfg[K_DEV_RAND]
    start = max(t_ns, glob[G_DEVFREE])
    glob[G_DEVFREE] = start + svc
    glob[G_DEVLAST] = p
    glob[G_DEVBUSY] += svc
    return start + svc


@njit(_nrt=False, cache=True, inline="always")
def device_write(glob, cfg, t_ns):
    """Queue a page write at time t_ns (after everything booked, under every
    scheduler); return its completion time."""
    start = max(t_ns, glob[G_DEVFREE])
    glob[G_DEVFREE] = start + cfg[K_DEV_WRITE]
    glob[G_DEVLAST] = -1
    glob[G_DEVBUSY] += cfg[K_DEV_WRITE]
    return start + cfg[K_DEV_WRITE]


# ---- the pure-Python twin ------------------------------------------------------------------
class RefDevice:
    """The device of :func:`device_read` / :func:`device_write` in plain Python, written
    from the module docstring.  Pages are named by ``(space, page_no)`` pairs through
    ``page_key(p) -> (space, position)``; ``device`` is a :class:`bufsim.DeviceModel`."""

    def __init__(self, device, page_key):
        self.d = device
        self.key = page_key
        self.free = 0          # end of all booked work
        self.last = None       # page at its end (None: nothing yet, or a write)
        self.busy = 0
        self.holder = None     # stream holding the device
        self.hold_done = 0     # end of the holder's last read
        self.hold_last = None  # the holder's last page
        self.window = None     # start of the reserved window
        self.window_stream = None
        self.slice_end = 0
        self.busy_since = 0    # the holder's queue has not run empty since
        self.stream_last = {}
        self.seeks = {}

    def service(self, p, last) -> int:
        d = self.d
        if last is None or d.seq_read_ns == d.random_read_ns:
            return d.random_read_ns
        (sp, a), (sl, b) = self.key(p), self.key(last)
        if sp != sl:
            return d.random_read_ns
        if a - b == 1:
            return d.seq_read_ns
        if a - b > 1 and d.skip_pricing == "distance":
            return min(d.random_read_ns, (a - b) * d.seq_read_ns)
        return d.random_read_ns

    def seeky(self, k) -> bool:
        return bin(self.seeks.get(k, 0)).count("1") > 32 // 8

    def _append(self, p, t):
        svc = self.service(p, self.last)
        start = max(t, self.free)
        self.free = start + svc
        self.last = p
        self.busy += svc
        return start, svc

    def read(self, p, k, t) -> int:
        """Book a read of page p by stream k issued at t; its completion time."""
        d = self.d
        if d.scheduler == "fifo":
            start, svc = self._append(p, t)
            return start + svc
        prev = self.stream_last.get(k)
        seek = prev is not None and (self.key(p)[0] != self.key(prev)[0]
                                     or abs(self.key(p)[1] - self.key(prev)[1]) > 25)
        self.seeks[k] = ((self.seeks.get(k, 0) << 1) | int(seek)) & 0xFFFFFFFF
        self.stream_last[k] = p
        if self.window is not None and t >= self.window:
            self.window = None
            self.holder = self.window_stream
            self.hold_done = self.free
            self.hold_last = self.last
            self.busy_since = t
        if self.window is not None:
            if k == self.holder:
                svc = self.service(p, self.hold_last)
                start = max(t, self.hold_done)
                if start + svc <= self.window:
                    self.hold_done = start + svc
                    self.hold_last = p
                    self.busy += svc
                    return start + svc
                self.window = None
                self.slice_end = 0
            else:
                start, svc = self._append(p, t)
                self.window_stream = k
                self.slice_end = start + d.slice_sync_ns
                return start + svc
        elif self.holder is not None and self.holder != k:
            if d.scheduler == "cfq":
                holds = (not self.seeky(self.holder) and t < self.slice_end
                         and t <= self.hold_done + d.slice_idle_ns)
                window = self.slice_end
            else:
                holds = t < self.hold_done and t - self.busy_since >= d.read_expire_ns
                window = t + d.read_expire_ns
            if holds:
                start = max(window, self.free)
                svc = self.service(p, self.last)
                self.window = start
                self.free = start + svc
                self.last = p
                self.busy += svc
                self.window_stream = k
                self.slice_end = start + d.slice_sync_ns
                return start + svc
        svc = self.service(p, self.last)
        start = max(t, self.free)
        if k != self.holder:
            self.busy_since = t
            self.slice_end = start + d.slice_sync_ns
        else:
            if t >= self.hold_done:
                self.busy_since = t
            if start >= self.slice_end:
                self.slice_end = start + d.slice_sync_ns
        self.free = start + svc
        self.last = p
        self.busy += svc
        self.holder = k
        self.hold_done = start + svc
        self.hold_last = p
        return start + svc

    def write(self, t) -> int:
        """Book a page write issued at t; its completion time."""
        start = max(t, self.free)
        self.free = start + self.d.write_ns
        self.last = None
        self.busy += self.d.write_ns
        return start + self.d.write_ns
