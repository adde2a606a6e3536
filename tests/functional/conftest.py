"""Shared fixtures for functional tests: one moto server (real HTTP) for the session, reset per test."""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from auditor.sinks import keys

REGION = "us-east-1"


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server on a free loopback port for the whole session."""
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def aws_reset(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Empty moto state and dummy credentials pointing boto3 at the server; yields the endpoint URL."""
    req = urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    yield moto_endpoint


def client(service: str, endpoint: str) -> Any:
    """A boto3 client for ``service`` on the moto server."""
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def create_state_table(ddb: Any, name: str = "auditor-state") -> str:
    """Create the state table exactly as template.yaml defines it (keys.py design)."""
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": "S"}
            for a in (keys.PK, keys.SK, keys.GSI1_PK, keys.GSI1_SK, keys.GSI2_PK, keys.GSI2_SK)
        ],
        KeySchema=[{"AttributeName": keys.PK, "KeyType": "HASH"}, {"AttributeName": keys.SK, "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": idx,
                "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
            for idx, pk, sk in (
                (keys.GSI1, keys.GSI1_PK, keys.GSI1_SK),
                (keys.GSI2, keys.GSI2_PK, keys.GSI2_SK),
            )
        ],
    )
    return name
