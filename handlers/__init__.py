"""The Lambda entry points: one thin handler per function of template.yaml (docs/architecture.md lists them)."""
