"""Detectors over CloudTrail traffic windows (:class:`~auditor.kernel.aggregates.window.TableWindow`)."""
