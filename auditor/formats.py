"""Findings in formats other tools read: SARIF 2.1.0 (code-scanning dashboards), ASFF (AWS Security Hub) and CSV.

All take the findings still reported and the muted ones (``--mutelist``): SARIF marks a muted result with an
external suppression, ASFF sets its workflow status to ``SUPPRESSED``, CSV has a ``muted`` column
(:func:`render_csv`, every cell quoted, on one line and escaped for spreadsheets). A SARIF artifact URI is
percent-encoded (a valid RFC 3986 URI reference for any table name). ASFF has the required top-level attributes
of the Security Hub user guide and stays within the ``AwsSecurityFinding`` limits (:func:`asff_finding`); a
finding whose account is not 12 ASCII digits or whose region is not a region name is refused. Findings are
imported as a custom integration: the product ARN is
``arn:<partition>:securityhub:<region>:<account>:product/<account>/default``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import orjson

from auditor.escaping import csv_line, csv_safe
from auditor.models.finding import Finding, FindingKind, Severity, isoformat_z
from auditor.mutelist import Muted

TOOL_NAME = "ddb-traffic-auditor"
TOOL_URI = "https://github.com/ddb-traffic-auditor/ddb-traffic-auditor"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
ASFF_SCHEMA_VERSION = "2018-10-08"

#: SARIF ``level`` per severity.
_SARIF_LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}
#: GitHub code scanning's ``security-severity`` (0.0-10.0) per severity.
_SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "0.0",
}
#: ASFF ``Severity.Label`` (and ``Normalized``, 0-100) per severity.
ASFF_SEVERITY = {
    Severity.CRITICAL: ("CRITICAL", 90),
    Severity.HIGH: ("HIGH", 70),
    Severity.MEDIUM: ("MEDIUM", 40),
    Severity.LOW: ("LOW", 1),
    Severity.INFO: ("INFORMATIONAL", 0),
}
#: What each kind is about, for rule descriptions and ASFF types.
_KIND_TEXT = {
    FindingKind.SCAN: "Full table or index scans",
    FindingKind.THROTTLING: "Throttled requests",
    FindingKind.HOT_KEY: "Hot partition key",
    FindingKind.LOW_CARDINALITY_KEY: "Low-cardinality partition key",
    FindingKind.LARGE_ITEM: "Item close to the 400 KB limit",
    FindingKind.ITEM_GROWTH: "Item growing towards the 400 KB limit",
    FindingKind.ITEM_SIZE_EXCEEDED: "Writes rejected for item size",
    FindingKind.BILLING_MODE: "Billing mode costs more than the alternative",
    FindingKind.TABLE_CLASS: "Table class costs more than the alternative",
    FindingKind.UNUSED_INDEX: "Global secondary index not read",
    FindingKind.IDLE_TABLE: "Table without traffic that still costs",
    FindingKind.TTL_NOT_EXPIRING: "Time to Live enabled but deleting nothing",
    FindingKind.CAPTURE_CAP: "Scans of a table sampled: the audit's capture cap reached",
}


def _location_name(f: Finding) -> str:
    return f.table + (f"/index/{f.index}" if f.index else "")


def resource_arn(f: Finding, account: str, region: str, partition: str = "aws") -> str:
    """The DynamoDB table (or index) ARN of a finding."""
    return f"arn:{partition}:dynamodb:{region}:{account}:table/{_location_name(f)}"


def _partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


# ------------------------------------------------------------------------------------------------------- SARIF


def sarif_document(findings: Sequence[Finding], muted: Sequence[Muted], version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: a rule per finding kind, a result per finding (muted ones suppressed)."""
    kinds = sorted({f.kind for f in findings} | {m.finding.kind for m in muted}, key=lambda k: k.value)
    index = {k: n for n, k in enumerate(kinds)}
    rules = [
        {
            "id": k.value,
            "name": k.value.title().replace("_", ""),
            "shortDescription": {"text": _KIND_TEXT[k]},
            "helpUri": f"{TOOL_URI}#{k.value}",
            "properties": {"tags": ["dynamodb", "cost" if k in _COST_KINDS else "reliability"]},
        }
        for k in kinds
    ]
    results = [_sarif_result(f, index[f.kind], None) for f in findings]
    results += [_sarif_result(m.finding, index[m.finding.kind], m) for m in muted]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": TOOL_NAME, "version": version, "informationUri": TOOL_URI, "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


