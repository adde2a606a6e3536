"""``ddb-audit billing``: the docs/contract.md input and output shapes, formats, exit codes and input errors."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.billing.pricing import bundled_prices
from auditor.cli import main
from auditor.models.finding import REQUIRED_EVIDENCE, Finding, FindingKind

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "billing"
DAY = 1440

SPEC_RESULT_FIELDS = {
    "table": str,
    "current_mode": str,
    "recommended_mode": str,
    "monthly_cost_current": float,
    "monthly_cost_recommended": float,
    "monthly_savings": float,
    "days_analyzed": float,
    "simulation": str,
    "series": list,
}
SPEC_DIMENSION_FIELDS = {
    "on_demand_cost": float,
    "provisioned_cost_simulated": float,
    "provisioned_cost_current": float,
    "recommended_mode": str,
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["billing", *args])
    out, err = capsys.readouterr()
    return code, out, err


def write_input(tmp_path: Path, doc: dict[str, Any], name: str = "in.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc))
    return path


def steady_doc(days: int = 14, **extra: Any) -> dict[str, Any]:
    n = days * DAY
    return {
        "table": "Orders",
        "region": "us-east-1",
        "table_class": "STANDARD",
        "billing_mode": "PAY_PER_REQUEST",
        "start": "2026-11-01T00:00:00Z",
        "period_seconds": 60,
        "series": [
            {
                "index": None,
                "consumed_read": [6000] * n,
                "consumed_write": [1200] * n,
                "provisioned_read": None,
                "provisioned_write": None,
            },
            {"index": "by-status", "consumed_read": [600] * n, "consumed_write": [1200] * n},
        ],
        **extra,
    }


def check_spec_shape(doc: dict[str, Any]) -> None:
    assert set(doc) == {"findings", "billing"}
    billing = doc["billing"]
    for name, kind in SPEC_RESULT_FIELDS.items():
        assert isinstance(billing[name], kind), name
    assert billing["current_mode"] in {"PAY_PER_REQUEST", "PROVISIONED"}
    assert billing["recommended_mode"] in {"PAY_PER_REQUEST", "PROVISIONED"}
    assert billing["simulation"] in {"aws", "evaluator"}
    for series in billing["series"]:
        assert series["index"] is None or isinstance(series["index"], str)
        for dim in ("read", "write"):
            for name, kind in SPEC_DIMENSION_FIELDS.items():
                assert isinstance(series[dim][name], kind), (dim, name)
    for f in doc["findings"]:
        finding = Finding.model_validate(f)
        assert set(REQUIRED_EVIDENCE[finding.kind]) <= set(f["evidence"])
        assert f["first_seen"].endswith("Z") and f["last_seen"].endswith("Z")


def test_json_output_is_the_spec_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--input", str(write_input(tmp_path, steady_doc())), "--format", "json"], capsys)
    assert code == 0, err
    assert err == ""
    doc = orjson.loads(out)
    check_spec_shape(doc)
    billing = doc["billing"]
    assert billing["table"] == "Orders" and billing["simulation"] == "aws"
    assert (billing["current_mode"], billing["recommended_mode"]) == ("PAY_PER_REQUEST", "PROVISIONED")
    assert [s["index"] for s in billing["series"]] == [None, "by-status"]
    assert billing["days_analyzed"] == 14.0
    assert billing["monthly_savings"] == pytest.approx(
        billing["monthly_cost_current"] - billing["monthly_cost_recommended"]
    )
    # Per-dimension costs are window totals in USD, not rounded: 100 RRU/s x 14 days = $15.12.
    assert billing["series"][0]["read"]["on_demand_cost"] == pytest.approx(15.12, rel=1e-12)
    assert billing["series"][0]["read"]["provisioned_cost_current"] == 0.0
    # Where the prices came from, in every result.
    assert billing["pricing"]["source"].startswith("bundled") and billing["pricing"]["as_of"] == "2026-09-06"
    assert billing["window_start"] == "2026-11-01T00:00:00Z" and billing["window_end"] == "2026-11-15T00:00:00Z"
    kinds = [f["kind"] for f in doc["findings"]]
    assert kinds == ["billing_mode"]


def test_evaluator_simulation_uses_the_archived_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = steady_doc()
    doc["billing_mode"] = "PROVISIONED"
    for s in doc["series"]:
        s["provisioned_read"] = [1000] * len(s["consumed_read"])
        s["provisioned_write"] = [40] * len(s["consumed_write"])
    code, out, _ = run(
        ["--input", str(write_input(tmp_path, doc)), "--simulation", "evaluator", "--format", "json"], capsys
    )
    assert code == 0
    result = orjson.loads(out)
    check_spec_shape(result)
    billing = result["billing"]
    assert billing["simulation"] == "evaluator"
    labels = {(s["index"], d): s[d]["recommended_mode"] for s in billing["series"] for d in ("read", "write")}
    # Table reads: 1,000 RCU against 142.9 simulated: Provisioned_Modify. Writes: 40 WCU against 28.6 simulated
    # (-28.6 %): Provisioned_Modify. The GSI's 1,000 RCU for 10 RRU/s: Provisioned_Modify as well.
    assert labels[(None, "read")] == "Provisioned_Modify"
    assert set(labels.values()) <= {"Provisioned", "Provisioned_Modify", "Ondemand"}
    assert billing["series"][0]["read"]["provisioned_cost_current"] == pytest.approx(1000 * 336 * 0.00013, rel=1e-9)


@pytest.mark.parametrize(
    ("name", "aws_action", "evaluator_action"),
    [
        ("steady-on-demand-with-gsi.json", "switch_to_provisioned", "switch_to_provisioned"),
        ("spiky-on-demand.json", "keep", "switch_to_provisioned"),
        ("over-provisioned.json", "adjust_provisioned", "adjust_provisioned"),
    ],
)
def test_examples(name: str, aws_action: str, evaluator_action: str, capsys: pytest.CaptureFixture[str]) -> None:
    for simulation, action in (("aws", aws_action), ("evaluator", evaluator_action)):
        code, out, err = run(["--input", str(EXAMPLES / name), "--simulation", simulation, "--format", "json"], capsys)
        assert code == 0, err
        doc = orjson.loads(out)
        check_spec_shape(doc)
        assert doc["billing"]["action"] == action, (name, simulation)


def test_over_provisioned_example_finds_both_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--input", str(EXAMPLES / "over-provisioned.json"), "--format", "json"], capsys)
    assert code == 0
    doc = orjson.loads(out)
    kinds = {f["kind"] for f in doc["findings"]}
    assert kinds == {FindingKind.BILLING_MODE.value, FindingKind.TABLE_CLASS.value}
    assert doc["billing"]["coverage"] < 1.0  # the example has a CloudWatch gap


def test_table_and_markdown_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_input(tmp_path, steady_doc()))
    code, out, _ = run(["--input", path], capsys)
    assert code == 0
    assert "Recommendation: switch to provisioned with auto scaling (PROVISIONED)" in out
    assert "by-status" in out and "billing_mode" in out
    code, out, _ = run(["--input", path, "--format", "markdown"], capsys)
    assert code == 0
    assert out.startswith("# DynamoDB billing: Orders")
    assert "| series | dim | on-demand |" in out and "### Orders: switch to provisioned saves" in out


def test_fail_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_input(tmp_path, steady_doc()))
    assert run(["--input", path, "--fail-on", "low"], capsys)[0] == 1
    assert run(["--input", path, "--fail-on", "high"], capsys)[0] == 0


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(orjson.dumps(steady_doc(days=1)))))
    code, out, _ = run(["--input", "-", "--format", "json"], capsys)
    assert code == 0
    assert orjson.loads(out)["billing"]["days_analyzed"] == 1.0


def test_unknown_region_warns_and_labels_the_prices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_input(tmp_path, steady_doc(days=2, region="eu-south-2"))
    code, out, err = run(["--input", str(path), "--format", "json"], capsys)
    assert code == 0
    assert err.count("\n") == 1 and "warning: no bundled prices for region eu-south-2" in err
    assert orjson.loads(out)["billing"]["pricing"]["fallback"] is True


def test_price_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = bundled_prices("us-east-1").model_copy(update={"region": "eu-south-2", "source": "team price sheet"})
    price_path = tmp_path / "prices.json"
    price_path.write_bytes(orjson.dumps(prices.model_dump(mode="json")))
    path = write_input(tmp_path, steady_doc(days=2, region="eu-south-2"))
    code, out, err = run(["--input", str(path), "--prices", str(price_path), "--format", "json"], capsys)
    assert code == 0 and err == ""
    pricing = orjson.loads(out)["billing"]["pricing"]
    assert pricing["source"] == "team price sheet" and pricing["fallback"] is False


def _broken(tmp_path: Path, mutate: Any) -> Path:
    doc = steady_doc(days=1)
    mutate(doc)
    return write_input(tmp_path, doc)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["series"][0]["consumed_read"].__setitem__(3, -5), "series[0]: consumed_read[3] must be a finite"),
        (lambda d: d.pop("billing_mode"), "billing_mode: Field required"),
        (lambda d: d.update(billing_mode="ON_DEMAND"), "billing_mode: Input should be 'PAY_PER_REQUEST'"),
        (lambda d: d.update(start="2026-11-01T00:00:30Z"), "start: start must fall on a whole minute"),
        (lambda d: d.update(period_seconds=90), "period_seconds: period_seconds must be a multiple of 60"),
        (lambda d: d.update(billing_mode="PROVISIONED"), "series[0]: provisioned_read and provisioned_write are"),
        (lambda d: d["series"][1].update(index=None), "index None appears twice"),
        (lambda d: d["series"][0].update(provisioned_read=[1, 2]), "provisioned_read has 2 values but consumed_read"),
        (lambda d: d.update(series=[]), "series: List should have at least 1 item"),
        (lambda d: d.update(tabel="x"), "tabel: Extra inputs are not permitted"),
    ],
)
def test_input_errors_are_one_line_naming_the_file_and_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate: Any, message: str
) -> None:
    path = _broken(tmp_path, mutate)
    code, out, err = run(["--input", str(path), "--format", "json"], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"ddb-audit: error: {path}: ")
    assert message in err


def test_unreadable_and_non_json_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--input", str(tmp_path / "nope.json")], capsys)
    assert (code, out) == (2, "") and "nope.json: No such file or directory" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    code, out, err = run(["--input", str(bad)], capsys)
    assert (code, out) == (2, "") and "bad.json: not valid JSON" in err
    arr = tmp_path / "array.json"
    arr.write_text("[1, 2]")
    code, out, err = run(["--input", str(arr)], capsys)
    assert (code, out) == (2, "") and "expected a JSON object" in err
    code, out, err = run(["--input", str(write_input(tmp_path, steady_doc(days=1))), "--prices", str(bad)], capsys)
    assert (code, out) == (2, "") and "price file is not valid JSON" in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["billing"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["billing", "--input", "x.json", "--simulation", "optima"])
    assert exc.value.code == 2
    capsys.readouterr()


def test_per_dimension_settings_on_the_command_line_and_in_a_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(write_input(tmp_path, steady_doc(days=2)))
    config = tmp_path / "billing.json"
    config.write_bytes(orjson.dumps({"target_utilization": 60, "write": {"min_capacity": 40}}))
    code, out, _ = run(
        ["--input", path, "--format", "json", "--config", str(config), "--read-target", "50", "--read-max", "900"],
        capsys,
    )
    assert code == 0
    setting = orjson.loads(out)["billing"]["capacity"][0]  # the table (the GSI gets the same settings)
    assert setting["read"]["target_utilization"] == 50 and setting["read"]["max_capacity"] == 900
    assert setting["write"]["target_utilization"] == 60 and setting["write"]["min_capacity"] == 40
    assert "simulation (aws):" in run(["--input", path, "--target", "80"], capsys)[1]
    # Bad settings are input errors naming where they came from.
    code, out, err = run(["--input", path, "--read-min", "10", "--read-max", "5"], capsys)
    assert code == 2 and out == "" and "billing options: read: min_capacity 10 is above max_capacity 5" in err
    config.write_text('{"read": {"target_utilization": 99}}')
    code, out, err = run(["--input", path, "--config", str(config)], capsys)
    assert code == 2 and out == "" and f"{config}: read.target_utilization" in err


def test_region_prices_come_from_the_pricing_api_or_a_labelled_fallback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import NoCredentialsError

    from auditor.sources import pricing_api as pricing

    asked: list[str] = []

    def no_credentials(api_region: str) -> Any:
        asked.append(api_region)
        raise NoCredentialsError()

    monkeypatch.setattr(pricing, "pricing_client", no_credentials)
    path = str(write_input(tmp_path, steady_doc(days=1)))
    code, out, err = run(["--input", path, "--format", "json", "--region", "eu-west-1"], capsys)
    assert code == 0 and asked == ["eu-central-1"]
    label = orjson.loads(out)["billing"]["pricing"]
    assert "the AWS Pricing API was not used (NoCredentialsError" in label["source"]
    assert label["fallback"] is True and label["region"] == "eu-west-1"  # us-east-1 figures, labelled
    assert "the AWS Pricing API did not answer for eu-west-1" in err
    # Without --region nothing is asked of the API.
    asked.clear()
    assert run(["--input", path], capsys)[0] == 0 and asked == []


def test_trace_out_writes_every_minute_of_every_series_and_report_charts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    from auditor.billing.trace import TRACE_HEADER

    n = 3 * 60
    spiky = [0.0] * 60 + [60_000.0] * 60 + [600.0] * 60  # idle, 1,000/s (throttles while scaling), 10/s
    doc = {
        "table": "Orders",
        "billing_mode": "PAY_PER_REQUEST",
        "start": "2026-11-01T00:00:00Z",
        "series": [
            {"index": None, "consumed_read": spiky, "consumed_write": [60.0] * n},
            {"index": "-by-status", "consumed_read": [None] * 10 + [120.0] * (n - 10), "consumed_write": [0.0] * n},
        ],
    }
    path, trace = str(write_input(tmp_path, doc)), tmp_path / "Orders.csv"
    # A fixed minimum of 1 read unit: the burst has to wait for auto scaling.
    code, out, _ = run(["--input", path, "--format", "json", "--read-min", "1", "--trace-out", str(trace)], capsys)
    assert code == 0
    billing = orjson.loads(out)["billing"]
    rows = list(csv.reader(trace.open()))
    assert tuple(rows[0]) == TRACE_HEADER and len(rows) == 1 + 2 * n
    table = [r for r in rows[1:] if r[1] == ""]
    gsi = [r for r in rows[1:] if r[1] != ""]
    assert {r[1] for r in gsi} == {"'-by-status"}  # a GSI name that a spreadsheet would evaluate is escaped
    assert table[0][0] == "2026-11-01T00:00:00Z" and table[-1][0] == "2026-11-01T02:59:00Z"
    assert [float(r[2]) for r in table] == spiky
    assert [r[2] for r in gsi[:11]] == [""] * 10 + ["120"]  # missing datapoints stay empty
    prices = bundled_prices("us-east-1").standard
    for series, part in ((billing["series"][0], table), (billing["series"][1], gsi)):
        # The trace is the capacity that was priced and the throttling that was counted.
        assert sum(float(r[3]) for r in part) / 60 * prices.rcu_hour == pytest.approx(
            series["read"]["provisioned_cost_simulated"], rel=1e-12
        )
        assert sum(float(r[4]) for r in part) == pytest.approx(series["read"]["throttled_units"], rel=1e-9)
    assert sum(float(r[4]) for r in table) > 0  # the burst throttled while auto scaling caught up
    # The evaluator does not model throttling: those columns are empty.
    code, _, _ = run(["--input", path, "--simulation", "evaluator", "--trace-out", str(tmp_path / "ev.csv")], capsys)
    ev = list(csv.reader((tmp_path / "ev.csv").open()))[1:]
    assert code == 0 and {r[4] for r in ev} == {""} and {r[7] for r in ev} == {""}
    # report charts the trace (the simulated capacity as provisioned), named after the file.
    findings = tmp_path / "findings.json"
    findings.write_text('{"findings": []}')
    code = main(["report", "--findings", str(findings), "--out", str(tmp_path / "r"), "--trace", str(trace)])
    capsys.readouterr()
    assert code == 0
    html = (tmp_path / "r" / "report.html").read_text()
    assert "Orders" in html and "-by-status" in html
    # A file that is not a trace is an input error naming it.
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    code = main(
        ["report", "--findings", str(findings), "--out", str(tmp_path / "r2"), "--trace", str(tmp_path / "bad.csv")]
    )
    assert code == 2 and "not a billing trace" in capsys.readouterr().err
