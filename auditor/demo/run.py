"""``ddb-audit demo``: generate a realistic workload with planted problems and analyse it, offline."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from auditor.config import AnalysisConfig
from auditor.demo.generator import demo_workload, write_trail
from auditor.engine import TrailAnalysis, analyze_trail
from auditor.render import to_json

DEMO_ACCOUNT = "111122223333"
DEMO_REGION = "us-east-1"
DEMO_START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def run_demo(
    out: Path,
    *,
    seed: int = 7,
    start: datetime = DEMO_START,
    announce: Callable[[str], None] = lambda _m: None,
) -> TrailAnalysis:
    """Write one hour of CloudTrail files under ``out/trail`` and analyse them; findings go to ``out``."""
    trail = out / "trail"
    if trail.exists():
        shutil.rmtree(trail)
    trail.mkdir(parents=True)
    records = demo_workload(start, hours=1.0, seed=seed)
    files = write_trail(records, trail, DEMO_ACCOUNT, DEMO_REGION, seed=seed)
    logs = [f for f in files if "CloudTrail-Digest" not in f.parts]
    announce(
        f"demo: wrote {len(records)} CloudTrail records in {len(logs)} log files "
        f"(+{len(files) - len(logs)} digest files) under {trail}"
    )
    result = analyze_trail([str(trail)], AnalysisConfig())
    (out / "findings.json").write_text(to_json(result.to_dict()))
    s = result.stats
    announce(
        f"demo: analysed {s.files_read} files, {s.data_events} data events "
        f"({s.duplicates_dropped} duplicates dropped); {len(result.findings)} findings -> {out / 'findings.json'}"
    )
    return result
