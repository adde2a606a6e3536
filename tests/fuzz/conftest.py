"""Hypothesis profiles for the fuzz suite: ``make test`` runs the default (about a minute), ``make fuzz`` the long
one (``HYPOTHESIS_PROFILE=fuzz``)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "fuzz-default", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile(
    "fuzz", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
FUZZ_PROFILE = "fuzz" if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else "fuzz-default"
