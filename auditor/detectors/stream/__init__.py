"""Detectors over DynamoDB Streams item-size observations."""
