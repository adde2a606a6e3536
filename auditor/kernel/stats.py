"""Counters of one ingest run (docs/contract.md ``stats``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Final

from auditor.models.counters import add_counts

#: How many problems a run keeps (a module constant: compiled, a class attribute of a dataclass becomes a field).
MAX_PROBLEMS: Final = 20


@dataclass(slots=True)
class IngestStats:
    """What an ingest run read, skipped and dropped.

    ``records_read`` counts every record seen, ``data_events`` the DynamoDB data-plane events analysed,
    ``records_skipped`` the malformed ones, ``duplicates_dropped`` the repeated ``eventID`` s.
    """

    files_read: int = 0
    files_failed: int = 0
    records_read: int = 0
    records_skipped: int = 0
    data_events: int = 0
    duplicates_dropped: int = 0
    #: Records in the input, whichever shard owns them (not part of the SPEC ``stats``: sharded readers compare it).
    records_seen: int = 0
    #: Records a sharded reader found cut in the wrong place after other shards may have skipped the cut as one record
    #: (not part of the SPEC ``stats``: the input is then read again in one process).
    wrong_cuts: int = 0
    #: The first few problems, each "source: record N: reason" (kept short for logs and stderr).
    problems: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        """Remember a problem (bounded)."""
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)

    def merge(self, other: IngestStats) -> None:
        """Add another run's counters into this one."""
        add_counts(self, other)
        for p in other.problems:
            self.note(p)

    def as_dict(self) -> dict[str, int]:
        """The docs/contract.md ``stats`` object."""
        d = asdict(self)
        d.pop("problems")
        d.pop("records_seen")
        d.pop("wrong_cuts")
        return d
