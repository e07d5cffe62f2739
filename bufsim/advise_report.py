"""The report of :func:`bufsim.advise.advise`: its answer lines with their reasons, its
sections (streams, pool size, old_blocks_time, instances, assumptions) as blocks, Markdown
and HTML rendering, and its figures.

:func:`render` turns the :class:`Facts` that :func:`bufsim.advise.advise` computed into a
:class:`Report`; nothing here computes a number the report states.
"""
from __future__ import annotations

import html as _html
from dataclasses import dataclass, field

import pandas as pd

from .config import PAGE_SIZE

__all__ = ["Report", "Facts", "render", "mib", "rel", "fixed"]

_MIB_PAGES = 2**20 // PAGE_SIZE          # 64
#: old_blocks_pct values tried besides the default (37) at the recommended size.
OLD_PCT_ALTERNATIVES = (20, 50)
#: old_blocks_time values replayed (ms): InnoDB's two documented settings.
OBT_VALUES = (0, 1000)


def mib(pages) -> str:
    """``pages`` of 16 KiB in MiB, as the report writes it."""
    return f"{pages / _MIB_PAGES:,.0f} MiB" if pages % _MIB_PAGES == 0 else \
        f"{pages / _MIB_PAGES:,.2f} MiB"


@dataclass
class Report:
    """The result of :func:`advise`: the numbers, and the report as text.

    Attributes
    ----------
    recommended_pages : int
        Recommended pool size in pages.
    recommended_old_blocks_time : int
        Recommended ``innodb_old_blocks_time`` in ms.
    recommended_instances : int or None
        None when the instance count was not assessed.
    streams : DataFrame
        Per stream: the profile, ``read_ahead_share``, ``kind``, ``why`` and
        ``protected``.
    curve : DataFrame
        The replays: one row per pool size (``pool_pages``: innodb_buffer_pool_size in
        16 KiB pages; ``frames``: the frames the server has for it, which were
        replayed), ``old_blocks_time_ms``, ``old_blocks_pct`` and stream (``'all'`` for
        totals), with ``gets``, ``misses`` (synchronous reads), ``read_ahead``,
        ``hit_ratio``, ``io_wait_ns`` and ``elapsed_ns``.
    old_blocks_time : DataFrame
        Per size of the old_blocks_time section and stream: reads and I/O wait
        with 0 and 1000 ms.
    instances : DataFrame
        Per instance count: throughput, hottest instance's share of the pool
        mutex demand, the bottleneck station and its utilization (empty when
        not assessed).
    candidates : dict
        ``old_blocks_time_ms -> size`` chosen by the rule with that setting.
    blocks : list
        ``(kind, content)`` blocks of the report: ``h1``, ``h2``, ``p``, ``ul``
        (a list of str), ``table`` (a DataFrame) and ``figure`` (a name of
        ``figures``).
    figures : dict
        Name -> Altair chart.
    """

    recommended_pages: int
    recommended_old_blocks_time: int
    recommended_instances: int | None
    streams: pd.DataFrame
    curve: pd.DataFrame
    old_blocks_time: pd.DataFrame
    instances: pd.DataFrame
    candidates: dict = field(default_factory=dict)
    blocks: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)

    def markdown(self, figure_files: dict | None = None) -> str:
        """The report as Markdown; ``figure_files`` maps a figure's name to the image
        path to link (figures without one are left out)."""
        out = []
        for kind, content in self.blocks:
            if kind == "h1":
                out.append(f"# {content}\n")
            elif kind == "h2":
                out.append(f"## {content}\n")
            elif kind == "p":
                out.append(content + "\n")
            elif kind == "ul":
                out.append("\n".join(f"- {x}" for x in content) + "\n")
            elif kind == "table":
                cols = list(content.columns)
                lines = ["| " + " | ".join(map(str, cols)) + " |",
                         "|" + "|".join("---" for _ in cols) + "|"]
                for row in content.itertuples(index=False):
                    lines.append("| " + " | ".join(map(str, row)) + " |")
                out.append("\n".join(lines) + "\n")
            elif kind == "figure" and figure_files and content in figure_files:
                out.append(f"![{content}]({figure_files[content]})\n")
        return "\n".join(out)

    def render_figures(self, directory, stem: str = "advice") -> dict:
        """Write every figure as ``STEM-NAME.png`` and ``.svg`` into ``directory``
        (:func:`bufsim.figures.write_figure`); returns name -> PNG path."""
        from .figures import write_figure
        out = {}
        for name, (chart, w, h) in self.figures.items():
            out[name] = write_figure(chart, f"{stem}-{name}", width=w, height=h,
                                     directory=directory)["png"]
        return out

    def html(self) -> str:
        """The report as a standalone HTML page, figures embedded as PNG."""
        import base64
        import tempfile
        e = _html.escape
        pngs = {}
        if self.figures:
            with tempfile.TemporaryDirectory(prefix="bufsim-advice-") as d:
                for name, path in self.render_figures(d).items():
                    pngs[name] = base64.b64encode(path.read_bytes()).decode()
        body = []
        for kind, content in self.blocks:
            if kind in ("h1", "h2", "p"):
                body.append(f"<{kind}>{_inline_html(content)}</{kind}>")
            elif kind == "ul":
                body.append("<ul>" + "".join(f"<li>{_inline_html(x)}</li>" for x in content)
                            + "</ul>")
            elif kind == "table":
                head = "".join(f"<th>{e(str(c))}</th>" for c in content.columns)
                rows = "".join("<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in r) + "</tr>"
                               for r in content.itertuples(index=False))
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
            elif kind == "figure" and content in pngs:
                w = self.figures[content][1]
                body.append(f'<figure><img alt="{e(content)}" style="max-width:100%;width:{w}px" '
                            f'src="data:image/png;base64,{pngs[content]}"></figure>')
        h1 = [c for k, c in self.blocks if k == "h1"]
        title = e(h1[0]) if h1 else "bufsim advice"
        style = ("body{font-family:sans-serif;max-width:64em;margin:2em auto;line-height:1.4}"
                 "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
                 "text-align:right}code{background:#f4f4f4}")
        return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
                f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _inline_html(text: str) -> str:
    """Escape, then turn `code` spans into <code> and **x** into <b>."""
    parts = _html.escape(text).split("`")
    text = "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
    parts = text.split("**")
    return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))


