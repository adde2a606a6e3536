"""The one text cut of every output: at a word boundary with an ellipsis, never inside a number or an escape."""

from __future__ import annotations

from auditor.findings_text import shorten
from auditor.report.charts import fit
from auditor.sinks.slack_blocks import truncate


def test_a_cut_ends_at_a_word_boundary() -> None:
    assert shorten("Lower the writes to 159 writes per second", 30) == "Lower the writes to 159 …"
    assert shorten("short", 10) == "short"
    assert shorten("abcd", 3) == "ab…"  # one long run is no word: cut where it must


def test_a_cut_never_splits_a_number() -> None:
    assert shorten("id 12345678901234567890123456789012345", 20) == "id …"
    assert shorten("x" * 40 + "123456", 44) == "x" * 40 + "…"


def test_every_output_cuts_the_same_way() -> None:
    text = "Cap the job at 159 writes per second and retry"
    assert truncate(text, 24) == fit(text, 24) == shorten(text, 24) == "Cap the job at 159 …"
