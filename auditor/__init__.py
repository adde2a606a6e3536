"""ddb-traffic-auditor: DynamoDB modelling mistakes found from real traffic (layout: docs/architecture.md)."""