_COST_KINDS = {
    FindingKind.BILLING_MODE,
    FindingKind.TABLE_CLASS,
    FindingKind.UNUSED_INDEX,
    FindingKind.IDLE_TABLE,
    FindingKind.TTL_NOT_EXPIRING,
}


def artifact_uri(f: Finding) -> str:
    """``dynamodb/<account>/<region>/<table>[/index/<index>]``, each part percent-encoded (an RFC 3986 relative
    reference whatever the names hold: ``/``, ``%``, ``#``, spaces and non-ASCII are encoded)."""
    parts = [p for p in (f.account, f.region, f.table) if p] + (["index", f.index] if f.index else [])
    return "dynamodb/" + "/".join(quote(p, safe="") for p in parts)


def _sarif_result(f: Finding, rule_index: int, muted: Muted | None) -> dict[str, Any]:
    where = _location_name(f)
    result: dict[str, Any] = {
        "ruleId": f.kind.value,
        "ruleIndex": rule_index,
        "level": _SARIF_LEVEL[f.severity],
        "message": {"text": f"{f.title}. {f.summary} Fix: {f.recommendation}"},
        "locations": [
            {
                # Findings are about tables, not files: a DynamoDB resource path stands in for the artifact.
                "physicalLocation": {"artifactLocation": {"uri": artifact_uri(f)}},
                "logicalLocations": [{"name": f.index or f.table, "fullyQualifiedName": where, "kind": "resource"}],
            }
        ],
        "partialFingerprints": {"ddbAuditFindingId/v1": f.id},
        "properties": {
            "severity": f.severity.value,
            "security-severity": _SECURITY_SEVERITY[f.severity],
            "account": f.account,
            "region": f.region,
            "table": f.table,
            "index": f.index,
            "first_seen": isoformat_z(f.first_seen),
            "last_seen": isoformat_z(f.last_seen),
            "evidence": f.evidence,
        },
    }
    if muted is not None:
        result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": muted.rule.reason}]
    return result


# -------------------------------------------------------------------------------------------------------- ASFF


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: Security Hub's limits on ``ProductFields``: pairs, key and value characters.
PRODUCT_FIELDS_MAX = 50
PRODUCT_FIELD_KEY_MAX = 128
PRODUCT_FIELD_VALUE_MAX = 2048
#: ``Resources[].Details.Other``: each value fewer than 1,024 characters.
OTHER_VALUE_MAX = 1023
_ACCOUNT = re.compile(r"[0-9]{12}")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]{1,2}")


def validate_account(value: str) -> str:
    """``value`` when it is an AWS account id (12 ASCII digits), for ``--account``.

    Raises:
        ValueError: one line saying what is wrong.
    """
    if not _ACCOUNT.fullmatch(value):
        raise ValueError(f"--account must be a 12-digit AWS account id, got {value[:40]!r}")
    return value


def _product_fields(fields: dict[str, str]) -> dict[str, str]:
    items = list(fields.items())[:PRODUCT_FIELDS_MAX]
    return {_cut(k, PRODUCT_FIELD_KEY_MAX): _cut(v, PRODUCT_FIELD_VALUE_MAX) for k, v in items}


