"""Sinks: deliveries to the outside (SNS, Slack, Security Hub, the trail's event selectors); the service's own state
is in :mod:`auditor.state`, reads in :mod:`auditor.sources`."""
