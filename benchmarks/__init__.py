"""Throughput and memory benchmarks, one command each, run from the repository root.

- ``python -m benchmarks.ingest`` (also ``make bench``): CloudTrail ingest, ``ddb-audit analyze-trail`` against the
  parse floor (gunzip + ``orjson.loads``), plus the 1M-distinct-keys memory run. ``--help`` lists the options.

Benchmarks report and never gate: they exit 0 and print PASS/FAIL per target. Generated data is cached under
``benchmarks/.data/`` (git-ignored).
"""
