"""Billing-mode and table-class recommendations in dollars (``ddb-audit billing``).

This package imports nothing on purpose: :mod:`auditor.detectors.billing.billing_mode` imports the models, and the
decision imports the detectors, so re-exporting here would create an import cycle. Its modules (prices, the two
simulators, the decision, the renderings) are listed in docs/billing-simulation.md.
"""
