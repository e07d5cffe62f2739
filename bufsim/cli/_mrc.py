"""``bufsim mrc``: the exact (or SHARDS-sampled) LRU miss-ratio curve of a trace."""
from __future__ import annotations

import sys

from ._common import (UsageError, add_trace_args, chart_target, checked_output, float_type,
                      int_type, read_trace_arg, save_chart, write_frame)


def add_mrc(commands) -> None:
    """The ``mrc`` subcommand."""
    p = commands.add_parser("mrc", help="the LRU miss-ratio curve of a trace",
                            description="The exact LRU miss-ratio curve (Mattson stack "
                            "distances) of a trace, or a SHARDS sample of it, as a table and "
                            "a chart.")
    add_trace_args(p)
    p.add_argument("--shards", type=float_type("--shards", 0.0, 1.0, lo_open=True), metavar="RATE",
                   help="SHARDS sampling rate in (0, 1] (default: exact)")
    p.add_argument("--seed", type=int_type("--seed", 0), default=0,
                   help="seed of the SHARDS page hash (default 0)")
    p.add_argument("--sizes", metavar="SIZES", help="pool sizes (grammar of sweep --pool; "
                   "default: 5M, then doubling up to the pages the trace touches)")
    p.add_argument("-o", "--output", metavar="OUT", help="write the curve (.csv, .parquet, .json)")
    p.add_argument("--chart", metavar="PNG", help="chart path (default: OUT with .png, if -o)")
    p.add_argument("--no-chart", action="store_true", help="do not draw the chart")
    p.set_defaults(func=_cmd_mrc)


def _cmd_mrc(args) -> int:
    from ..advise import miss_ratio_curve
    from ..sweeps import parse_sizes
    out = checked_output(args.output, (".csv", ".parquet", ".json"), inputs=[args.trace])
    if args.chart is not None and args.no_chart:
        raise UsageError("--chart and --no-chart exclude each other")
    chart = None if args.no_chart or (args.chart is None and out is None) else \
        checked_output(args.chart or out.with_suffix(".png"), (".png", ".svg"), "--chart",
                       inputs=[args.trace])
    if chart is not None:
        chart_target(chart)
    sizes = None
    if args.sizes:
        try:
            sizes = parse_sizes(args.sizes, "--sizes")
        except ValueError as e:
            raise UsageError(str(e)) from None
    trace = read_trace_arg(args)
    df = miss_ratio_curve(trace, sizes=sizes, shards=args.shards, seed=args.seed)
    show = df.assign(pool_mib=df["size"] * 16 / 1024)[["size", "pool_mib", "hits", "misses",
                                                      "hit_ratio", "miss_ratio"]]
    print(f"# {'SHARDS rate ' + str(args.shards) if args.shards else 'exact'} LRU miss-ratio "
          f"curve of {args.trace}: {int(df['gets'].iloc[0]):,} gets")
    print(show.to_string(index=False))
    from ..outputs import Staged
    with Staged() as staged:   # the table and the chart, together or neither
        if out is not None:
            write_frame(df, out, staged)
        if chart is not None:
            import altair as alt
            d = show[["pool_mib", "miss_ratio"]]
            c = alt.Chart(d, title="LRU miss-ratio curve" + (" (SHARDS)" if args.shards else "")
                          ).mark_line(point=True).encode(
                x=alt.X("pool_mib:Q", scale=alt.Scale(type="log", base=2),
                        title="pool size (MiB)"),
                y=alt.Y("miss_ratio:Q", title="miss ratio"))
            save_chart(c, chart, staged)
    if out is not None or chart is not None:
        print("wrote " + ", ".join(str(x) for x in
                                   ([out] if out else []) + ([chart.with_suffix(".png"),
                                                              chart.with_suffix(".svg")]
                                                             if chart else [])),
              file=sys.stderr)
    return 0
