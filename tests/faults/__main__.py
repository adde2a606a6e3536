"""``python -m tests.faults``: run every case of the fault-injection suite and print its table (docs/faults.md)."""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path

from moto.server import ThreadedMotoServer

from auditor.demo.stack import SlackCatcher
from tests.faults.pipeline import INJECTOR, Pipeline, make_trail, reset_moto
from tests.faults.table import CASES, render, row_of


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    began = time.perf_counter()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    catcher = SlackCatcher().start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        INJECTOR.install()
        trail = make_trail(Path(tempfile.mkdtemp(prefix="fault-trail-")))
        reset_moto(endpoint)
        INJECTOR.reset(None)
        clean = Pipeline(endpoint, catcher, trail).run()
        rows = []
        for fault in CASES:
            reset_moto(endpoint)
            INJECTOR.reset(fault.placed(clean.calls))
            rows.append(row_of(fault, Pipeline(endpoint, catcher, trail).run(), clean, trail))
        sys.stdout.write(render(rows))
        sys.stdout.write(f"{time.perf_counter() - began:.0f} s\n")
        return 0
    finally:
        catcher.stop()
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