def fixed(x, digits=4):
    """``x`` with ``digits`` decimals."""
    return f"{x:.{digits}f}"


def rel(a, b) -> str:
    """``a`` relative to ``b`` as a signed percentage."""
    return f"{(a - b) / b:+.0%}" if b else ("+0%" if a == b else "+inf")


@dataclass
class Facts:
    """What :func:`bufsim.advise.advise` found, as the report states it (the names are
    those of its steps)."""

    label: str
    preset: str
    device: str
    base: object                 # the preset's PoolConfig
    min_pages: int               # the version's smallest pool
    gets: int
    n_threads: int
    fp: int                      # footprint, pages
    top: int                     # the footprint rounded up to a whole MiB
    margin: float
    criterion: str
    streams: pd.DataFrame
    protected: list
    how: str                     # why these streams are protected
    lru_rows: list
    tab: pd.DataFrame            # the size grid's replays
    grid: list
    cand: dict
    limits: dict
    ref_at: int
    rec: int
    obt: int
    at_rec: dict
    shown: list
    obt_tab: pd.DataFrame
    protects: list
    pct_sizes: list
    pct_moves: list
    curve: pd.DataFrame
    inst: pd.DataFrame
    rec_n: int | None
    inst_note: str
    current_pages: int | None = None
    assumptions: list = field(default_factory=list)
    ws: dict = field(default_factory=dict)   # each stream's LRU working set, pages
    rec_frames: int | None = None            # the frames replayed for the recommended size

    def val(self, s, t, st, col="misses", pct=None) -> int:
        """The replay's ``col`` at size ``s``, old_blocks_time ``t``, stream ``st``."""
        key = getattr(self, "_key", None)
        if key is None:
            key = self._key = self.tab.set_index(
                ["pool_pages", "old_blocks_time_ms", "old_blocks_pct", "stream"])
        return int(key.loc[(s, t, self.base.old_blocks_pct if pct is None else pct, st), col])


