"""Columnar accumulators, one class per aggregate function, for the pane path.

Each accumulator turns the tuples of a block into *pane partials*: one
matrix per state component, rows = panes, columns = groups (both dense
integer codes). Partials combine with :meth:`~Accumulator.merge`;
subtractable aggregates (COUNT, SUM, AVG, and the frequency counts of
DISTINCT, MEDIAN and QUANTILE) also with
:meth:`~Accumulator.subtract`, which the running synopsis needs
(:mod:`slidewise.synopses.running`); MIN, MAX and the sketches of
APPROX_COUNT_DISTINCT and APPROX_QUANTILE
(:mod:`~slidewise.operators.aggregates.sketches`) merge only and use the
interval synopses (:mod:`slidewise.synopses.interval`,
:mod:`slidewise.synopses.basic_interval`). :meth:`~Accumulator.value` gives
the output column and its null mask. Nulls (NaN) are ignored by all but
COUNT(*), as in the per-tuple operator (:mod:`slidewise.operators.aggregate`,
which keeps its own scalar code: it updates one group per row).

:data:`REGISTRY` maps an aggregate name to its class; :func:`accumulator` also
covers DISTINCT (:mod:`~slidewise.operators.aggregates.distinct`).
"""

from __future__ import annotations

from slidewise.operators.aggregates.base import Accumulator
from slidewise.operators.aggregates.distinct import Distinct
from slidewise.operators.aggregates.extremes import Max, Min
from slidewise.operators.aggregates.quantile import Quantile
from slidewise.operators.aggregates.sketches import ApproxCountDistinct, ApproxQuantile
from slidewise.operators.aggregates.subtractable import Avg, Count, Sum
from slidewise.operators.aggregates.topk import TopK

#: aggregate function name -> accumulator class (not DISTINCT)
REGISTRY: dict[str, type[Accumulator]] = {
    "count": Count,
    "sum": Sum,
    "avg": Avg,
    "min": Min,
    "max": Max,
    "median": Quantile,
    "quantile": Quantile,
    "topk": TopK,
    "approx_count_distinct": ApproxCountDistinct,
    "approx_quantile": ApproxQuantile,
}


def accumulator(func: str, dtype=None, distinct: bool = False, param: float | None = None) -> Accumulator:
    """The accumulator of ``func([DISTINCT] x[, param])`` over values of ``dtype`` (None: ``COUNT(*)``);
    ``param``: p of QUANTILE, k of TOPK."""
    if func == "topk":
        return TopK(dtype, int(param or 1))
    if func == "approx_quantile":
        return ApproxQuantile(dtype, 0.5 if param is None else param)
    if func in ("median", "quantile"):
        return Quantile(dtype, 0.5 if param is None else param, distinct)
    if distinct and func in ("count", "sum", "avg"):
        return Distinct(dtype, func)
    return REGISTRY[func](dtype)


__all__ = ["REGISTRY", "Accumulator", "ApproxCountDistinct", "ApproxQuantile", "Avg", "Count", "Distinct", "Max", "Min", "Quantile", "Sum", "TopK", "accumulator"]
