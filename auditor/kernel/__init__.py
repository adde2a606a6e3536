"""The pure CloudTrail kernel: bytes in, a batch of typed calls and bounded aggregates out.

It holds the record reader (``reader``), the typed decode of a record's light-path fields (``decode``), the
normaliser (``normalize``, with ``partiql`` and ``key_condition``), deduplication (``dedupe``), the ingest counters
(``stats``), the calls it hands out (``calls``) and the window aggregates (``aggregates``). It imports neither boto3
nor pydantic (``tests/architecture/test_import_rules.py`` checks), and it is the package ``make fast`` compiles with
mypyc.
"""
