"""``ddb-audit item-size``: exact DynamoDB item sizes of items in DynamoDB JSON (auditor.models.dynamodb_size)."""

from __future__ import annotations

import argparse
import sys

from auditor.cli.common import EXIT_OK, Command, Subparsers, add_format_option, read_input
from auditor.findings_text import FORMATS, markdown_table, render_columns, to_json
from auditor.models.dynamodb_size import iter_item_results

NAME = "item-size"


def add_parser(sub: Subparsers) -> None:
    size = sub.add_parser(
        NAME, help="exact DynamoDB item sizes (DynamoDB JSON: one item, an array, or one item per line)"
    )
    size.add_argument("file", nargs="?", default="-", metavar="FILE", help="input file, or - for stdin (default)")
    add_format_option(size, FORMATS, "output format (default: table)")


def run(args: argparse.Namespace) -> int:
    results = [r.to_dict() for r in iter_item_results(*read_input(args.file))]
    if args.format == "json":
        text = to_json(results)
    else:
        rows = [
            (str(n), str(r["size_bytes"]), f"{r['percent_of_limit']:.2f}%", str(r["limit_bytes"]))
            for n, r in enumerate(results, 1)
        ]
        header = ("item", "size_bytes", "of limit", "limit_bytes")
        if args.format == "markdown":
            text = "\n".join(markdown_table(header, rows)) + "\n"
        else:
            text = render_columns(rows, header)
    sys.stdout.write(text)
    return EXIT_OK


COMMAND = Command(NAME, add_parser, run)
