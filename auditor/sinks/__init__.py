"""Sinks: the state table, SNS, Slack and reports (all I/O lives here and in sources)."""
