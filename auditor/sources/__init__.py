"""Sources: all parsing and AWS I/O. They yield typed records to the aggregates."""
