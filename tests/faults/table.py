"""The cases of the fault-injection suite and its table (fault, counts equal, Slack once, e-mails repeated).

:data:`OPERATIONS` lists every AWS call each handler makes on the suite's trail (a test checks it against a clean
run); :data:`CASES` is every operation with every fault kind at its first call, plus a timeout after the last call
of the evaluator's operations that serve several steps, the run digest's answer lost, every trail-ingest call failing
so that its message comes back only after the evaluator ran (a late object), and the Slack faults (a 500, a stop right
after the post, SNS delivering the message twice). :data:`SLACK_REPEATS` names the cases where Slack gets a
finding twice and why.
``python -m tests.faults`` runs every case and prints the table (docs/faults.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.faults.pipeline import KINDS, SLACK_KINDS, Fault

if TYPE_CHECKING:
    from tests.faults.pipeline import Outcome, Trail

#: Every AWS call of each handler on the suite's trail, in the order a clean run first makes them.
OPERATIONS: dict[str, tuple[str, ...]] = {
    "trail-ingest": ("dynamodb.GetItem", "s3.GetObject", "s3.PutObject", "dynamodb.BatchWriteItem", "dynamodb.PutItem"),
    "evaluator": (
        "dynamodb.GetItem",
        "dynamodb.Query",
        "s3.GetObject",
        "dynamodb.UpdateItem",
        "dynamodb.BatchGetItem",
        "dynamodb.TransactWriteItems",
        "sns.Publish",
        "dynamodb.PutItem",
        "dynamodb.DeleteItem",
    ),
    "notifier": ("secretsmanager.GetSecretValue", "dynamodb.PutItem", "slack.post", "dynamodb.UpdateItem"),
}
#: The evaluator's operations called at several steps of a run: a timeout after the last call too (0: the last).
REPEATED = {
    ("evaluator", op)
    for op in (
        "dynamodb.Query",
        "s3.GetObject",
        "dynamodb.UpdateItem",
        "dynamodb.TransactWriteItems",
        "sns.Publish",
        "dynamodb.PutItem",
        "dynamodb.DeleteItem",
    )
}
#: The evaluator's last publish is the run digest: its answer lost too.
LAST_LOST = {("evaluator", "sns.Publish")}


def _cases() -> list[Fault]:
    cases: list[Fault] = []
    for handler, ops in OPERATIONS.items():
        for op in ops:
            kinds = SLACK_KINDS if op == "slack.post" else KINDS
            cases += [Fault(handler, op, 1, kind) for kind in kinds]
            if (handler, op) in REPEATED:
                cases.append(Fault(handler, op, 0, "timeout"))
            if (handler, op) in LAST_LOST:
                cases.append(Fault(handler, op, 0, "response_lost"))
            if handler == "trail-ingest":
                # a late object: the message that failed comes back only after the evaluator evaluated its windows
                cases.append(Fault(handler, op, 1, "late"))
    return cases


CASES = _cases()

#: The cases where Slack gets a post (the run digest: every finding of the run) a second time, and why
#: (docs/faults.md). The webhook has no idempotency key: a notifier stopped after Slack accepted a post, before its
#: delivery record says so, is retried by Lambda and posts it again (counted in RepeatedPublishes). A digest the
#: evaluator sends again (stopped or unanswered between SNS's acceptance and the one write recording it) carries the
#: same ``event_id``: the notifier's record of it skips it.
SLACK_REPEATS: dict[str, tuple[int, bool, str]] = {
    "notifier:slack.post#1:slack_timeout": (1, True, "stopped after Slack accepted the post, before its record"),
}


@dataclass
class Row:
    """One line of the table."""

    fault: str
    counts_equal: bool
    slack_lost: int
    slack_repeats: int
    slack_repeat_posts: int
    allowed_slack_repeats: int
    mails_lost: int
    mails_repeated: int
    counted: int
    #: Repeats (e-mails, and digests sent again by the evaluator) that RepeatedPublishes does not count.
    uncounted: int

    def cells(self) -> tuple[str, str, str, str]:
        slack = "yes"
        if self.slack_lost:
            slack = f"{self.slack_lost} LOST"
        elif self.slack_repeats:
            why = SLACK_REPEATS.get(self.fault)
            again = f"{self.slack_repeat_posts} post again ({self.slack_repeats} findings)"
            slack = f"{again}, {'counted' if why and why[1] else 'not counted'}: {why[2] if why else 'unexpected'}"
        mails = str(self.mails_repeated) + (" (counted)" if self.mails_repeated and not self.uncounted else "")
        if self.mails_lost:
            mails += f", {self.mails_lost} LOST"
        return self.fault, "yes" if self.counts_equal else "NO", slack, mails


def row_of(fault: Fault, outcome: Outcome, clean: Outcome, trail: Trail) -> Row:
    """How the run with ``fault`` compares with ``analyze-trail`` and with the clean run's deliveries."""
    equal = sorted(outcome.findings) == sorted(trail.expected) and all(
        f["totals"] == trail.expected[fid]["totals"] for fid, f in outcome.findings.items()
    )
    slack_lost = sum(1 for fid in clean.slack_ids if fid not in outcome.slack_ids)
    # Slack is told a finding once per new or worsened event (a late object may worsen one: a second event).
    events = Counter(fid for fid, status in outcome.mails if status in ("new", "worsened"))
    told: Counter[str] = Counter()
    slack_repeats = repeat_posts = 0
    for post in outcome.slack_posts:
        told.update(post)
        again = sum(1 for fid in post if told[fid] > max(1, events[fid]))
        slack_repeats, repeat_posts = slack_repeats + again, repeat_posts + (again > 0)
    # A digest sent again lists every finding of the run once more: the repeats of one post.
    again, counted_slack, _why = SLACK_REPEATS.get(fault.id, (0, True, ""))
    allowed = again * len(clean.slack_ids)
    mails_lost = sum(1 for key in clean.mails if key not in outcome.mails)
    counted = int(outcome.health.get("RepeatedPublishes", 0))
    must_count = outcome.repeated_mails + (repeat_posts if counted_slack else 0)
    return Row(
        fault.id,
        equal,
        slack_lost,
        slack_repeats,
        repeat_posts,
        allowed,
        mails_lost,
        outcome.repeated_mails,
        counted,
        max(0, must_count - counted),
    )


def render(rows: list[Row]) -> str:
    """The table as Markdown."""
    head = ("fault (handler:operation#call:kind)", "counts equal", "Slack once", "e-mails repeated")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    kinds = Counter(r.fault.rsplit(":", 1)[1] for r in rows)
    lines.append("")
    lines.append(f"{len(rows)} cases: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    return "\n".join(lines) + "\n"
