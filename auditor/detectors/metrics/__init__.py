"""Detectors over a table's CloudWatch metrics and inventory profile."""
