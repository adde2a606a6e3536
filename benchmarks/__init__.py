"""Throughput and memory benchmarks, one command each, run from the repository root.

- ``python -m benchmarks.ingest`` (also ``make bench``): CloudTrail ingest, ``ddb-audit analyze-trail`` against the
  parse floor (gunzip + ``orjson.loads``), plus the 1M-distinct-keys memory run. ``--help`` lists the options.
- ``python -m benchmarks.stages`` (also ``make bench-stages``): the CPU of ``analyze-trail --jobs 1`` stage by stage
  (imports, gunzip, cut and decode, normalise and deduplicate, aggregate, detect) next to the same parse floor.
- ``python -m benchmarks.lambda_path`` (also ``make bench-lambda``): the trail-ingest handler on moto, CPU and
  dollars per million records.

Benchmarks report and never gate: they exit 0 and print PASS/FAIL per target. Generated data is cached under
``benchmarks/.data/`` (git-ignored).
"""
