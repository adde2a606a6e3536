"""Detectors over Contributor Insights reports."""
