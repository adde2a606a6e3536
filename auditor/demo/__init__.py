"""Offline demo material.

:mod:`auditor.demo.generator` writes deterministic, realistic CloudTrail DynamoDB data events with planted
problems (:mod:`~auditor.demo.workload`) as a trail (:mod:`~auditor.demo.trail`), or large benchmark files
(:mod:`~auditor.demo.benchmark`), from the record shapes of :mod:`~auditor.demo.records`; it is also a command:
``python -m auditor.demo.generator --help``. This package module imports nothing, so that
``python -m auditor.demo.generator`` runs cleanly.
"""
