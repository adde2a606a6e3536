"""The one detector configuration tree: by detector id, with per-table overrides, read the same way by the CLI
(``--config``) and the service (``ANALYSIS_CONFIG_JSON``) for the traffic, metrics-audit and stream detectors."""

from __future__ import annotations

import orjson
import pytest

from auditor.config import AnalysisConfig, load_analysis_config, settings_from_env
from auditor.engine import evaluate
from auditor.exceptions import ConfigurationError, InputError
from auditor.models.finding import FindingKind
from auditor.service.metrics_audit import MetricsAuditParams
from auditor.service.stream_item_size import item_size_config
from tests.factories import call, span

CLEANER = "arn:aws:iam::111122223333:role/session-cleaner"
TREE = {
    "detectors": {"scan": {"high_per_hour": 1000.0}, "cw_scan": {"enabled": False}},
    "tables": {"Orders": {"scan": {"enabled": False}}, "Big": {"large_item": {"threshold_pct": 90}}},
}


def scans(table: str) -> list:  # type: ignore[type-arg]
    return [call("Scan", table=table, at=i * 5, principal=CLEANER) for i in range(50)]


def test_table_overrides_win_over_detector_settings_in_the_traffic_run() -> None:
    config = AnalysisConfig.model_validate(TREE)
    findings, errors = evaluate([span(scans("Orders")), span(scans("Music"))], config)
    assert errors == []
    assert [(f.kind, f.table) for f in findings] == [(FindingKind.SCAN, "Music")]
    # 50 scans in ~4 minutes are 'high' by default; the tree raised the bar for every table
    assert findings[0].severity.value == "medium"
    assert config.detector_config("scan", "Music").high_per_hour == 1000.0
    assert config.detector_config("scan", "Orders").enabled is False


def test_cli_file_and_service_environment_read_the_same_tree(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "config.json"  # type: ignore[operator]
    path.write_bytes(orjson.dumps(TREE))
    from_file = load_analysis_config(path)
    settings = settings_from_env({"ANALYSIS_CONFIG_JSON": orjson.dumps(TREE).decode()})
    assert from_file == settings.analysis_config()
    # the metrics audit and the stream watcher take their detector settings from the same document
    service_env = {
        "ANALYSIS_CONFIG_JSON": orjson.dumps(TREE).decode(),
        "STATE_TABLE_NAME": "state",
        "FINDINGS_TOPIC_ARN": "arn:aws:sns:us-east-1:111122223333:findings",
    }
    audit = MetricsAuditParams.from_settings(settings_from_env(service_env)).audit
    assert audit.detector_config("cw_scan", "Orders").enabled is False
    watcher = item_size_config(settings)
    assert watcher.detector_config("large_item", "Big").threshold_pct == 90
    assert watcher.detector_config("large_item", "Small").threshold_pct == settings.large_item_threshold_pct


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ({"tables": {"Orders": {"nope": {}}}}, "unknown detector 'nope' in tables.Orders"),
        ({"tables": {"Orders": {"scan": {"bogus": 1}}}}, "tables.Orders.scan.bogus: Extra inputs"),
        ({"detectors": {"hot_key": {"min_share": "x"}}}, "detectors.hot_key.min_share"),
    ],
)
def test_bad_trees_fail_when_read(tree: dict, message: str, tmp_path: pytest.TempPathFactory) -> None:  # type: ignore[type-arg]
    path = tmp_path / "bad.json"  # type: ignore[operator]
    path.write_bytes(orjson.dumps(tree))
    with pytest.raises(InputError, match="invalid config"):
        load_analysis_config(path)
    with pytest.raises(ConfigurationError, match="ANALYSIS_CONFIG_JSON"):
        settings_from_env({"ANALYSIS_CONFIG_JSON": orjson.dumps(tree).decode()}).analysis_config()
    with pytest.raises(ValueError, match=message.replace("'", ".")):
        AnalysisConfig.model_validate(tree)
