"""``ddb-audit audit``: the read-only live audit (auditor.service.audit) of one account and Region, or of several
accounts and Regions (auditor.service.org_audit): inventory, CloudWatch metrics and Contributor Insights.
Tables named with ``--tables`` that do not exist are an input error, found before the long work."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from auditor.cli.common import (
    Command,
    Subparsers,
    add_aws_options,
    add_output_options,
    number_in,
    output_result,
    warn,
)
from auditor.cli.progress import count_calls, progress
from auditor.config import get_settings, load_analysis_config
from auditor.exceptions import InputError

if TYPE_CHECKING:  # the services and sources are imported when the command runs, so the other commands start fast
    from mypy_boto3_dynamodb import DynamoDBClient

    from auditor.service.audit import AuditConfig
    from auditor.sources.inventory import TableSelector
    from auditor.sources.org import SessionFactory

NAME = "audit"

_audit_days = number_in(0, 455, "must be more than 0 and at most 455 (CloudWatch keeps 15 months)", include_low=False)
_idle_days = number_in(0, 455, "must be 0 (skip) to 455 (CloudWatch keeps hourly data 15 months)")
_billing_days = number_in(0, 15, "must be 0 (no billing) to 15 (CloudWatch keeps 1-minute data 15 days)")


def add_parser(sub: Subparsers) -> None:
    audit = sub.add_parser(
        NAME,
        help="read-only live audit: inventory, CloudWatch metrics and Contributor Insights (honours AWS_ENDPOINT_URL)",
    )
    add_aws_options(audit, "AWS Region to audit (default: the standard boto3 configuration)")
    audit.add_argument("--tables", metavar="NAME,...", help="audit only these tables (comma-separated)")
    audit.add_argument("--prefix", metavar="P", help="audit only tables whose name starts with P")
    audit.add_argument("--tag", metavar="K=V", help="audit only tables tagged K=V")
    audit.add_argument(
        "--days", type=_audit_days, default=1.0, metavar="N", help="days to look back for the detectors (default: 1)"
    )
    audit.add_argument(
        "--billing-days",
        type=_billing_days,
        default=14.0,
        metavar="N",
        help="days of 1-minute capacity the billing decision reads, at most 15 (default: 14; 0 skips billing)",
    )
    audit.add_argument(
        "--idle-days",
        type=_idle_days,
        default=30.0,
        metavar="N",
        help="days of daily activity read for idle tables and TTL that deletes nothing (default: 30; 0 skips)",
    )
    audit.add_argument(
        "--config", metavar="FILE", help="analysis config JSON: its detector settings (detectors, tables) apply"
    )
    _add_org_options(audit)
    add_output_options(audit)


def _add_org_options(p: argparse.ArgumentParser) -> None:
    """Accounts and Regions of the audit."""
    p.add_argument(
        "--regions",
        metavar="R,...|all",
        help="audit these Regions (comma-separated), or all where DynamoDB has an endpoint (default: --region)",
    )
    p.add_argument(
        "--accounts",
        metavar="ID,...",
        help="audit these accounts by assuming --role-name in each (comma-separated 12-digit ids)",
    )
    p.add_argument(
        "--org",
        action="store_true",
        help="audit every ACTIVE account of the Organization (organizations:ListAccounts; management or delegated "
        "administrator account), assuming --role-name in each",
    )
    p.add_argument(
        "--role-name",
        metavar="NAME",
        help="the read-only member role to assume in each account (templates/member-role.yaml), e.g. "
        "DdbTrafficAuditorMember",
    )
    p.add_argument("--external-id", metavar="ID", help="ExternalId the member role's trust policy requires, if any")
    p.add_argument(
        "--max-concurrency",
        type=int,
        default=8,
        metavar="N",
        help="accounts x Regions audited at once (1-64, default 8); each also makes a few calls in parallel",
    )


def _audit_config(args: argparse.Namespace) -> AuditConfig:
    """The audit's detector tree: the ``detectors`` and ``tables`` of ``--config`` (or ``AUDIT_CONFIG``), the same
    document ``analyze-trail`` reads."""
    from auditor.service.audit import AuditConfig

    config = AuditConfig.from_tree(load_analysis_config(args.config or get_settings().audit_config))
    idle_days = getattr(args, "idle_days", 0)
    if not idle_days:
        return config
    # --idle-days sets the idle_table detector's period (over the file's idle_table settings, under per-table ones).
    idle = {**config.detectors.get("idle_table", {}), "idle_days": idle_days}
    return AuditConfig(detectors={**config.detectors, "idle_table": idle}, tables=config.tables)


def run(args: argparse.Namespace) -> int:
    from auditor.service.audit import AuditError, build_clients, render_audit, run_audit
    from auditor.sources.inventory import TableSelector, parse_tag
    from auditor.sources.pricing_api import PriceBook, pricing_client

    names = tuple(n.strip() for n in (args.tables or "").split(",") if n.strip())
    selector = TableSelector(names=names, prefix=args.prefix or None, tag=parse_tag(args.tag) if args.tag else None)
    now = int(time.time())
    end = now - now % 60
    if args.profile or args.regions or args.accounts or args.org:
        return _run_org_audit(args, selector, start=end - int(args.days * 86_400), end=end, now=now)
    config = _audit_config(args)  # an input error before any AWS call
    clients = build_clients(args.region)
    if names:
        _check_tables(clients.dynamodb, names)
    with progress("audit", unit=" calls") as bar:
        for client in (clients.dynamodb, clients.cloudwatch, clients.autoscaling):
            count_calls(client, bar)
        result = run_audit(
            clients,
            selector,
            start=end - int(args.days * 86_400),
            end=end,
            now=now,
            billing_days=args.billing_days,
            prices=(book := PriceBook(pricing_client, datetime.now(UTC).date())),
            activity_days=args.idle_days,
            config=config,
        )
    warn(*book.warnings)
    inventory = result.inventory
    gone = set(inventory.missing) & set(names)  # named, and deleted since the check
    if gone:
        raise InputError("no such table: " + ", ".join(sorted(gone)))
    if not inventory.tables:
        blocking = [g for g in inventory.gaps if g.facet == "tables"]
        if blocking:
            raise AuditError(f"nothing could be audited: {blocking[0].describe()}: {blocking[0].message}")
    warn(*(gap.describe() for gap in result.gaps), *(f"detector failed: {err}" for err in result.errors))
    return output_result(args, result, lambda _kept, _markdown: render_audit(result, args.format))


def _check_tables(dynamodb: DynamoDBClient, names: tuple[str, ...]) -> None:
    """Raise InputError naming the tables of ``--tables`` that do not exist (other errors are the audit's gaps)."""
    from botocore.exceptions import ClientError

    from auditor.sources.aws_calls import NOT_FOUND, error_code

    missing = []
    for name in sorted(set(names)):
        try:
            dynamodb.describe_table(TableName=name)
        except ClientError as exc:
            if error_code(exc) in NOT_FOUND:
                missing.append(name)
    if missing:
        raise InputError("no such table: " + ", ".join(missing))


def _org_session(args: argparse.Namespace) -> tuple[SessionFactory, list[str], list[str | None]]:
    """The base session, the per-account session factory, the Regions and the accounts of ``--profile``,
    ``--regions``, ``--accounts``/``--org`` and ``--role-name``."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from auditor.sources.aws_calls import CLIENT_CONFIG, error_message
    from auditor.sources.org import SessionFactory, organization_accounts, parse_accounts, parse_regions

    if args.accounts and args.org:
        raise InputError("--accounts and --org are exclusive: pick one")
    if (args.accounts or args.org) and not args.role_name:
        raise InputError("--accounts and --org need --role-name (the member role to assume in each account)")
    if args.regions and args.region:
        raise InputError("--region and --regions are exclusive: pick one")
    listed = parse_accounts(args.accounts) if args.accounts else None
    session = boto3.Session(profile_name=args.profile, region_name=args.region)
    regions = parse_regions(args.regions, session)
    own: str | None = None
    accounts: list[str | None] = [None]
    try:
        if args.accounts or args.org:
            own = session.client("sts", config=CLIENT_CONFIG).get_caller_identity()["Account"]
        if listed is not None:
            accounts = list(listed)
        elif args.org:
            accounts = list(organization_accounts(session.client("organizations", config=CLIENT_CONFIG)))
            if not accounts:
                raise InputError("--org: the Organization lists no ACTIVE account")
    except ClientError as exc:
        raise InputError(f"cannot list the accounts to audit: {error_message(exc)}") from exc
    except BotoCoreError as exc:
        raise InputError(f"cannot reach AWS: {exc}") from exc
    factory = SessionFactory(session, args.role_name, own_account=own, external_id=args.external_id)
    return factory, regions, accounts


def _run_org_audit(args: argparse.Namespace, selector: TableSelector, *, start: int, end: int, now: int) -> int:
    """``audit`` over several accounts and/or Regions (or with --profile): see auditor.service.org_audit."""
    from auditor.service.audit import AuditResult
    from auditor.service.org_audit import render_org_audit, run_org_audit
    from auditor.sources.org import MAX_CONCURRENCY, TargetOutcome, targets
    from auditor.sources.pricing_api import PriceBook, pricing_client

    if not 1 <= args.max_concurrency <= MAX_CONCURRENCY:
        raise InputError(f"--max-concurrency must be 1..{MAX_CONCURRENCY}")
    factory, regions, accounts = _org_session(args)
    todo = targets(accounts, regions)
    book = PriceBook(pricing_client, datetime.now(UTC).date())
    with progress("audit", total=len(todo), unit=" account/Region") as bar:

        def done(outcome: TargetOutcome[AuditResult]) -> None:
            state = "ok" if outcome.gap is None else outcome.gap.reason.replace("_", " ")
            bar.set_postfix_str(f"{outcome.target.describe()}: {state}", refresh=False)
            bar.update(1)

        result = run_org_audit(
            factory,
            todo,
            selector,
            start=start,
            end=end,
            now=now,
            billing_days=args.billing_days,
            activity_days=args.idle_days,
            prices=book,
            max_workers=args.max_concurrency,
            on_done=done,
            config=_audit_config(args),
        )
    warn(*book.warnings, *(f"not audited: {gap.describe()}" for gap in result.coverage_gaps))
    if not result.results:
        first = result.coverage_gaps[0]
        raise InputError(f"nothing could be audited: {first.describe()}")
    if selector.names:
        nowhere = set.intersection(*(set(r.inventory.missing) for _, r in result.results))
        if nowhere:
            raise InputError("no such table in any audited account and Region: " + ", ".join(sorted(nowhere)))
    return output_result(args, result, lambda _kept, _markdown: render_org_audit(result, args.format))


COMMAND = Command(NAME, add_parser, run)
