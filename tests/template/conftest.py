"""Fixtures of the template tests: a moto server (real HTTP) for the module."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """A moto server on a free loopback port (its own: the template tests do not share moto state)."""
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
