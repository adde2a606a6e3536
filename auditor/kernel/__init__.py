"""The pure CloudTrail kernel: bytes in, a batch of typed calls and bounded aggregates out.

Reading (``inputs``, ``framing``, ``reader``), typed decoding (``decode``, ``runs``), normalising (``normalize``,
``general``, ``fields``, ``partiql``, ``key_condition``), deduplication and counters (``dedupe``, ``stats``), the calls
it hands out (``calls``) and the window aggregates (``aggregates``). It imports neither boto3 nor pydantic, and it is
the package ``make fast`` compiles with mypyc. ``docs/kernel.md`` describes it.
"""
