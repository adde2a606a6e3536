"""Reading the CloudWatch embedded-metric-format lines the handler runtime writes to stdout."""

from __future__ import annotations

import json
from typing import Any


def emitted(stdout: str, namespace: str = "DdbTrafficAuditor") -> list[dict[str, float]]:
    """Each EMF line of ``stdout`` as ``{metric name: value}``; checks the namespace, the one dimension and units."""
    out = []
    for line in stdout.splitlines():
        if not line.startswith('{"_aws"'):
            continue
        blob: dict[str, Any] = json.loads(line)
        [directive] = blob["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == namespace
        assert directive["Dimensions"] == [["service"]] and blob["service"] == "ddb-traffic-auditor"
        values = {}
        for metric in directive["Metrics"]:
            assert metric["Unit"] in ("Count", "Seconds")
            [value] = blob[metric["Name"]]
            values[metric["Name"]] = value
        out.append(values)
    return out
