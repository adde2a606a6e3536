"""Detectors over a billing simulation's result."""
