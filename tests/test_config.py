"""The configuration document's ``service`` section: the deployed stack's advanced settings (auditor/config.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.config import DOCUMENT_SETTINGS, Settings, load_analysis_config, settings_from_env
from auditor.exceptions import ConfigurationError


def _env(document: object, **env: str) -> dict[str, str]:
    return {"ANALYSIS_CONFIG_JSON": json.dumps(document), **env}


def test_the_service_section_sets_settings_and_the_rest_tunes_the_analysis() -> None:
    rules = [{"table": "Sessions*", "kind": "scan", "reason": "nightly export"}]
    document = {
        "window_seconds": 600,
        "service": {
            "evaluation_delay_seconds": 1800,
            "publish_resolved": True,
            "suppress_rules_json": rules,
            "audit_regions": ["us-east-1", "eu-west-1"],
            "log_level": "debug",
        },
    }
    settings = settings_from_env(_env(document))
    assert settings.evaluation_delay_seconds == 1800 and settings.publish_resolved is True
    assert json.loads(settings.suppress_rules_json or "") == rules  # given as JSON, read as the JSON text
    assert settings.audit_regions == "us-east-1,eu-west-1" and settings.log_level == "DEBUG"
    assert settings.analysis_config().window_seconds == 600


def test_an_environment_variable_wins_over_the_document() -> None:
    settings = settings_from_env(_env({"service": {"state_retention_days": 30}}, STATE_RETENTION_DAYS="7"))
    assert settings.state_retention_days == 7


def test_without_a_service_section_nothing_changes() -> None:
    assert settings_from_env(_env({"window_seconds": 600})) == settings_from_env(
        {"ANALYSIS_CONFIG_JSON": '{"window_seconds": 600}'}
    )
    assert settings_from_env(_env({"service": {}})).analysis_config().window_seconds == 900
    assert settings_from_env({}) == Settings()


@pytest.mark.parametrize(
    ("service", "message"),
    [
        ({"state_table_name": "x"}, "service.state_table_name is not a document setting"),
        ({"evaluation_dalay_seconds": 5}, "service.evaluation_dalay_seconds is not a document setting"),
        ({"resolve_after_seconds": 10}, "resolve_after_seconds"),
        ("1800", "service must be an object"),
    ],
)
def test_a_wrong_setting_fails_with_its_name(service: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        settings_from_env(_env({"service": service}))


def test_an_invalid_document_is_still_reported_by_the_analysis_config() -> None:
    settings = settings_from_env({"ANALYSIS_CONFIG_JSON": "{not json"})
    with pytest.raises(ConfigurationError, match="ANALYSIS_CONFIG_JSON is invalid"):
        settings.analysis_config()


def test_the_cli_reads_the_same_document(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"window_seconds": 300, "service": {"publish_resolved": True}}))
    assert load_analysis_config(path).window_seconds == 300


def test_document_settings_are_settings_with_defaults() -> None:
    fields = Settings.model_fields
    assert set(fields) >= DOCUMENT_SETTINGS
    assert all(not fields[name].is_required() for name in DOCUMENT_SETTINGS)
    assert "analysis_config_json" not in DOCUMENT_SETTINGS and "state_table_name" not in DOCUMENT_SETTINGS
