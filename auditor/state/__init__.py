"""The service's own state: everything it writes in order to read it back later, and the interfaces the use cases
take instead of the concrete stores (:mod:`auditor.state.interfaces`).

Here: the state table (its key design in :mod:`auditor.state.keys`; window aggregates and ingest marks, findings and
the publish outbox, item size histories, the capture controller's plans, the cost ledger, the organisation audit's
cycle, the weekly report's announcement marker) and the two S3 stores of the service's own data in the reports
bucket: the event fingerprints of ingested trail objects (written by ingest, read by the evaluator) and the weekly
report files (written, then linked to). Not here: reads of what others own (:mod:`auditor.sources`) and deliveries
to the outside (:mod:`auditor.sinks`: SNS, Slack, Security Hub, the trail's event selectors).

Import rules: this package imports only lower layers (models, kernel, lifecycle, cost, report), never sources or
sinks; sinks may import it (the SNS publisher drains the findings store's outbox).
"""
