"""Billing-mode and table-class recommendations in dollars (``ddb-audit billing``).

Modules:

- :mod:`auditor.billing.pricing`: the bundled, dated price table (the AWS Pricing API refresh is
  :mod:`auditor.sources.pricing_api`).
- :mod:`auditor.billing.simulate`: two O(n) simulators of provisioned capacity under auto scaling, ``aws``
  (documented AWS behaviour, :mod:`auditor.billing.aws_scaling`) and ``evaluator`` (the archived awslabs
  capacity-mode-evaluator, reproduced exactly, :mod:`auditor.billing.evaluator_scaling`), and what they share.
- ``tests/billing_reference.py`` (not shipped): straightforward window-rescanning versions of both simulators, the
  test oracle and the benchmark baseline.
- :mod:`auditor.billing.decide`: one decision per table (table plus GSIs, reads plus writes), with the findings.
- :mod:`auditor.models.billing`: the input and output models of docs/contract.md.
- :mod:`auditor.billing.billing_text`: table and Markdown renderings for the CLI.

This package imports nothing on purpose: :mod:`auditor.detectors.billing.billing_mode` imports the models, and the
decision imports the detectors, so re-exporting here would create an import cycle.
"""
