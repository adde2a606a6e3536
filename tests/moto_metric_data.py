"""moto's GetMetricData made fit for 14-day reads at 1-minute periods, and paged the way CloudWatch pages.

moto computes every query by scanning every stored datapoint of the window for every period: a 14-day read at 60 s
is 20,160 periods times every datapoint (minutes per query), and it returns everything in one response.
:func:`install` replaces it, for the moto server running in this process, with an equivalent that indexes the
datapoints once per request (the same selection: namespace, metric name, exact dimension set, ``[StartTime,
EndTime)``; the same statistics: moto's own ``Statistics``), and that

- rejects more than 500 queries in a request, as CloudWatch does;
- returns at most ``page_datapoints`` datapoints per response (CloudWatch: 100,800): the queries that do not fit come
  back ``PartialData`` with a ``NextToken``, and the request re-sent with it continues them.

Every response served is recorded (:class:`Served`), so a test can count calls, pages and datapoints on the server
side too. ListMetrics is replaced the same way (moto compares every datapoint with every metric listed so far): the
distinct metrics matching the namespace, name and dimension filters, 500 per page.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from moto.cloudwatch.exceptions import InvalidParameterValue
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core.responses import ActionResult

from auditor.demo.metric_data import compute, paged_list_metrics

#: CloudWatch's limits per GetMetricData request and response.
MAX_QUERIES = 500
MAX_DATAPOINTS = 100_800

_Key = tuple[str, str, frozenset[tuple[str, str]]]


@dataclass(frozen=True)
class Page:
    """One GetMetricData response: the queries in the request, the datapoints returned, whether more follow."""

    queries: int
    datapoints: int
    continued: bool
    next_token: bool
    #: EndTime - StartTime of the request (seconds).
    seconds: int


@dataclass
class Served:
    """What the patched GetMetricData answered, in order."""

    page_datapoints: int
    pages: list[Page] = field(default_factory=list)
    pending: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Queries answered ``Forbidden`` (as CloudWatch does for a metric the caller may not read): called with the
    #: query and the request's window in seconds.
    forbidden: Callable[[dict[str, Any], int], bool] | None = None

    @property
    def requests(self) -> int:
        """Requests answered (first pages and continuations)."""
        return len(self.pages)

    @property
    def calls(self) -> int:
        """Requests without a NextToken (a new set of queries)."""
        return sum(1 for p in self.pages if not p.continued)

    @property
    def datapoints(self) -> int:
        return sum(p.datapoints for p in self.pages)

    def split(self, results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """This response's results (at most ``page_datapoints`` values) and what is left for the next page."""
        budget = self.page_datapoints
        page: list[dict[str, Any]] = []
        rest: list[dict[str, Any]] = []
        for r in results:
            n = len(r["values"])
            if n and budget <= 0:
                rest.append(r)
                continue
            take = min(n, budget)
            page.append(r | {"values": r["values"][:take], "timestamps": r["timestamps"][:take]})
            if take < n:
                page[-1]["status_code"] = "PartialData"
                rest.append(r | {"values": r["values"][take:], "timestamps": r["timestamps"][take:]})
            budget -= take
        return page, rest


def install(monkeypatch: pytest.MonkeyPatch, page_datapoints: int = MAX_DATAPOINTS) -> Served:
    """Patch the in-process moto server's GetMetricData (undone with ``monkeypatch``); returns the record."""
    served = Served(page_datapoints)

    def get_metric_data(self: CloudWatchResponse) -> ActionResult:
        params = self._get_params()
        queries = params.get("MetricDataQueries", [])
        if len(queries) > MAX_QUERIES:
            raise InvalidParameterValue(f"at most {MAX_QUERIES} MetricDataQueries per request")
        token = params.get("NextToken")
        start = params["StartTime"].replace(microsecond=0)
        end = params["EndTime"].replace(microsecond=0)
        seconds = int((end - start).total_seconds())
        if token:
            if token not in served.pending:
                raise InvalidParameterValue("Request parameter NextToken is invalid")
            results = served.pending.pop(token)
        else:
            scan_by = params.get("ScanBy") or "TimestampDescending"
            results = compute(self.cloudwatch_backend, queries, start, end, scan_by)
            if served.forbidden is not None:
                by_id = {q["Id"]: q for q in queries}
                for r in results:
                    if served.forbidden(by_id[r["id"]], seconds):
                        r.update(values=[], timestamps=[], status_code="Forbidden")
        page, rest = served.split(results)
        next_token = str(uuid.uuid4()) if rest else None
        if next_token is not None:
            served.pending[next_token] = rest
        served.pages.append(
            Page(len(queries), sum(len(r["values"]) for r in page), bool(token), next_token is not None, seconds)
        )
        return ActionResult({"MetricDataResults": page, "NextToken": next_token})

    monkeypatch.setattr(CloudWatchResponse, "get_metric_data", get_metric_data)
    monkeypatch.setattr(CloudWatchResponse, "list_metrics", paged_list_metrics())
    return served
