"""Offline demo material.

:mod:`auditor.demo.generator` writes deterministic, realistic CloudTrail DynamoDB data events with planted
problems (see its docstring); it is also a command: ``python -m auditor.demo.generator --help``. This package
module imports nothing, so that ``python -m auditor.demo.generator`` runs cleanly.
"""
