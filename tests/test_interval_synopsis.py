"""The interval synopsis: MIN/MAX probe two overlapping intervals per window; the same values as the dyadic tree."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slidewise.operators.aggregates import Max, Min
from slidewise.synopses import interval


class DyadicMin(Min):
    idempotent = False


class DyadicMax(Max):
    idempotent = False


@settings(max_examples=150, deadline=None)
@given(
    panes=st.integers(1, 70),
    groups=st.integers(1, 4),
    tuples=st.lists(st.tuples(st.integers(0, 69), st.integers(0, 3), st.integers(-3, 3)), max_size=120),
    windows=st.lists(st.tuples(st.integers(0, 70), st.integers(0, 70)), max_size=30),
    largest=st.booleans(),
    memo=st.booleans(),
)
def test_overlapping_intervals_equal_the_dyadic_tree(panes, groups, tuples, windows, largest, memo):
    """Empty windows, empty cells (nulls), ties and windows of every width: equal values and nulls."""
    kept = sorted((p % panes, g % groups, v) for p, g, v in tuples)
    pane = np.array([t[0] for t in kept], np.int64)
    group = np.array([t[1] for t in kept], np.int64)
    values = np.array([t[2] for t in kept], np.int64)
    fast, slow = (Max, DyadicMax) if largest else (Min, DyadicMin)
    acc, ref = fast(np.dtype(np.int64)), slow(np.dtype(np.int64))
    part = acc.partial(values, pane, group, (panes, groups))
    lo = np.array([min(a, b) % (panes + 1) for a, b in windows], np.int64)
    hi = np.array([max(min(a, b) % (panes + 1), max(a, b) % (panes + 1)) for a, b in windows], np.int64)
    shared: dict | None = {} if memo else None
    narrow = hi - lo <= 3
    if shared is not None and narrow.any():  # a memo of shallow intervals, extended by the wider windows below
        acc.value(interval.windows(acc, part, lo[narrow], hi[narrow], shared))
    for _ in range(2):  # the second pass reads the memoized intervals
        got, got_null = acc.value(interval.windows(acc, part, lo, hi, shared))
        want, want_null = ref.value(interval.windows(ref, part, lo, hi))
        empty = np.zeros(want.shape, bool) if want_null is None else want_null
        assert np.array_equal(np.zeros(got.shape, bool) if got_null is None else got_null, empty)
        assert np.array_equal(np.where(empty, 0, got), np.where(empty, 0, want))
