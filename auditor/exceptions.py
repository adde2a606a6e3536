"""Error hierarchy. Every error the CLI reports as an input error derives from ``InputError``."""

from __future__ import annotations


class AuditorError(Exception):
    """Base class of every error raised by the auditor."""


class ConfigurationError(AuditorError):
    """Invalid settings or detector configuration."""


class InputError(AuditorError):
    """Input the user gave us cannot be used (the CLI prints one line and exits 2)."""


class SourceReadError(InputError):
    """A whole input file (or stream) cannot be read: it counts in ``files_failed``."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class MalformedRecordError(AuditorError):
    """One CloudTrail record is malformed: it counts in ``records_skipped`` and the file continues."""


class AuditError(AuditorError):
    """The audit cannot run at all (no region, no credentials, endpoint unreachable, nothing readable)."""
