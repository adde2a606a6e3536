"""Typed records and pure rules shared by the layers above the kernel (findings, billing, inventory, metrics, item
sizes). Import each from its module: this package imports nothing, so a module that needs one record does not load
pydantic for the others."""
