"""Outputs for other tools: CSV (against its documented columns, formula-safe), SARIF 2.1.0 (against the OASIS
schema), ASFF (against AWS's documented required fields and the Security Hub API model), ``--mutelist`` and
``--version``, through the real CLI on a generated trail."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import botocore.session
import jsonschema
import orjson
import pytest
from botocore.validate import validate_parameters

from auditor.cli import main
from auditor.formats import (
    ASFF_SEVERITY,
    CSV_COLUMNS,
    asff_document,
    asff_finding,
    render_csv,
    sarif_document,
    validate_account,
)
from auditor.models.finding import Finding, FindingKind, Severity
from auditor.mutelist import DEFAULT_REASON, MuteRule, apply_mutelist, load_mutelist
from tests.factories import planted_workload, write_trail

SCHEMA = orjson.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_bytes())
START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 12, 3, tzinfo=UTC)
#: The required top-level attributes of the Security Hub user guide, "Required top-level ASFF attributes".
ASFF_REQUIRED = (
    "AwsAccountId",
    "CreatedAt",
    "Description",
    "GeneratorId",
    "Id",
    "ProductArn",
    "Resources",
    "SchemaVersion",
    "Severity",
    "Title",
    "Types",
    "UpdatedAt",
)


def finding(
    kind: FindingKind = FindingKind.SCAN,
    severity: Severity = Severity.HIGH,
    table: str = "Orders",
    index: str | None = None,
    evidence: dict[str, object] | None = None,
    account: str | None = "123456789012",
    title: str = "Scans on Orders",
) -> Finding:
    return Finding.create(
        kind=kind,
        severity=severity,
        account=account,
        region="eu-west-1",
        table=table,
        index=index,
        discriminator=(table, index, title),
        title=title,
        summary="42 Scan calls read the whole table.",
        recommendation="Query by key.",
        evidence=evidence or {"principal": "arn:aws:iam::123456789012:role/nightly-export", "count": 42},
        first_seen=START,
        last_seen=START + timedelta(hours=1),
    )


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trail")
    write_trail(planted_workload(START, hours=0.5, seed=11), out, seed=11)
    return out


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------------------------------ SARIF


def test_sarif_of_every_kind_and_severity_validates_against_the_sarif_2_1_0_schema() -> None:
    findings = [
        finding(kind=k, severity=s, title=f"{k.value} {s.value}", index="byDate" if n % 2 else None)
        for n, (k, s) in enumerate(zip(FindingKind, [*Severity, *Severity], strict=False))
    ]
    muted = apply_mutelist([finding(title="accepted")], [MuteRule(kind=FindingKind.SCAN, reason="export")], NOW)[1]
    doc = orjson.loads(orjson.dumps(sarif_document(findings, muted, "1.2.3")))
    validate_sarif(doc)
    run_ = doc["runs"][0]
    assert run_["tool"]["driver"]["version"] == "1.2.3"
    rules = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    results = run_["results"]
    assert len(results) == len(findings) + 1
    for result, f in zip(results, findings, strict=False):
        assert rules[result["ruleIndex"]] == result["ruleId"] == f.kind.value
        assert result["partialFingerprints"]["ddbAuditFindingId/v1"] == f.id
        assert result["level"] == {"critical": "error", "high": "error", "medium": "warning"}.get(
            f.severity.value, "note"
        )
    assert results[-1]["suppressions"] == [{"kind": "external", "status": "accepted", "justification": "export"}]
    assert "suppressions" not in results[0]


# RFC 3986, section 3 and 4.1 (URI and URI-reference), for the schema's "uri" and "uri-reference" formats: no
# validator for them is installed, and without one jsonschema's FormatChecker passes every string.
_HEX = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|{_HEX})"
_SEG_NC = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|{_HEX})"
_QF = rf"(?:{_PCHAR}|[/?])*"
_AUTH = (
    rf"(?:(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|{_HEX})*@)?"
    rf"(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|{_HEX})*)(?::[0-9]*)?"
)
_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_HIER = rf"(?://{_AUTH}{_ABEMPTY}|/(?:{_PCHAR}+{_ABEMPTY})?|{_PCHAR}+{_ABEMPTY}|)"
_REL = rf"(?://{_AUTH}{_ABEMPTY}|/(?:{_PCHAR}+{_ABEMPTY})?|{_SEG_NC}+{_ABEMPTY}|)"
URI = re.compile(rf"[A-Za-z][A-Za-z0-9+.\-]*:{_HIER}(?:\?{_QF})?(?:#{_QF})?")
URI_REFERENCE = re.compile(rf"(?:{URI.pattern}|{_REL}(?:\?{_QF})?(?:#{_QF})?)")
FORMATS = jsonschema.FormatChecker()
FORMATS.checks("uri")(lambda v: not isinstance(v, str) or URI.fullmatch(v) is not None)
FORMATS.checks("uri-reference")(lambda v: not isinstance(v, str) or URI_REFERENCE.fullmatch(v) is not None)


def validate_sarif(doc: object) -> None:
    jsonschema.Draft4Validator(SCHEMA, format_checker=FORMATS).validate(doc)


def test_sarif_artifact_uris_are_uri_references_for_any_table_name() -> None:
    assert URI_REFERENCE.fullmatch("dynamodb/123456789012/eu-west-1/Orders") and not URI_REFERENCE.fullmatch("a b")
    hostile = ["Orders <x> %zz#frag?q", "a b/../c", "x:y", "Ünïcode\u202e\x00\r\n", '"]}', "\\"]
    findings = [finding(table=t, index=t, title=str(n)) for n, t in enumerate(hostile)]
    doc = orjson.loads(orjson.dumps(sarif_document(findings, [], "1.0")))
    validate_sarif(doc)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]]
    assert uris[0] == "dynamodb/123456789012/eu-west-1/Orders%20%3Cx%3E%20%25zz%23frag%3Fq/index/" + (
        "Orders%20%3Cx%3E%20%25zz%23frag%3Fq"
    )
    assert all(u.count("/") == 5 for u in uris)  # a "/" in a name cannot add a path segment
    plain = sarif_document([finding()], [], "1.0")["runs"][0]["results"][0]
    assert plain["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "dynamodb/123456789012/eu-west-1/Orders"
    )


def test_the_schema_check_rejects_what_sarif_forbids() -> None:
    doc = sarif_document([finding()], [], "1.0")
    doc["runs"][0]["results"][0]["level"] = "fatal"  # not a SARIF level
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SCHEMA).validate(doc)
    doc = sarif_document([finding()], [], "1.0")
    doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "a b#c#d"
    with pytest.raises(jsonschema.ValidationError, match="uri-reference"):
        validate_sarif(doc)


# ------------------------------------------------------------------------------------------------------- ASFF


def _api_shape() -> object:
    model = botocore.session.get_session().get_service_model("securityhub")
    return model.operation_model("BatchImportFindings").input_shape


def test_asff_has_the_documented_required_attributes_and_passes_the_api_model() -> None:
    findings = [
        finding(),
        finding(kind=FindingKind.UNUSED_INDEX, severity=Severity.INFO, index="byStatus", title="x" * 400),
    ]
    doc = asff_document(findings, [], account=None, now=NOW)
    for f, asff in zip(findings, doc["Findings"], strict=True):
        assert all(asff.get(field) for field in ASFF_REQUIRED), [k for k in ASFF_REQUIRED if not asff.get(k)]
        assert asff["Id"] == f.id
        assert asff["SchemaVersion"] == "2018-10-08"
        assert asff["ProductArn"] == "arn:aws:securityhub:eu-west-1:123456789012:product/123456789012/default"
        assert asff["Severity"]["Label"] == ASFF_SEVERITY[f.severity][0]
        assert asff["Remediation"]["Recommendation"]["Text"] == "Query by key."
        assert len(asff["Title"]) <= 256 and len(asff["Description"]) <= 1024
        assert all(t.count("/") == 2 for t in asff["Types"])  # namespace/category/classifier
        assert asff["Workflow"] == {"Status": "NEW"} and asff["RecordState"] == "ACTIVE"
    arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/Orders/index/byStatus"
    assert doc["Findings"][1]["Resources"][0]["Id"] == arn
    assert doc["Findings"][1]["Severity"]["Label"] == "INFORMATIONAL"
    # The request Security Hub would receive is valid for its API model (types, required members, enums).
    validate_parameters({"Findings": doc["Findings"]}, _api_shape())


def test_asff_needs_an_account_and_takes_it_from_the_caller() -> None:
    f = finding(account=None)
    with pytest.raises(ValueError, match="--account"):
        asff_finding(f, account=None, region=None, now=NOW)
    got = asff_finding(f, account="210987654321", region=None, now=NOW, workflow="RESOLVED", record_state="ARCHIVED")
    assert got["AwsAccountId"] == "210987654321"
    assert (got["Workflow"], got["RecordState"]) == ({"Status": "RESOLVED"}, "ARCHIVED")
    validate_parameters({"Findings": [got]}, _api_shape())


def test_asff_fields_stay_within_security_hub_limits_for_hostile_values() -> None:
    long = "T" * 5000
    f = finding(table=long, index="I" * 5000, title=long)
    f = f.model_copy(update={"summary": long, "recommendation": long})
    got = asff_finding(f, account=None, region=None, now=NOW)
    assert len(got["Title"]) <= 256 and len(got["Description"]) <= 1024
    assert len(got["Remediation"]["Recommendation"]["Text"]) <= 512
    fields = got["ProductFields"]
    assert len(fields) <= 50 and all(len(k) <= 128 and len(v) <= 2048 for k, v in fields.items())
    assert fields["ddb-audit/table"].startswith("TTT") and fields["ddb-audit/table"].endswith("…")
    other = got["Resources"][0]["Details"]["Other"]
    assert all(len(k) < 128 and len(v) < 1024 for k, v in other.items())
    validate_parameters({"Findings": [got]}, _api_shape())


@pytest.mark.parametrize("bad", ["12345678901", "1234567890123", "12345678901x", "\uff11" * 12, "123456789012\n", ""])
def test_a_malformed_account_is_refused_and_left_out_with_its_reason(bad: str) -> None:
    with pytest.raises(ValueError, match="12-digit"):
        validate_account(bad)
    assert validate_account("012345678901") == "012345678901"
    hostile = finding(account=bad or "x", title="hostile")
    with pytest.raises(ValueError, match="12-digit"):
        asff_finding(hostile, account=None, region=None, now=NOW)
    skipped: list[str] = []
    doc = asff_document([finding(), hostile], [], account="210987654321", now=NOW, skipped=skipped)
    assert [f["Id"] for f in doc["Findings"]] == [finding().id]
    assert len(skipped) == 1 and hostile.id in skipped[0] and "12-digit" in skipped[0]
    validate_parameters({"Findings": doc["Findings"]}, _api_shape())


def test_a_malformed_region_is_refused() -> None:
    bad = finding().model_copy(update={"region": "eu-west-1:999999999999:x"})
    with pytest.raises(ValueError, match="region"):
        asff_finding(bad, account=None, region=None, now=NOW)


# --------------------------------------------------------------------------------------------------- mutelist


def test_mute_rules_match_table_kind_principal_and_key_globs_until_they_expire() -> None:
    scan = finding()
    hot = finding(kind=FindingKind.HOT_KEY, evidence={"key": {"pk": "CUSTOMER#42"}}, title="hot")
    rules = [
        MuteRule(principal="arn:aws:iam::*:role/nightly-*", until=NOW + timedelta(days=1)),
        MuteRule(key="pk=CUSTOMER#4*", reason="known celebrity customer"),
    ]
    kept, muted = apply_mutelist([scan, hot], rules, NOW)
    assert kept == [] and [(m.finding, m.rule.reason) for m in muted] == [
        (scan, DEFAULT_REASON),
        (hot, "known celebrity customer"),
    ]
    # After ``until`` the principal rule no longer mutes; a key rule never matches a finding without a key.
    kept, muted = apply_mutelist([scan, hot], rules, NOW + timedelta(days=2))
    assert kept == [scan] and [m.finding for m in muted] == [hot]
    assert apply_mutelist([scan], [MuteRule(key="*")], NOW)[0] == [scan]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[{", "not valid JSON"),
        ('{"table": "x"}', "rule list"),
        ('[{"until": "2026-12-31T00:00:00Z"}]', "rule[0]: a rule must name at least one of table, kind"),
        ('[{"kind": "nope"}]', "rule[0].kind"),
        ('[{"table": "x", "colour": "red"}]', "rule[0].colour"),
    ],
)
def test_bad_mute_lists_are_clear_input_errors(
    tmp_path: Path, text: str, message: str, trail: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mute.json"
    path.write_text(text)
    code, out, err = run(["analyze-trail", str(trail), "--mutelist", str(path)], capsys)
    assert code == 2 and out == "" and message in err and str(path) in err


def test_a_mute_list_turns_a_failing_fail_on_run_green(
    tmp_path: Path, trail: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["analyze-trail", str(trail), "--format", "json", "--fail-on", "medium"], capsys)
    failing = [f for f in orjson.loads(out)["findings"] if f["severity"] in ("critical", "high", "medium")]
    assert code == 1 and failing
    # Accept exactly the failing findings: one rule per (table, kind).
    rules = sorted({(f["table"], f["kind"]) for f in failing})
    mutelist = tmp_path / "accepted.json"
    mutelist.write_bytes(orjson.dumps([{"table": t, "kind": k, "reason": "accepted in review"} for t, k in rules]))
    args = ["analyze-trail", str(trail), "--fail-on", "medium", "--mutelist", str(mutelist)]
    code, out, _ = run([*args, "--format", "json"], capsys)
    doc = orjson.loads(out)
    assert code == 0
    muted_ids = {m["id"] for m in doc["muted"]}
    assert {f["id"] for f in failing} <= muted_ids
    assert all(m["muted_by"]["reason"] == "accepted in review" for m in doc["muted"])
    assert not muted_ids & {f["id"] for f in doc["findings"]}
    # Listed as muted in the human formats too, and suppressed (not dropped) in SARIF.
    code, text, _ = run([*args, "--format", "table"], capsys)
    assert code == 0 and "Muted findings (--mutelist)" in text and "(muted: accepted in review)" in text
    code, out, _ = run([*args, "--format", "sarif"], capsys)
    sarif = orjson.loads(out)
    validate_sarif(sarif)
    suppressed = [r for r in sarif["runs"][0]["results"] if r.get("suppressions")]
    assert {r["partialFingerprints"]["ddbAuditFindingId/v1"] for r in suppressed} == muted_ids


def test_without_a_mute_list_outputs_keep_their_shape(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["analyze-trail", str(trail), "--format", "json"], capsys)
    assert code == 0 and set(orjson.loads(out)) == {"findings", "access_patterns", "stats", "summary"}


def test_asff_from_the_cli_and_version(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["analyze-trail", str(trail), "--format", "asff", "--account", "123456789012"], capsys)
    doc = orjson.loads(out)
    assert code == 0 and doc["Findings"]
    validate_parameters({"Findings": doc["Findings"]}, _api_shape())
    assert all(len(f["AwsAccountId"]) == 12 and f["AwsAccountId"].isdigit() for f in doc["Findings"])
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("ddb-audit 0.")


def test_mute_list_loader_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('[{"table": "Orders*", "until": "2027-01-01T00:00:00Z"}]')
    (rule,) = load_mutelist(str(path))
    assert rule.table == "Orders*" and rule.until == datetime(2027, 1, 1, tzinfo=UTC)


# -------------------------------------------------------------------------------------------------------- CSV


def check_csv_schema(text: str) -> list[dict[str, str]]:
    """The documented CSV shape: the header, one cell per column in every row, typed cells valid."""
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    out = []
    for row in rows[1:]:
        assert len(row) == len(CSV_COLUMNS), row
        cells = dict(zip(CSV_COLUMNS, row, strict=True))
        assert cells["kind"] in {k.value for k in FindingKind}
        assert cells["severity"] in {s.value for s in Severity}
        for field in ("first_seen", "last_seen"):
            assert datetime.fromisoformat(cells[field].replace("Z", "+00:00")).tzinfo is not None
        assert cells["muted"] in ("true", "false")
        assert isinstance(orjson.loads(cells["evidence"].removeprefix("'")), dict)
        out.append(cells)
    return out


def test_csv_has_one_row_per_finding_and_never_a_formula() -> None:
    hostile = finding(table='=HYPERLINK("http://x")', title="-2+3+cmd|' /C calc'!A0")
    muted = apply_mutelist([finding(title="accepted")], [MuteRule(kind=FindingKind.SCAN, reason="export")], NOW)[1]
    rows = check_csv_schema(render_csv([finding(), hostile], muted))
    assert [r["muted"] for r in rows] == ["false", "false", "true"] and rows[2]["muted_reason"] == "export"
    assert rows[0]["id"] == finding().id and rows[0]["table"] == "Orders" and rows[0]["account"] == "123456789012"
    assert rows[1]["table"] == '\'=HYPERLINK("http://x")' and rows[1]["title"].startswith("'-2+3")
    for r in rows:
        assert not any(v.lstrip(" ").startswith(("=", "+", "-", "@")) for v in r.values()), r


HOSTILE_CSV = [
    "\r=cmd|' /C calc'!A0",
    "Orders\n=1+1",
    "a;=cmd|' /C calc'!A0",
    'a;"=1+1',
    "a; -2+3",
    "x\r\n@SUM(A1);+1",
    "\t=1",
    "a,b\u2028-1",
]


@pytest.mark.parametrize("delimiter", [",", ";"])
def test_csv_cells_never_start_a_row_or_a_formula_whatever_the_delimiter(delimiter: str) -> None:
    findings = [finding(table=h, title=h, index=h) for h in HOSTILE_CSV]
    findings[0] = findings[0].model_copy(update={"evidence": {"key": {"pk": "\r=cmd|' /C calc'!A0"}}})
    text = render_csv(findings, [])
    assert "\r" not in text and text.count("\n") == len(findings) + 1
    assert all(line.startswith('"') and line.endswith('"') for line in text.splitlines())
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    assert len(rows) == len(findings) + 1
    for row in rows:
        for cell in row:
            assert not cell.lstrip(' "').startswith(("=", "+", "-", "@", "\t", "\r")), (delimiter, cell)
    if delimiter == ",":
        cells = check_csv_schema(text)
        assert [c["table"] for c in cells[:2]] == ["' =cmd|' /C calc'!A0", "Orders =1+1"]
        assert cells[2]["table"] == "a;'=cmd|' /C calc'!A0"


def test_csv_from_the_cli(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["analyze-trail", str(trail), "--format", "json"], capsys)
    ids = [f["id"] for f in orjson.loads(out)["findings"]]
    code, out, _ = run(["analyze-trail", str(trail), "--format", "csv"], capsys)
    assert code == 0 and [r["id"] for r in check_csv_schema(out)] == ids
