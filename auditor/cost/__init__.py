"""Cost: the ledger (audited DynamoDB spend against the auditor's own) and the capture planner."""
