"""Detectors of the auditor's own capture: what the capture controller's plan leaves unseen."""
