"""``ddb-audit billing``: the billing-mode and table-class recommendation (auditor.billing) from one table's
capacity history, with the decision settings of ``--config`` and the options. Offline unless live prices are asked
for (``--region``, ``--pricing-region`` or ``--profile``: the AWS Pricing API, else the bundled price table)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from auditor.cli.common import (
    Command,
    Subparsers,
    add_aws_options,
    add_output_options,
    aws_session,
    output_result,
    read_input,
    read_json,
    warn,
)
from auditor.cli.progress import progress
from auditor.exceptions import InputError
from auditor.models.billing import BillingConfig, BillingInput

if TYPE_CHECKING:
    from auditor.sources.pricing_api import PricingClient

NAME = "billing"


def add_parser(sub: Subparsers) -> None:
    billing = sub.add_parser(
        NAME,
        help="billing-mode and table-class recommendation from one table's capacity history (offline)",
    )
    billing.add_argument(
        "--input", required=True, metavar="FILE", help="capacity history JSON (docs/contract.md), - for stdin"
    )
    billing.add_argument(
        "--simulation",
        choices=("aws", "evaluator"),
        default="aws",
        help="auto-scaling simulation: aws (documented AWS behaviour, default) or evaluator (archived awslabs tool)",
    )
    billing.add_argument("--prices", metavar="FILE", help="price file (JSON) instead of the bundled price table")
    add_aws_options(
        billing,
        "the table's AWS Region (default: the input's region): price with its current list prices from the AWS "
        "Pricing API (needs credentials; falls back to the bundled table, labelled)",
    )
    billing.add_argument(
        "--pricing-region",
        metavar="R",
        help="the AWS Pricing API endpoint to ask (us-east-1, eu-central-1 or ap-south-1; default: the nearest to "
        "the table's Region); asks for live prices like --region",
    )
    billing.add_argument(
        "--config",
        metavar="FILE",
        help="decision settings (JSON object: target_utilization, margin, reaction_minutes, read/write: "
        "{target_utilization, min_capacity, max_capacity}, ...); the options below override it",
    )
    billing.add_argument("--target", type=float, metavar="PCT", help="target utilisation for reads and writes (20-90)")
    for dim in ("read", "write"):
        billing.add_argument(f"--{dim}-target", type=float, metavar="PCT", help=f"target utilisation of {dim}s")
        billing.add_argument(
            f"--{dim}-min", type=float, metavar="UNITS", help=f"minimum {dim} capacity (default: searched)"
        )
        billing.add_argument(
            f"--{dim}-max", type=float, metavar="UNITS", help=f"maximum {dim} capacity (default: 2x the peak need)"
        )
    billing.add_argument(
        "--trace-out",
        metavar="FILE.csv",
        help="write the per-minute consumed, simulated provisioned and throttled capacity of every series (CSV)",
    )
    billing.add_argument(
        "--reaction-minutes",
        type=int,
        metavar="N",
        help="minutes from the alarm to the new capacity in force, aws simulation (default 2, an assumption)",
    )
    add_output_options(billing)


def run(args: argparse.Namespace) -> int:
    from auditor.billing.billing_text import render_billing_markdown, render_billing_table
    from auditor.billing.decide import analyze_billing
    from auditor.billing.pricing import load_price_file

    inp = BillingInput.from_json(*read_input(args.input))
    prices = load_price_file(args.prices) if args.prices else None
    config = _billing_config(args)  # checked before the Pricing API is asked
    with progress("billing", total=2, unit=" steps") as bar:
        if prices is None and (args.region or args.pricing_region or args.profile):
            from auditor.sources.pricing_api import PriceBook

            bar.set_postfix_str("AWS Pricing API")
            prices, warning = PriceBook(_pricing_client(args), datetime.now(UTC).date()).get(args.region or inp.region)
            if warning:
                warn(warning)
        bar.update(1)
        bar.set_postfix_str(f"{args.simulation} simulation")
        analysis = analyze_billing(
            inp, simulation=args.simulation, prices=prices, config=config, trace=bool(args.trace_out)
        )
        bar.update(1)
    if args.trace_out:
        from auditor.billing.trace import write_trace

        write_trace(args.trace_out, analysis.traces)
    warn(*analysis.warnings)
    return output_result(
        args,
        analysis,
        lambda kept, markdown: (render_billing_markdown if markdown else render_billing_table)(analysis.result, kept),
    )


def _pricing_client(args: argparse.Namespace) -> Callable[[str], PricingClient]:
    """The Pricing API clients: at ``--pricing-region`` (else the endpoint nearest the priced Region), with the
    credentials of ``--profile`` (else the standard chain; an unknown profile is an error before any work)."""
    from auditor.sources import pricing_api

    session = aws_session(args) if args.profile else None

    def client_for(api_region: str) -> PricingClient:
        region = args.pricing_region or api_region
        base = pricing_api.pricing_client(region)  # refuses a local endpoint; the client settings
        if session is None:
            return base
        config = cast("Any", base).meta.config
        client: PricingClient = session.client("pricing", region_name=region, config=config)
        return client

    return client_for


def _billing_config(args: argparse.Namespace) -> BillingConfig:
    """The decision settings: ``--config`` (if given), then the per-option overrides."""
    doc: dict[str, object] = {}
    if args.config:
        loaded = read_json(args.config)
        if not isinstance(loaded, dict):
            raise InputError(f"{args.config}: billing config must be a JSON object")
        doc = dict(loaded)
    if args.target is not None:
        doc["target_utilization"] = args.target
    if args.reaction_minutes is not None:
        doc["reaction_minutes"] = args.reaction_minutes
    for dim in ("read", "write"):
        own = dict(doc.get(dim) or {})  # type: ignore[call-overload]
        for option, field in (("target", "target_utilization"), ("min", "min_capacity"), ("max", "max_capacity")):
            value = getattr(args, f"{dim}_{option}")
            if value is not None:
                own[field] = value
        if own:
            doc[dim] = own
    try:
        return BillingConfig.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        where = args.config or "billing options"
        raise InputError(f"{where}: {loc}: {str(err['msg']).removeprefix('Value error, ')}") from exc


COMMAND = Command(NAME, add_parser, run)
