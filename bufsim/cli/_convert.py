"""``bufsim convert blktrace``: blkparse's text output to a page trace."""
from __future__ import annotations

import sys
from pathlib import Path

from ._common import Parser, UsageError, byte_size_type, checked_output, int_type


def add_convert(commands) -> None:
    """The ``convert`` subcommand and its kinds."""
    p = commands.add_parser("convert", help="convert a block-I/O trace to a page trace")
    conv = p.add_subparsers(dest="kind", required=True, metavar="KIND", parser_class=Parser)
    b = conv.add_parser("blktrace", help="blkparse's default text output -> space,page CSV",
                        description="Convert blkparse's default text output (one line per "
                        "event: dev cpu seq time pid action rwbs sector + n [process]) into a "
                        "CSV of space,page,time_ns,thread rows, one per page a request "
                        "touches: page = (sector * 512 - file offset) // page size.")
    b.add_argument("input", metavar="IN", help="blkparse text output")
    b.add_argument("-o", "--output", required=True, metavar="OUT.csv")
    b.add_argument("--page-size", type=byte_size_type("--page-size"), default=16384,
                   metavar="BYTES", help="InnoDB page size (default 16K)")
    b.add_argument("--file-offset", type=byte_size_type("--file-offset"), default=0,
                   metavar="BYTES", help="byte offset of the tablespace file's first page on "
                   "the traced device (default 0)")
    b.add_argument("--space", type=int_type("--space", 0, 2**32 - 1), default=0,
                   help="space id to write (default 0)")
    b.add_argument("--action", default="Q", metavar="ACTIONS",
                   help="blkparse actions to keep (default Q: queued, before merging)")
    b.add_argument("--writes", action="store_true", help="keep writes too (default: reads)")
    b.add_argument("--device", metavar="MAJ,MIN", help="keep only this device (e.g. 8,0)")
    b.set_defaults(func=_cmd_convert)


def _cmd_convert(args) -> int:
    from ..blktrace import convert_blkparse
    out = checked_output(args.output, (".csv",), inputs=[args.input])
    src = Path(args.input)
    if not src.is_file():
        raise UsageError(f"IN: no such file: {args.input}")
    try:
        stats = convert_blkparse(src, out, page_size=args.page_size, file_offset=args.file_offset,
                                 space=args.space, actions=args.action, writes=args.writes,
                                 device=args.device)
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(f"wrote {out}: {stats['rows']:,} page gets from {stats['events']:,} requests "
          f"({stats['skipped_lines']:,} other lines, {stats['outside']:,} requests outside the "
          "file)", file=sys.stderr)
    return 0
