"""The data-model review (``ddb-audit model-review``, docs/model-review.md): proposals to change a table's keys and
indexes, each from access patterns that repeat in the observed traffic, priced by the capacity model.

Pure functions over the engine's aggregates, its access-pattern catalogue, its findings and the review signals
(:mod:`.signals`); no boto3, no clock, no environment.
"""