def _reasons(f: Facts) -> tuple[str, str]:
    """The reasons of the pool size and of old_blocks_time on the report's first lines."""
    protected, limits, obt, rec, margin = f.protected, f.limits, f.obt, f.rec, f.margin
    knee_rule, criterion, how, top, cand = "best" in f.cand, f.criterion, f.how, f.top, f.cand
    at_rec, default_obt, val, ref_at = f.at_rec, f.base.old_blocks_time_ms, f.val, f.ref_at
    min_pages = f.min_pages
    prot_txt = ", ".join(f"`{p}`" for p in protected) if protected else "none"
    if protected:
        lim_txt = []
        for st in protected:
            lk = "best" if knee_rule else obt
            kind, lim = limits[lk][st] if lk in limits and st in limits[lk] else ("misses", 0)
            lim_txt.append(f"`{st}` reaches hit ratio {lim:g}" if kind == "hit" else
                           f"`{st}` waits for I/O at most {lim / 1e9:,.2f} s" if kind == "wait"
                           else f"`{st}` reads {lim:,.0f} pages (I/O wait "
                           f"{val(rec, obt, st, 'io_wait_ns') / 1e9:,.2f} s of "
                           f"{val(rec, obt, st, 'elapsed_ns') / 1e9:,.2f} s elapsed)"
                           if kind == "knee"
                           else f"`{st}` reads at most {lim:,.0f} pages")
        ref_what = (f"the largest size below the footprint, {mib(ref_at)}" if ref_at != top
                    else f"the footprint, {mib(top)}")
        within = (f"within {margin:.0%} of what {ref_what}, gives "
                  f"{'it' if len(protected) == 1 else 'them'} with the better old_blocks_time"
                  if criterion in ("reads", "knee") else
                  f"at most {margin:.0%} of its virtual elapsed time more I/O wait than at "
                  f"{ref_what.split(', ')[-1]} with the better old_blocks_time")
        kinds = {limits["best"][st][0] for st in protected if st in limits["best"]} \
            if knee_rule else set()
        them = "its" if len(protected) == 1 else "their"
        ws_txt = ", ".join(f"`{st}` alone comes within {margin:.0%} of its footprint's LRU "
                           f"misses at {mib(f.ws[st])}" for st in protected if st in f.ws)
        if "knee" in kinds:
            size_reason = (
                f"the end of the cliff of {them} synchronous reads (with the better "
                f"old_blocks_time at each size, from {mib(min_pages)} to {ref_what}) where "
                f"{them} own working set fits ({ws_txt}): up to it each step cut {them} reads "
                "by a larger factor per doubling of the pool than the average step does, the "
                f"next step does not; there {' and '.join(lim_txt)} with old_blocks_time "
                f"{obt}" + (" (a hit-ratio target asked for at least this size)"
                            if "hit" in kinds else "")
                + f"; protected streams: {prot_txt} ({how})")
        elif knee_rule:
            size_reason = (
                f"no cliff of {them} synchronous reads ends where {them} own working set fits "
                f"({ws_txt}), so the smallest replayed size where {' and '.join(lim_txt)} with "
                f"old_blocks_time {obt} ({within}); protected streams: {prot_txt} ({how})")
        else:
            size_reason = (f"the smallest replayed size where {' and '.join(lim_txt)} with "
                           f"old_blocks_time {obt} ({within}); "
                           f"protected streams: {prot_txt} ({how})")
    else:
        size_reason = (f"no stream is latency-bound, so the size is the smallest whose total "
                       f"reads are within {margin:.0%} of the fewest below the footprint: a "
                       "scan's cliff at the footprint is not worth buying")
    other = 1000 if obt == 0 else 0
    if knee_rule and obt != default_obt or knee_rule and at_rec[other] > (1 + margin) * at_rec[obt]:
        obt_reason = (f"at {mib(rec)} it gives the protected streams {at_rec[obt]:,} reads "
                      f"against {at_rec[other]:,} with {other} ms "
                      f"({rel(at_rec[obt], at_rec[other])})")
    elif knee_rule:
        obt_reason = (f"the version default: at {mib(rec)} 0 and 1000 ms differ by less than "
                      f"{margin:.0%} for the protected streams")
    elif cand[0] != cand[1000]:
        alt_txt = (f"with {other} ms the same rule needs "
                   + (mib(cand[other]) if cand[other] is not None else "more than the footprint"))
        obt_reason = f"it lets the pool be {mib(rec)}; {alt_txt}"
    elif obt != default_obt:
        obt_reason = (f"at {mib(rec)} it gives " + ("the protected streams" if protected else
                                                      "all streams")
                      + f" {at_rec[obt]:,} reads against {at_rec[other]:,} with {other} ms")
    else:
        obt_reason = (f"the version default: at {mib(rec)} 0 and 1000 ms differ by less than "
                      f"{margin:.0%} for " + ("the protected streams" if protected else
                                              "the total reads"))

    return size_reason, obt_reason


