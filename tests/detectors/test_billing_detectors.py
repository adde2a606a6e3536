"""The billing detectors (``billing_mode``, ``table_class``) on a billing result: thresholds, severity, the
account they are given, the per-table config tree, and the catalogue's enabled switch."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from auditor.billing.decide import decide_table
from auditor.config import AnalysisConfig
from auditor.detectors.base import BillingResultInput
from auditor.detectors.billing import billing_mode, table_class
from auditor.models.billing import BillingInput, BillingResult
from auditor.models.finding import FindingKind, Severity

MINUTES = 14 * 1440


def result(table_size_bytes: int | None = None) -> BillingResult:
    """A steady on-demand table (100 RRU/s, 20 WRU/s for 14 days): provisioned saves $38.37/month."""
    doc = {
        "table": "Orders",
        "region": "us-east-1",
        "billing_mode": "PAY_PER_REQUEST",
        "start": datetime(2026, 11, 1, tzinfo=UTC).isoformat(),
        "series": [{"index": None, "consumed_read": [6000.0] * MINUTES, "consumed_write": [1200.0] * MINUTES}],
    }
    if table_size_bytes is not None:
        doc["table_size_bytes"] = table_size_bytes
    decided, _ = decide_table(BillingInput.from_document(doc, "test"))
    return decided


def test_billing_mode_finding_carries_the_given_account_and_the_savings() -> None:
    r = result()
    (f,) = billing_mode.detect(BillingResultInput(r, "111122223333"))
    assert f.kind is FindingKind.BILLING_MODE and f.account == "111122223333" and f.table == "Orders"
    assert f.severity is Severity.LOW  # $38.37/month is under the $100 medium threshold
    assert f.evidence["monthly_savings"] == pytest.approx(38.37, abs=0.01)
    assert f.first_seen == r.window_start and f.last_seen == r.window_end
    assert not f.missing_evidence()


def test_billing_mode_thresholds_and_enabled_switch() -> None:
    r = result()
    assert billing_mode.detect(BillingResultInput(r), billing_mode.BillingModeConfig(min_monthly_savings=50)) == []
    (f,) = billing_mode.detect(BillingResultInput(r), billing_mode.BillingModeConfig(medium_monthly_savings=30))
    assert f.severity is Severity.MEDIUM
    assert billing_mode.detect(BillingResultInput(r), {"enabled": False}) == []


def test_table_class_finding_only_when_the_other_class_is_cheaper() -> None:
    assert table_class.detect(BillingResultInput(result())) == []  # no table size: no hint
    (f,) = table_class.detect(BillingResultInput(result(1000 * 2**30), "111122223333"))
    assert f.kind is FindingKind.TABLE_CLASS and f.account == "111122223333"
    assert f.evidence["recommended_class"] == "STANDARD_INFREQUENT_ACCESS"
    assert f.severity is Severity.MEDIUM and not f.missing_evidence()


def test_per_table_overrides_win_over_the_detector_settings() -> None:
    tree = AnalysisConfig(
        detectors={"table_class": {"medium_monthly_savings": 1000.0}},
        tables={"Orders": {"table_class": {"high_monthly_savings": 120.0}}},
    )
    r = BillingResultInput(result(1000 * 2**30))
    (elsewhere,) = table_class.detect(r, tree.detector_config("table_class", "Other"))
    (orders,) = table_class.detect(r, tree.detector_config("table_class", "Orders"))
    assert (elsewhere.severity, orders.severity) == (Severity.LOW, Severity.HIGH)