def asff_finding(
    f: Finding,
    *,
    account: str | None,
    region: str | None,
    now: datetime,
    workflow: str = "NEW",
    record_state: str = "ACTIVE",
) -> dict[str, Any]:
    """One finding in the AWS Security Finding Format (``Id`` is the finding's stable id).

    Required top-level attributes (user guide, "Required top-level ASFF attributes"): AwsAccountId, CreatedAt,
    Description, GeneratorId, Id, ProductArn, Resources, SchemaVersion, Severity, Title, Types, UpdatedAt. Limits
    kept: Title 256, Description 1,024, Remediation text 512 characters; ProductFields at most 50 pairs, keys 128
    and values 2,048 characters; Resources[].Details.Other values under 1,024.

    Raises:
        ValueError: neither the finding nor the caller gives an account or a region, or the account is not 12
            ASCII digits or the region not a region name (the message says which).
    """
    acct = f.account or account
    reg = f.region or region
    if not acct or not reg:
        raise ValueError(f"finding {f.id} has no account or region; ASFF needs both (pass --account)")
    if not _ACCOUNT.fullmatch(acct):
        raise ValueError(f"finding {f.id}: account {acct[:40]!r} is not a 12-digit AWS account id")
    if not _REGION.fullmatch(reg):
        raise ValueError(f"finding {f.id}: region {reg[:40]!r} is not an AWS region name")
    partition = _partition(reg)
    label, normalized = ASFF_SEVERITY[f.severity]
    resource: dict[str, Any] = {
        "Type": "AwsDynamoDbTable",
        "Id": resource_arn(f, acct, reg, partition),
        "Partition": partition,
        "Region": reg,
    }
    if f.index:
        resource["Details"] = {"Other": {"index": _cut(f.index, OTHER_VALUE_MAX)}}
    return {
        "SchemaVersion": ASFF_SCHEMA_VERSION,
        "Id": f.id,
        "ProductArn": f"arn:{partition}:securityhub:{reg}:{acct}:product/{acct}/default",
        "GeneratorId": f"{TOOL_NAME}/{f.kind.value}",
        "AwsAccountId": acct,
        "Types": [f"Software and Configuration Checks/AWS Best Practices/{_KIND_TEXT[f.kind]}"],
        "FirstObservedAt": isoformat_z(f.first_seen),
        "LastObservedAt": isoformat_z(f.last_seen),
        "CreatedAt": isoformat_z(f.first_seen),
        "UpdatedAt": isoformat_z(now),
        "Severity": {"Label": label, "Normalized": normalized, "Original": f.severity.value},
        "Title": _cut(f.title, 256),
        "Description": _cut(f.summary, 1024),
        "Remediation": {"Recommendation": {"Text": _cut(f.recommendation, 512)}},
        "ProductFields": _product_fields({"ddb-audit/kind": f.kind.value, "ddb-audit/table": f.table}),
        "Resources": [resource],
        "Workflow": {"Status": workflow},
        "RecordState": record_state,
    }


def asff_document(
    findings: Sequence[Finding],
    muted: Sequence[Muted],
    *,
    account: str | None,
    now: datetime,
    skipped: list[str] | None = None,
) -> dict[str, Any]:
    """``{"Findings": [...]}``: the reported findings as NEW, the muted ones as SUPPRESSED.

    A finding whose own account or region is malformed (taken from traffic) is left out, and one line naming it and
    the reason is appended to ``skipped`` when given.

    Raises:
        ValueError: a finding has no account or region and the caller gives none (pass ``--account``).
    """
    out: list[dict[str, Any]] = []
    rows = [(f, "NEW") for f in findings] + [(m.finding, "SUPPRESSED") for m in muted]
    for f, workflow in rows:
        try:
            out.append(asff_finding(f, account=account, region=None, now=now, workflow=workflow))
        except ValueError as exc:
            if not (f.account or account) or not f.region:
                raise  # the caller's input error, not one finding's
            if skipped is not None:
                skipped.append(str(exc))
    return {"Findings": out}


# --------------------------------------------------------------------------------------------------------- CSV

#: ``--format csv`` columns, one row per finding (docs/contract.md: ``id``, ``kind``, ``severity``, ``table``, ...).
CSV_COLUMNS = (
    "id",
    "kind",
    "severity",
    "account",
    "region",
    "table",
    "index",
    "title",
    "summary",
    "recommendation",
    "first_seen",
    "last_seen",
    "muted",
    "muted_reason",
    "evidence",
)


def render_csv(findings: Sequence[Finding], muted: Sequence[Muted]) -> str:
    """The findings (then the muted ones, ``muted`` = ``true``) as CSV with a header row.

    Every cell is quoted and goes through :func:`auditor.escaping.csv_line` (line breaks become spaces, so no row
    starts inside a value) and :func:`auditor.escaping.csv_safe`, so a table, key or principal taken from traffic
    cannot become a spreadsheet formula, also where ``;`` separates cells; ``evidence`` is the evidence as compact
    JSON (escaped the same way).
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_COLUMNS)
    rows = [(f, None) for f in findings] + [(m.finding, m.rule.reason) for m in muted]
    for f, reason in rows:
        evidence = orjson.dumps(f.evidence, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
        cells = (
            f.id,
            f.kind.value,
            f.severity.value,
            f.account or "",
            f.region or "",
            f.table,
            f.index or "",
            f.title,
            f.summary,
            f.recommendation,
            isoformat_z(f.first_seen),
            isoformat_z(f.last_seen),
            "true" if reason is not None else "false",
            reason or "",
            evidence.decode(),
        )
        writer.writerow([csv_safe(csv_line(c)) for c in cells])
    return out.getvalue()