def render(f: Facts) -> Report:
    """The report of ``f``: the answer first, then each section."""
    size_reason, obt_reason = _reasons(f)
    (rec, obt, margin, protected, base, preset, version) = (
        f.rec, f.obt, f.margin, f.protected, f.base, f.preset, f.base.version)
    (inst_note, label, gets, n_threads, fp, top, device, streams, grid, lru_rows, tab) = (
        f.inst_note, f.label, f.gets, f.n_threads, f.fp, f.top, f.device, f.streams, f.grid,
        f.lru_rows, f.tab)
    (cand, shown, obt_tab, protects, pct_moves, pct_sizes, inst, assumptions, rec_n) = (
        f.cand, f.shown, f.obt_tab, f.protects, f.pct_moves, f.pct_sizes, f.inst,
        f.assumptions, f.rec_n)
    knee_rule, default_obt, curve = "best" in cand, base.old_blocks_time_ms, f.curve
    min_pages = f.min_pages
    b: list = [("ul", [
        f"**innodb_buffer_pool_size = {mib(rec)}** ({rec:,} pages of 16 KiB"
        + (f", {f.rec_frames:,} frames once the block descriptors have their part"
           if f.rec_frames and f.rec_frames != rec else "") + f"): {size_reason}.",
        f"**innodb_old_blocks_time = {obt}**: {obt_reason}.",
        f"**innodb_buffer_pool_instances**: {inst_note}",
    ])]
    b.append(("h1", f"bufsim advice for {label}"))
    b.append(("p", f"{gets:,} page gets by {n_threads} stream(s) over {fp:,} distinct pages "
                   f"({mib(fp)}); preset {preset} (MySQL/MariaDB {version}: old_blocks_time "
                   f"{default_obt} ms, old_blocks_pct {base.old_blocks_pct}, read-ahead "
                   f"threshold {base.read_ahead_threshold}, adaptive hash index "
                   f"{'on' if base.adaptive_hash_index else 'off'}), device {device}; "
                   "every number below is computed from this trace."))
    b.append(("h2", "Streams"))
    b.append(("p", "Which thread bears latency: the profile of each stream from the trace, and "
                   f"the share of its pages that read-ahead brought in the {mib(min_pages)} "
                   "replay."))
    b.append(("table", pd.DataFrame({
        "stream": streams["name"], "gets": [f"{x:,}" for x in streams["gets"]],
        "pages": [f"{x:,}" for x in streams["pages"]],
        "sequential": [f"{x:.0%}" for x in streams["sequential"]],
        "one-touch": [f"{x:.0%}" for x in streams["one_touch"]],
        "read-ahead share": [f"{x:.0%}" for x in streams["read_ahead_share"]],
        "reuse p50 / p90 (pages)": [f"{a:,} / {c:,}" if a >= 0 else "n/a"
                                    for a, c in zip(streams["reuse_p50"], streams["reuse_p90"])],
        "kind": streams["kind"],
        "protected": ["yes" if x else "no" for x in streams["protected"]]})))
    b.append(("ul", [f"`{n}`: {w}" for n, w in zip(streams["name"], streams["why"])]))

    b.append(("h2", "Pool size"))
    b.append(("p", f"InnoDB replays (one instance, midpoint insertion, linear read-ahead) at "
                   f"{len(grid)} sizes from {mib(min_pages)} ({base.server.server}'s minimum) "
                   f"to the footprint {mib(top)}, each with old_blocks_time 0 and 1000 ms. The "
                   f"grid doubles from {mib(min_pages)}; each latency-bound stream's own exact "
                   "LRU curve added the sizes below (where it chose to look and which cliff "
                   "is its own working set's, not the answer); the grid was then refined below "
                   "the candidate. Synchronous reads are gets that waited for their page; pages "
                   "read ahead are not among them."))
    if lru_rows:
        b.append(("table", pd.DataFrame(lru_rows)))
    cand_txt = "; ".join(f"with {t} ms: " + (mib(v) if v is not None else "none")
                         for t, v in cand.items() if t != "best")
    if knee_rule:
        b.append(("p", "The end of the cliff of the protected streams' reads where their "
                       f"working sets fit — {cand_txt}; with the better setting at each size: "
                       f"{mib(rec)}."))
    else:
        b.append(("p", f"Smallest size meeting the rule — {cand_txt}."))
    b.append(("figure", "curves"))
    piv = tab[tab["stream"] != "all"].pivot_table(index="pool_pages",
                                                  columns=["stream", "old_blocks_time_ms"],
                                                  values="misses", aggfunc="first")
    ptab = pd.DataFrame({"pool": [mib(s) for s in piv.index], "pages": piv.index})
    for st in shown:
        for t in OBT_VALUES:
            ptab[f"{st} reads ({t} ms)"] = [f"{int(x):,}" for x in piv[(st, t)]]
    b.append(("table", ptab))

    b.append(("h2", "old_blocks_time"))
    b.append(("p", f"Reads (synchronous) and I/O wait per stream with old_blocks_time 0 and 1000 "
                   f"ms (the {version} default is {default_obt} ms) at the recommended size and "
                   "one and two grid steps below" + (" and at the current pool"
                                                     if f.current_pages else "") + "."))
    b.append(("table", obt_tab))
    if protects:
        where = sorted({s for s, *_ in protects})
        st_names = sorted({st for _, st, *_ in protects})
        s0, st0, r0, r1 = max(protects, key=lambda x: (x[2] - x[3]) / max(x[2], 1))
        b.append(("p", f"old_blocks_time 1000 protects {', '.join(f'`{x}`' for x in st_names)} "
                       f"at {', '.join(mib(x) for x in where)}: there a page read once by "
                       f"a scan stays in the old sublist and leaves first, instead of pushing the "
                       f"re-used pages out (`{st0}` at {mib(s0)}: {r0:,} reads with 0 ms, "
                       f"{r1:,} with 1000 ms)."))
    elif protected:
        b.append(("p", "old_blocks_time does not protect the protected streams here: at these "
                       f"sizes 1000 ms changes their reads by less than {margin:.0%} (or adds "
                       "reads)."))
    else:
        b.append(("p", "No stream is protected, so old_blocks_time is judged on the totals only."))
    if pct_moves:
        lines = [f"old_blocks_pct {pct} at {mib(s)}: `{st}` reads {m:,} against {ref:,} with "
                 f"{base.old_blocks_pct} ({rel(m, ref)})" for s, pct, st, ref, m in pct_moves]
        b.append(("p", f"old_blocks_pct moves the answer by more than {margin:.0%} "
                       f"(old_blocks_time {obt} ms):"))
        b.append(("ul", lines))
    else:
        b.append(("p", f"old_blocks_pct {' and '.join(map(str, OLD_PCT_ALTERNATIVES))} change the "
                       f"protected streams' reads by less than {margin:.0%} at "
                       f"{' and '.join(mib(x) for x in pct_sizes)} (old_blocks_time {obt} ms): "
                       f"keep {base.old_blocks_pct}."))

    b.append(("h2", "Instances"))
    b.append(("p", inst_note))
    if len(inst):
        b.append(("p", f"Exact MVA of a closed network: a CPU station, one mutex station per "
                       "buffer-pool instance, the adaptive-hash-index latch and the kernel "
                       "(lock-system) mutex. Each instance count is replayed at "
                       f"{mib(rec)} with old_blocks_time {obt} ms to count its gets, reads and "
                       "make-young moves per instance."))
        b.append(("table", inst))
        b.append(("figure", "instances"))
        b.append(("p", "Assumptions of the contention model (defaults of "
                       "`bufsim.contention.Costs`, orders of magnitude, not measurements of "
                       "your server; calibrate them as notebooks 03 and 04 do):"))
        b.append(("ul", assumptions))
    b.append(("h2", "Assumptions of the replays"))
    b.append(("ul", [
        f"one buffer-pool instance, the {preset} preset's other settings, device `{device}`",
        f"each size is replayed with the frames {base.server.server} has for that "
        "innodb_buffer_pool_size (its chunk or extent layout: `bufsim.pages_from_bytes`), "
        "at least 320",
        "streams interleave by their own virtual clocks as the trace gives them (start times, "
        "CPU per get); the device is shared",
        (f"margin {margin:.0%}: the largest change of a protected stream's reads that "
         "counts as none (a cliff's fall, old_blocks_time, old_blocks_pct)" if knee_rule else
         f"margin {margin:.0%}: a protected stream's reads may exceed the reference's by this "
         "much"),
        "scan/batch when sequential, one-touch or read-ahead share reaches "
        "50%; latency-bound otherwise",
    ]))

    figs = {"curves": _curves_chart(tab, shown, rec)}
    if len(inst):
        figs["instances"] = _instances_chart(inst, rec_n)
    return Report(recommended_pages=int(rec), recommended_old_blocks_time=int(obt),
                  recommended_instances=None if rec_n is None else int(rec_n),
                  streams=streams, curve=curve, old_blocks_time=obt_tab, instances=inst,
                  candidates={k: v for k, v in cand.items() if k != "best"}, blocks=b,
                  figures=figs)


