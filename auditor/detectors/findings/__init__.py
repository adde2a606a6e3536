"""Detectors over existing findings: correlation of one story told by two sources."""
