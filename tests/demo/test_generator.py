"""The demo/benchmark CloudTrail generator: determinism, record shapes, trail layout, planted problems."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import re
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from auditor.demo import generator as gen
from auditor.demo import records as record_shapes
from auditor.demo.benchmark import benchmark_records, write_large_log_file
from auditor.demo.records import DEFAULT_ACCOUNT, DEFAULT_REGION, DEFAULT_START
from auditor.demo.trail import write_log_file, write_trail
from auditor.demo.workload import PLANTED_PROBLEMS, demo_workload

HOURS = 0.25  # 15 minutes: every planted problem is present, and the suite stays fast

ENVELOPE = (
    "eventVersion",
    "userIdentity",
    "eventTime",
    "eventSource",
    "eventName",
    "awsRegion",
    "sourceIPAddress",
    "userAgent",
    "requestParameters",
    "responseElements",
    "requestID",
    "eventID",
    "readOnly",
    "resources",
    "eventType",
    "apiVersion",
    "managementEvent",
    "recipientAccountId",
    "eventCategory",
    "tlsDetails",
)
READS = {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "BatchExecuteStatement"}
ALLOWED_ERRORS = {
    (record_shapes.PTEE, record_shapes.PTEE_MESSAGE),
    (record_shapes.THROTTLING, record_shapes.THROTTLING_MESSAGE),
    (record_shapes.VALIDATION, "Item size has exceeded the maximum allowed size"),
    (record_shapes.VALIDATION, "Item size to update has exceeded the maximum allowed size"),
    (record_shapes.CONDITIONAL_FAILED, "The conditional request failed"),
    (record_shapes.TXN_CANCELED, record_shapes.TXN_CANCELED_MESSAGE),
}

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
REQUEST_ID_RE = re.compile(r"^[0-9A-Z]{52}$")
TABLE_ARN_RE = re.compile(r"^arn:aws:dynamodb:([a-z0-9-]+):(\d{12}):table/([A-Za-z0-9_.-]+)$")
LOG_KEY_RE = re.compile(
    r"^AWSLogs/(?P<acct>\d{12})/CloudTrail/(?P<region>[a-z0-9-]+)/(?P<y>\d{4})/(?P<m>\d{2})/(?P<d>\d{2})/"
    r"(?P=acct)_CloudTrail_(?P=region)_(?P<stamp>\d{8}T\d{4}Z)_[A-Za-z0-9]{16}\.json\.gz$"
)
DIGEST_KEY_RE = re.compile(
    r"^AWSLogs/(?P<acct>\d{12})/CloudTrail-Digest/(?P<region>[a-z0-9-]+)/\d{4}/\d{2}/\d{2}/"
    r"(?P=acct)_CloudTrail-Digest_(?P=region)_[A-Za-z0-9_.-]+_(?P=region)_\d{8}T\d{6}Z\.json\.gz$"
)
STATEMENT_KEY_RE = re.compile(r"WHERE (\w+) = '([^']*)'")


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return demo_workload(DEFAULT_START, hours=HOURS, seed=7)


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair of a nested JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _table(record: dict[str, Any]) -> str:
    return TABLE_ARN_RE.match(record["resources"][0]["ARN"]).group(3)  # type: ignore[union-attr]


def _partition_keys(record: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(attribute, value) of every partition key a record names (first attribute of each logged key)."""
    for k, v in _walk(record["requestParameters"]):
        if k.lower() == "key" and isinstance(v, dict) and v:
            attr = next(iter(v))
            yield attr, v[attr]
        elif k.lower() == "keys" and isinstance(v, list):
            for key in v:
                attr = next(iter(key))
                yield attr, key[attr]
    statement = record["requestParameters"].get("statement")
    if isinstance(statement, str):
        m = STATEMENT_KEY_RE.search(statement)
        if m:
            yield m.group(1), m.group(2)