def _curves_chart(tab: pd.DataFrame, shown: list, rec: int):
    """Synchronous reads by pool size, one panel per stream (log scales, a 0 left out), a line per
    old_blocks_time, a dashed rule at the recommended size."""
    import altair as alt
    d = tab[tab["stream"].isin(shown[:6])].copy()
    d["pool_mib"] = d["pool_pages"] / _MIB_PAGES
    d["old_blocks_time"] = d["old_blocks_time_ms"].astype(str) + " ms"
    d["recommended_mib"] = rec / _MIB_PAGES
    d = d[["pool_mib", "misses", "old_blocks_time", "stream", "recommended_mib"]].rename(
        columns={"misses": "synchronous reads"})
    d["synchronous reads"] = d["synchronous reads"].where(d["synchronous reads"] > 0)
    x = alt.X("pool_mib:Q", scale=alt.Scale(type="log", base=2), title="pool size (MiB)")
    line = alt.Chart().mark_line(point=True).encode(
        x=x, y=alt.Y("synchronous reads:Q", scale=alt.Scale(type="log"),
                     title="synchronous reads (log; 0 not drawn)"),
        color=alt.Color("old_blocks_time:N", title="old_blocks_time"),
        tooltip=["stream", "pool_mib", "old_blocks_time", "synchronous reads"])
    rule = alt.Chart().mark_rule(color="gray", strokeDash=[4, 4]).encode(
        x=alt.X("mean(recommended_mib):Q"))
    n = min(len(shown), 6)
    chart = alt.layer(line, rule, data=d).properties(width=300, height=220).facet(
        facet=alt.Facet("stream:N", title=None, sort=shown[:6]), columns=min(n, 3)
    ).resolve_scale(y="independent").properties(
        title=f"Reads per stream by pool size (dashed: recommended, {mib(rec)})")
    return chart, 1000, 300 * ((n + 2) // 3)


def _instances_chart(inst: pd.DataFrame, rec_n):
    import altair as alt
    c = alt.Chart(inst[["instances", "throughput_tps"]], title=f"Modelled throughput "
                  f"(recommended: {rec_n} instance(s))").mark_line(point=True).encode(
        x=alt.X("instances:Q", scale=alt.Scale(type="log", base=2), title="instances"),
        y=alt.Y("throughput_tps:Q", title="transactions / s"))
    return c, 560, 320
