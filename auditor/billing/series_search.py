"""Searches over per-minute series at C speed, for the simulators' skip-ahead (:mod:`auditor.billing.simulate`).

The simulators spend most minutes in stretches where provably nothing changes; they find the end of such a
stretch (the next minute where a rule might fire) with these searches instead of stepping minute by minute. Each
search tests a whole range with one ``max`` or ``min`` over a slice (a C loop; over every ``width``-th value when
the rule is about a window of ``width`` values) and, only when the range may hold a hit, locates it with further
slices, list comprehensions and ``filter``, so its cost is some nanoseconds per value plus a few Python steps.

All searches take a half-open index range ``[a, b)`` and return ``b`` when nothing in it matches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

#: Ranges at most this long are searched with ``filter`` instead of bisected further.
_LINEAR = 16
#: Length of the first range a search tries; each further range is twice as long.
_FIRST_RANGE = 16


def _first(
    seq: Sequence[float], a: int, b: int, extreme: Callable[[Sequence[float]], float], hit: Callable[[float], bool]
) -> int:
    """The first index ``x`` in ``[a, b)`` with ``hit(seq[x])``, or ``b``; ``extreme`` (``max`` or ``min``) of a range
    is a hit exactly when some value in it is.

    Ranges doubling in length from ``a`` are tested with one ``extreme`` each, so the cost follows the distance to
    the hit rather than the length of ``[a, b)``. The range that holds it is bisected down to a few values, where
    ``filter`` finds the first hit and ``list.index`` its position (no value before it is equal, since none before
    it is a hit).
    """
    size = _FIRST_RANGE
    while a < b:
        end = a + size if a + size < b else b
        if hit(extreme(seq[a:end])):
            while end - a > _LINEAR:  # bisect down to a short range that holds the first hit
                mid = (a + end) >> 1
                if hit(extreme(seq[a:mid])):
                    end = mid
                else:
                    a = mid
            part = seq[a:end]
            return a + part.index(next(filter(hit, part)))
        a = end
        size += size
    return b


def first_at_least(seq: Sequence[float], thr: float, a: int, b: int) -> int:
    """The first index ``x`` in ``[a, b)`` with ``seq[x] >= thr``, or ``b`` (:func:`_first` with ``max``)."""
    return _first(seq, a, b, max, float(thr).__le__)


def first_below(seq: Sequence[float], thr: float, a: int, b: int) -> int:
    """The first index ``x`` in ``[a, b)`` with ``seq[x] < thr``, or ``b`` (:func:`_first` with ``min``)."""
    return _first(seq, a, b, min, float(thr).__gt__)


def first_run_at_least(seq: Sequence[float], thr: float, width: int, a: int, b: int) -> int:
    """The first ``m`` in ``[a, b)`` whose window ``seq[m - width : m]`` lies wholly at or above ``thr``, or ``b``.

    Needs ``a >= width >= 1``. It walks the runs of values at or above ``thr`` from ``a - width`` on: a run of at
    least ``width`` values starting at ``x`` first completes a window at ``m = x + width``; a shorter run is
    skipped whole (every window overlapping it also holds the value that ends it).
    """
    if width == 2:
        # The lower of each pair (a list comprehension), searched at once: cheaper than walking runs where many
        # single values reach the threshold.
        lower = [x if x < y else y for x, y in zip(seq[a - 2 : b - 2], seq[a - 1 : b - 1], strict=True)]
        return a + first_at_least(lower, thr, 0, b - a)
    last = b - 1  # windows of m < b end at index m - 1 <= b - 2
    x = a - width
    while True:
        x = first_at_least(seq, thr, x, last)
        if x >= last:
            return b
        stop = x + width if x + width < last else last
        end = first_below(seq, thr, x, stop)
        if end == x + width:
            return end
        if end == last:
            return b
        x = end + 1


def first_quiet_window(seq: Sequence[float], thr: float, width: int, a: int, b: int) -> int:
    """The first ``m`` in ``[a, b)`` whose window ``seq[m - width : m]`` lies wholly below ``thr``, or ``b``.

    Needs ``a >= width >= 1``. Windows start at ``lo = a - width`` or later, and any ``width`` consecutive indices
    from there hold two consecutive samples ``lo + q * step`` for ``step = width // 2``; so only where two
    consecutive samples are both below ``thr`` (found on the pairwise maxima of the samples: a list comprehension
    and a C-speed search) is the run of values below ``thr`` around them measured. A run of at least ``width``
    values starting at ``x`` first completes a window at ``m = x + width``.
    """
    last = b - 1  # windows of m < b end at index m - 1 <= b - 2
    lo = a - width
    if width == 1:
        x = first_below(seq, thr, lo, last)
        return x + 1 if x < last else b
    step = width >> 1
    samples = seq[lo:last:step]
    pairs = [x if x > y else y for x, y in pairwise(samples)]
    q = 0
    while True:
        q = first_below(pairs, thr, q, len(pairs))
        if q == len(pairs):
            return b
        start = lo + q * step
        # The sample before q was at or above thr (or q == 0), so the run starts less than a step earlier.
        while start > lo and seq[start - 1] < thr:
            start -= 1
        stop = start + width if start + width < last else last
        end = first_at_least(seq, thr, lo + q * step, stop)
        if end == start + width:
            return end
        q = (end - lo) // step + 1


#: One search of :func:`earliest`: ``(seq, thr, width, start, below)``: the first ``m >= start`` (``start`` at
#: least ``width >= 1``) whose window ``seq[m - width : m]`` lies wholly below ``thr`` (``below``) or wholly at or
#: above it (not ``below``).
Search = tuple[Sequence[float], float, int, int, bool]


def earliest(searches: Sequence[Search], a: int, b: int) -> int:
    """The first index in ``[a, b)`` where any of ``searches`` hits, or ``b``.

    The searches advance together over ranges that double in length from ``a`` (each range bounds the others'
    once one hits), so the work is proportional to the distance to the first hit, not to ``b - a``: the
    simulators call this after every change, and a change often follows a few minutes after the previous one.
    """
    size = _FIRST_RANGE
    while a < b:
        end = a + size if a + size < b else b
        hit = end
        for seq, thr, width, start, below in searches:
            lo = a if a > start else start
            if lo >= hit:
                continue
            # One C-speed test of the range first, which is all a search costs in a quiet stretch: a window of
            # ``width`` values holds exactly one of every ``width``-th value, so the test reads only those.
            if below:
                if min(seq[lo - width : hit - 1 : width]) < thr:
                    hit = first_quiet_window(seq, thr, width, lo, hit)
            elif max(seq[lo - width : hit - 1 : width]) >= thr:
                hit = first_run_at_least(seq, thr, width, lo, hit)
        if hit < end:
            return hit
        a = end
        size += size
    return b
