"""The service's own state: everything it writes in order to read it back later, and the interfaces the use cases
take instead of the concrete stores (:mod:`auditor.state.interfaces`).

The state table's stores and the two S3 stores of the reports bucket (event fingerprints, weekly report files); not
reads of what others own (:mod:`auditor.sources`) nor deliveries (:mod:`auditor.sinks`). It imports only lower
layers, never sources or sinks. docs/state-table.md describes every store.
"""