def _read_log(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(gzip.decompress(path.read_bytes()))
    return doc


# ---------------------------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------------------------


def test_demo_workload_is_deterministic_for_a_seed(records: list[dict[str, Any]]) -> None:
    again = demo_workload(DEFAULT_START, hours=HOURS, seed=7)
    other = demo_workload(DEFAULT_START, hours=HOURS, seed=8)
    assert orjson.dumps(again) == orjson.dumps(records)
    assert [r["eventID"] for r in other] != [r["eventID"] for r in records]


def test_demo_workload_is_sorted_by_time_and_within_the_window(records: list[dict[str, Any]]) -> None:
    times = [r["eventTime"] for r in records]
    assert times == sorted(times)
    assert times[0] >= "2026-03-02T09:00:00Z"
    assert times[-1] < "2026-03-02T09:15:00Z"


def test_benchmark_records_are_deterministic() -> None:
    a = [orjson.dumps(r) for r in benchmark_records(300, 100, seed=5)]
    b = [orjson.dumps(r) for r in benchmark_records(300, 100, seed=5)]
    c = [orjson.dumps(r) for r in benchmark_records(300, 100, seed=6)]
    assert a == b
    assert a != c


# ---------------------------------------------------------------------------------------------------------------
# Record shapes (cloudtrail.md §1)
# ---------------------------------------------------------------------------------------------------------------


def _check_envelope(r: dict[str, Any], account: str = DEFAULT_ACCOUNT, region: str = DEFAULT_REGION) -> None:
    for name in ENVELOPE:
        assert name in r, name
    assert r["eventVersion"] == "1.08"
    assert TIME_RE.match(r["eventTime"])
    assert r["eventSource"] == "dynamodb.amazonaws.com"
    assert r["awsRegion"] == region
    assert r["responseElements"] is None
    assert REQUEST_ID_RE.match(r["requestID"])
    assert uuid.UUID(r["eventID"]).version == 4
    assert isinstance(r["readOnly"], bool)
    assert r["eventType"] == "AwsApiCall"
    assert r["apiVersion"] == "2012-08-10"
    assert r["managementEvent"] is False
    assert r["recipientAccountId"] == account
    assert r["eventCategory"] == "Data"
    assert set(r["tlsDetails"]) == {"tlsVersion", "cipherSuite", "clientProvidedHostHeader"}
    assert r["tlsDetails"]["clientProvidedHostHeader"] == f"dynamodb.{region}.amazonaws.com"
    assert r["resources"]
    for res in r["resources"]:
        assert set(res) == {"accountId", "type", "ARN"}
        assert res["type"] == "AWS::DynamoDB::Table"
        assert res["accountId"] == account
        m = TABLE_ARN_RE.match(res["ARN"])
        assert m is not None and m.group(1) == region and m.group(2) == account
    if "errorCode" in r:
        assert (r["errorCode"], r["errorMessage"]) in ALLOWED_ERRORS

    ident = r["userIdentity"]
    assert ident["accountId"] == account
    if ident["type"] == "AssumedRole":
        role_id, _, session = ident["principalId"].partition(":")
        assert role_id.startswith("AROA") and session
        issuer = ident["sessionContext"]["sessionIssuer"]
        assert issuer["type"] == "Role"
        assert issuer["principalId"] == role_id
        assert issuer["arn"] == f"arn:aws:iam::{account}:role/{issuer['userName']}"
        assert ident["arn"] == f"arn:aws:sts::{account}:assumed-role/{issuer['userName']}/{session}"
        assert ident["accessKeyId"].startswith("ASIA") and len(ident["accessKeyId"]) == 20
        attrs = ident["sessionContext"]["attributes"]
        assert attrs["mfaAuthenticated"] == "false"
        assert TIME_RE.match(attrs["creationDate"]) and attrs["creationDate"] <= r["eventTime"]
    else:
        assert ident["type"] == "IAMUser"
        assert ident["principalId"].startswith("AIDA")
        assert ident["arn"] == f"arn:aws:iam::{account}:user/{ident['userName']}"
        assert ident["accessKeyId"].startswith("AKIA")


def _check_parameters(r: dict[str, Any]) -> None:
    name, params = r["eventName"], r["requestParameters"]
    for k, _ in _walk(params):
        assert k.lower() != "expressionattributevalues"
    for k, v in _walk(params):
        if k.lower() in ("key", "exclusivestartkey"):
            assert isinstance(v, dict) and v
            assert all(isinstance(x, (str, int, float)) for x in v.values()), v  # plain values, not {"S": ...}
    if name in READS:
        assert r["readOnly"] is True
    elif name in WRITES or name == "ExecuteStatement":
        assert r["readOnly"] is False  # the AWS ExecuteStatement SELECT sample says false
    if name in ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"):
        assert params["tableName"] == _table(r)
    if name == "PutItem":
        assert isinstance(params["item"], list) and all(isinstance(a, str) for a in params["item"])
    if name == "UpdateItem":
        assert isinstance(params["updateExpression"], str)
    if name == "Query":
        assert "keyConditionExpression" in params
    if name in ("BatchGetItem", "BatchWriteItem"):
        assert isinstance(params["requestItems"], dict)
        assert sorted(params["requestItems"]) == sorted(TABLE_ARN_RE.match(x["ARN"]).group(3) for x in r["resources"])  # type: ignore[union-attr]
    if name == "TransactWriteItems":
        assert isinstance(params["requestItems"], list)
        for entry in params["requestItems"]:
            assert entry["operation"] in ("Put", "Update", "Delete", "ConditionCheck")
            assert ("tableName" in entry) != ("TableName" in entry)
            assert ("key" in entry) != ("Key" in entry)
            if entry["operation"] == "Put":
                assert all(isinstance(a, str) for a in entry["items"])
    if name == "ExecuteStatement":
        assert set(params) == {"statement"}
    if name == "BatchExecuteStatement":
        assert all(set(e) == {"statement"} for e in params["requestItems"])


def test_every_demo_record_has_the_documented_envelope(records: list[dict[str, Any]]) -> None:
    for r in records:
        _check_envelope(r)
        _check_parameters(r)


def test_every_benchmark_record_has_the_documented_envelope() -> None:
    names = Counter()
    for r in benchmark_records(3000, 1000, seed=2, account="444455556666", region="eu-west-1"):
        _check_envelope(r, "444455556666", "eu-west-1")
        _check_parameters(r)
        names[r["eventName"]] += 1
    assert {"GetItem", "PutItem", "UpdateItem", "Query", "BatchWriteItem", "ExecuteStatement"} <= set(names)


def test_transact_write_items_mix_the_key_casing_as_the_aws_sample(records: list[dict[str, Any]]) -> None:
    spellings: set[str] = set()
    for r in records:
        if r["eventName"] == "TransactWriteItems":
            for entry in r["requestParameters"]["requestItems"]:
                spellings.update(k for k in entry if k.lower() in ("tablename", "key", "conditionexpression"))
    assert {"tableName", "TableName", "key", "Key", "conditionExpression", "ConditionExpression"} <= spellings


def test_partiql_statements_redact_non_key_literals(records: list[dict[str, Any]]) -> None:
    statements = [r["requestParameters"]["statement"] for r in records if r["eventName"] == "ExecuteStatement"]
    assert 'SELECT * FROM "Catalog" WHERE price > ***(Redacted)' in statements
    assert any(re.search(r"WHERE pk = 'PRODUCT#\d+' AND sk = 'DETAILS'$", s) for s in statements)
    assert any(s.endswith("AND inStock = ***(Redacted)") for s in statements)
    for s in statements:
        assert "= '" not in s.split("SET", 1)[-1].split("WHERE", 1)[0]  # SET values are always redacted


def test_errors_are_top_level_with_the_documented_messages(records: list[dict[str, Any]]) -> None:
    codes = Counter(r.get("errorCode") for r in records)
    assert (
        codes[record_shapes.PTEE] > 0
        and codes[record_shapes.VALIDATION] == 7
        and codes[record_shapes.CONDITIONAL_FAILED] > 0
    )
    for r in records:
        assert ("errorCode" in r) == ("errorMessage" in r)
        if r.get("errorCode") == record_shapes.PTEE:
            assert r["requestParameters"]["key"]["pk"] == "CUSTOMER#42"
        if r.get("errorCode") == record_shapes.VALIDATION:
            key = r["requestParameters"]["key"]
            if r["eventName"] == "UpdateItem":
                assert key == {"docId": "DOC#7"}
                assert r["errorMessage"] == "Item size to update has exceeded the maximum allowed size"
                assert "list_append" in r["requestParameters"]["updateExpression"]
            else:
                assert r["eventName"] == "PutItem" and key == {"docId": "DOC#913"}
                assert r["errorMessage"] == "Item size has exceeded the maximum allowed size"


# ---------------------------------------------------------------------------------------------------------------
# Planted problems
# ---------------------------------------------------------------------------------------------------------------


def test_planted_tables_and_principals_are_present(records: list[dict[str, Any]]) -> None:
    tables = {_table(r) for r in records}
    assert {"Orders", "Sessions", "Jobs", "Documents", "Catalog", "Users"} <= tables
    principals = {
        r["userIdentity"].get("sessionContext", {}).get("sessionIssuer", {}).get("arn") or r["userIdentity"]["arn"]
        for r in records
    }
    for problem in PLANTED_PROBLEMS:
        assert problem.table in tables
        if problem.principal is not None:
            assert problem.principal in principals


def test_hot_key_takes_about_35_percent_of_key_identified_orders_requests(records: list[dict[str, Any]]) -> None:
    per_key = Counter(pk for r in records if _table(r) == "Orders" for attr, pk in _partition_keys(r) if attr == "pk")
    share = per_key["CUSTOMER#42"] / sum(per_key.values())
    assert 0.33 <= share <= 0.37
    assert per_key.most_common(2)[1][1] / sum(per_key.values()) < 0.01  # nobody else is hot
    burst = Counter(
        r["eventTime"] for r in records if _table(r) == "Orders" and ("pk", "CUSTOMER#42") in _partition_keys(r)
    )
    assert max(burst.values()) >= 150  # a realistic per-second rate inside the burst


def test_scans_are_the_planted_ones(records: list[dict[str, Any]]) -> None:
    scans = Counter(
        (
            _table(r),
            r["userIdentity"].get("sessionContext", {}).get("sessionIssuer", {}).get("arn", r["userIdentity"]["arn"]),
        )
        for r in records
        if r["eventName"] == "Scan"
    )
    cleaner = f"arn:aws:iam::{DEFAULT_ACCOUNT}:role/session-cleaner"
    alice = f"arn:aws:iam::{DEFAULT_ACCOUNT}:user/alice"
    assert set(scans) == {("Sessions", cleaner), ("Sessions", alice)}
    assert scans[("Sessions", alice)] == 2
    assert scans[("Sessions", cleaner)] >= HOURS * 3600 / 5 * 4  # every ~5 s, four segments
    segments = {
        (r["requestParameters"]["segment"], r["requestParameters"]["totalSegments"])
        for r in records
        if r["eventName"] == "Scan" and "segment" in r["requestParameters"]
    }
    assert segments == {(0, 4), (1, 4), (2, 4), (3, 4)}


def test_jobs_partition_key_has_four_values_and_users_stay_healthy(records: list[dict[str, Any]]) -> None:
    jobs = Counter(v for r in records if _table(r) == "Jobs" for a, v in _partition_keys(r) if a == "status")
    assert set(jobs) == {"PENDING", "RUNNING", "DONE", "FAILED"}
    assert sum(jobs.values()) > 1000
    users = [r for r in records if _table(r) == "Users"]
    assert users and all("errorCode" not in r and r["eventName"] != "Scan" for r in users)
    per_key = Counter(v for r in users for _, v in _partition_keys(r))
    assert per_key.most_common(1)[0][1] / sum(per_key.values()) < 0.005
    assert len(per_key) > 1000


# ---------------------------------------------------------------------------------------------------------------
# The trail layout
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> tuple[Path, list[Path]]:
    out = tmp_path_factory.mktemp("trail")
    return out, write_trail(records, out, DEFAULT_ACCOUNT, DEFAULT_REGION, seed=7, duplicates=4)


def test_log_files_follow_the_aws_layout(trail: tuple[Path, list[Path]]) -> None:
    out, paths = trail
    logs = [p for p in paths if "CloudTrail-Digest" not in p.parts]
    assert len(logs) >= 3  # one file per ~5 minutes of traffic
    assert sorted(paths) == sorted(p for p in out.rglob("*") if p.is_file())
    for path in logs:
        m = LOG_KEY_RE.match(path.relative_to(out).as_posix())
        assert m is not None, path
        assert m["acct"] == DEFAULT_ACCOUNT and m["region"] == DEFAULT_REGION
        assert m["stamp"][:8] == m["y"] + m["m"] + m["d"]  # the folder is the publish date
        doc = _read_log(path)
        assert list(doc) == ["Records"] and isinstance(doc["Records"], list)


def test_files_hold_every_record_plus_duplicates_and_are_not_sorted(
    trail: tuple[Path, list[Path]], records: list[dict[str, Any]]
) -> None:
    _, paths = trail
    seen: dict[str, list[Path]] = {}
    unsorted = 0
    total = 0
    for path in paths:
        if "CloudTrail-Digest" in path.parts:
            continue
        recs = _read_log(path)["Records"]
        total += len(recs)
        times = [r["eventTime"] for r in recs]
        unsorted += times != sorted(times)
        for r in recs:
            seen.setdefault(r["eventID"], []).append(path)
    assert total == len(records) + 4
    assert set(seen) == {r["eventID"] for r in records}
    dupes = {eid: files for eid, files in seen.items() if len(files) > 1}
    assert len(dupes) == 4
    assert all(len(set(files)) == 2 for files in dupes.values())  # duplicated across two files
    assert unsorted > 0


def test_digest_file_lists_the_log_files_with_their_hashes(trail: tuple[Path, list[Path]]) -> None:
    out, paths = trail
    digests = [p for p in paths if "CloudTrail-Digest" in p.parts]
    logs = {p.relative_to(out).as_posix(): p for p in paths if "CloudTrail-Digest" not in p.parts}
    assert digests
    listed: dict[str, str] = {}
    previous = None
    for path in digests:
        key = path.relative_to(out).as_posix()
        assert DIGEST_KEY_RE.match(key), key
        doc = _read_log(path)
        assert "Records" not in doc
        assert doc["digestS3Object"] == key
        assert doc["awsAccountId"] == DEFAULT_ACCOUNT
        assert doc["previousDigestS3Object"] == previous
        previous = key
        for entry in doc["logFiles"]:
            assert entry["hashAlgorithm"] == "SHA-256"
            listed[entry["s3Object"]] = entry["hashValue"]
    assert set(listed) == set(logs)
    for key, digest in listed.items():
        assert hashlib.sha256(gzip.decompress(logs[key].read_bytes())).hexdigest() == digest


def test_write_trail_is_byte_for_byte_reproducible(tmp_path: Path) -> None:
    recs = demo_workload(DEFAULT_START, hours=0.05, seed=1)
    a = write_trail(recs, tmp_path / "a", seed=3)
    b = write_trail(recs, tmp_path / "b", seed=3)
    assert [p.relative_to(tmp_path / "a") for p in a] == [p.relative_to(tmp_path / "b") for p in b]
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_write_log_file_plain_and_gzip(tmp_path: Path) -> None:
    recs = list(itertools.islice(benchmark_records(50, 20), 50))
    assert write_log_file(recs, tmp_path / "a.json", gz=False) == 50
    assert orjson.loads((tmp_path / "a.json").read_bytes()) == {"Records": recs}
    assert write_log_file(iter(recs), tmp_path / "b.json.gz") == 50
    assert _read_log(tmp_path / "b.json.gz") == {"Records": recs}
    assert write_log_file([], tmp_path / "empty.json.gz") == 0
    assert _read_log(tmp_path / "empty.json.gz") == {"Records": []}


# ---------------------------------------------------------------------------------------------------------------
# Benchmark records
# ---------------------------------------------------------------------------------------------------------------


def test_benchmark_records_stream() -> None:
    stream = benchmark_records(10**9, 10**6, seed=1)  # a list this long could not be built
    assert iter(stream) is stream
    head = list(itertools.islice(stream, 200))
    assert len(head) == 200
    sizes = [len(orjson.dumps(r)) for r in head]
    assert 1000 < sum(sizes) / len(sizes) < 2000


@pytest.mark.parametrize(("n", "keys"), [(500, 500), (500, 37), (2000, 1999), (1, 1)])
def test_benchmark_records_have_exactly_the_requested_distinct_keys(n: int, keys: int) -> None:
    recs = list(benchmark_records(n, keys, seed=4))
    assert len(recs) == n
    assert len({v for r in recs for _, v in _partition_keys(r)}) == keys


def test_benchmark_records_reject_impossible_key_counts() -> None:
    with pytest.raises(ValueError, match="cannot exceed"):
        next(benchmark_records(10, 11))


def test_write_large_log_file(tmp_path: Path) -> None:
    path = tmp_path / "big.json.gz"
    assert write_large_log_file(path, 300, 120, seed=9) == 300
    recs = _read_log(path)["Records"]
    assert len(recs) == 300
    assert orjson.dumps(recs) == orjson.dumps(list(benchmark_records(300, 120, seed=9)))


# ---------------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------------


def test_cli_writes_a_demo_trail_and_a_benchmark_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert gen.main(["--out", str(tmp_path / "demo"), "--hours", "0.05", "--seed", "3"]) == 0
    assert list((tmp_path / "demo").rglob("*_CloudTrail_*.json.gz"))
    assert list((tmp_path / "demo").rglob("*_CloudTrail-Digest_*.json.gz"))
    file = tmp_path / "bench.json.gz"
    assert gen.main(["--benchmark", "100", "--distinct-keys", "10", "--file", str(file)]) == 0
    assert len(_read_log(file)["Records"]) == 100
    assert "wrote 100 records" in capsys.readouterr().out
