"""Detectors over CloudTrail traffic windows (:class:`~auditor.aggregates.window.TableWindow`)."""
