"""A key's peak for ``what-if`` as the findings measure it: the ``hot_key`` detector's rates of one key
(:func:`auditor.detectors.trail.hot_key.value_rates`, which ``low_cardinality_key`` rates its busiest value by), in
the key's own partition space (the table's or an index's), so a key's what-if headroom is its finding's.
"""

from __future__ import annotations

from auditor.detectors.trail.hot_key import HotKeyConfig, value_rates
from auditor.detectors.trail.key_spaces import KeySpace, key_spaces
from auditor.kernel.aggregates.window import TableWindow
from auditor.whatif.limits import KeyPeak, PeakOf

__all__ = ["finding_peaks"]


def finding_peaks(settings: HotKeyConfig | None = None) -> PeakOf:
    """The :data:`~auditor.whatif.limits.PeakOf` of the ``hot_key`` ``settings`` (the configured ones, as the
    finding reads them): each key's :meth:`KeyRates.peak` in the space that holds it."""
    cfg = settings or HotKeyConfig()
    spaces: dict[int, tuple[TableWindow, list[KeySpace]]] = {}

    def peak(agg: TableWindow, encoded: str) -> KeyPeak:
        found = spaces.get(id(agg))
        if found is None or found[0] is not agg:
            found = spaces[id(agg)] = (agg, key_spaces(agg))
        space = next((s for s in found[1] if s.holds(encoded)), None)
        return value_rates(agg, space, encoded, cfg).peak(cfg) if space is not None else KeyPeak()

    return peak
