"""Cost benchmark, the adversarial groups: hot keys planted where the reference account's planted set does not look.

Run by ``python -m benchmarks.cost``. Four groups, each measured against full capture (the control), by the same
detectors: keys between the detector's floor and the governor's trigger (30 to 45 % of a partition: 300-450 WCU/s
or 900-1,350 RCU/s), bursts above the trigger of 5 to 10 minutes, a second hot key on a table 2 to 8 hours after a
first one (the second is counted), and the planted set of a second account (another seed). The first three are
planted into the reference account before the governor runs, so its CloudWatch readings see them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.cost import MINUTES, Account, Burst

#: (group, planted keys): the bursts each group counts (a repeat group's first bursts are planted, not counted).
Groups = list[tuple[str, list[Burst]]]


@dataclass(slots=True)
class GroupRecall:
    name: str
    planted: int
    governor: int
    full: int


def plant(acct: Account, seed: int) -> Groups:
    """Add the three in-account groups' bursts to ``acct`` (its ``bursts`` and ``by_table``); the groups."""
    rng = random.Random(seed + 31)
    busy = [i for i, t in enumerate(acct.tables) if t.avg_rate >= 1.0]

    def burst(key: str, low: float, high: float, minutes: tuple[int, int], start: int | None = None) -> Burst:
        write = rng.random() < 0.7
        rate = rng.uniform(low, high) * (1.0 if write else 3.0)
        return Burst(
            table=rng.choice(busy),
            start=rng.randrange(60, MINUTES - 900) if start is None else start,
            minutes=rng.randint(*minutes),
            key=key,
            rate=rate,
            write=write,
        )

    floor = [burst(f"FLOOR#{n}", 300, 450, (15, 60)) for n in range(10)]
    short = [burst(f"SHORT#{n}", 520, 700, (5, 10)) for n in range(10)]
    repeat: list[Burst] = []
    for n in range(9):
        first = burst(f"FIRST#{n}", 520, 700, (20, 60))
        second = burst(f"REPEAT#{n}", 520, 700, (15, 60), start=first.start + first.minutes + rng.randint(120, 480))
        second.table = first.table
        acct.bursts.append(first)
        acct.by_table.setdefault(first.table, []).append(first)
        repeat.append(second)
    for b in (*floor, *short, *repeat):
        acct.bursts.append(b)
        acct.by_table.setdefault(b.table, []).append(b)
    return [("floor to trigger (30-45 %)", floor), ("short bursts (5-10 min)", short), ("repeated on a table", repeat)]


def recall(groups: Groups, found: Callable[[Burst, str], bool]) -> list[GroupRecall]:
    """Per group: planted keys, found by the governor, found with full capture (``found(burst, strategy)``)."""
    return [
        GroupRecall(name, len(bursts), sum(found(b, "governor") for b in bursts), sum(found(b, "full") for b in bursts))
        for name, bursts in groups
    ]


def print_groups(rows: list[GroupRecall]) -> float:
    """The adversarial table; returns the governor's recall over every adversarial key."""
    print()
    print(f"{'adversarial group':<30} {'planted':>8} {'governor':>9} {'full capture':>13} {'recall':>7} {'vs full':>8}")
    for r in rows:
        vs_full = r.governor / r.full if r.full else 0.0
        print(
            f"{r.name:<30} {r.planted:>8} {r.governor:>9} {r.full:>13} {r.governor / max(1, r.planted):>7.2f} "
            f"{vs_full:>8.2f}"
        )
    planted = sum(r.planted for r in rows)
    return sum(r.governor for r in rows) / planted if planted else 0.0
