"""Values to numpy: timestamps to int64 (``ts_unit``), columns to their kind; bad values become rejects."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from slidewise.runtime.rejects import Rejects
from slidewise.runtime.sources.base import _KIND_ARROW, RawChunk, _Block

_NULLS = pa.array(pacsv.ConvertOptions().null_values, pa.string())
_TRUE = pa.array([v.lower() for v in pacsv.ConvertOptions().true_values] + ["t", "yes"], pa.string())
_FALSE = pa.array([v.lower() for v in pacsv.ConvertOptions().false_values] + ["f", "no"], pa.string())
_INT_RE = r"^[+-]?\d{1,18}$"
_FLOAT_RE = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(?i:inf|infinity|nan)$"
_TS_LIMIT = 2**62  # keeps ts + window arithmetic inside int64
_SCALE = {"raw": 1, "ms": 1, "s": 1000, "us": 1 / 1000, "ns": 1 / 1_000_000}


def _match(s: pa.Array, pattern: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(s, pattern), False).to_numpy(zero_copy_only=False)


def _missing_mask(arr: pa.Array) -> np.ndarray:
    """Null, or text that the CSV reader would read as null ("", "NA", "null", ...)."""
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        m = pc.or_kleene(pc.is_null(arr), pc.is_in(pc.utf8_trim_whitespace(arr), value_set=_NULLS))
        return pc.fill_null(m, True).to_numpy(zero_copy_only=False)
    if pa.types.is_floating(arr.type):
        return pc.fill_null(pc.is_nan(arr), True).to_numpy(zero_copy_only=False)
    return pc.is_null(arr).to_numpy(zero_copy_only=False)


def _texts(arr: pa.Array, idx: np.ndarray) -> list[str]:
    vals = arr.take(pa.array(idx, pa.int64())).to_pylist()
    return ["" if v is None else str(v)[:60] for v in vals]


def _flag(mask: np.ndarray, arr: pa.Array, describe, bad: np.ndarray, reasons: np.ndarray) -> None:
    """Mark rows ``mask`` bad (in place) with reason ``describe(value text)``."""
    if mask.any():
        idx = np.flatnonzero(mask)
        reasons[idx] = [describe(v) for v in _texts(arr, idx)]
        bad |= mask


def _parse_numbers(s: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Trimmed text -> (int values, float values, is_int, is_float); floats include ints."""
    n = len(s)
    try:
        iv = pc.cast(s, pa.int64())
        ok = pc.is_valid(iv).to_numpy(zero_copy_only=False)
        ivals = iv.fill_null(0).to_numpy(zero_copy_only=False)
        return ivals, ivals.astype(np.float64), ok, ok
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    try:  # all numbers, some with a fraction or exponent
        fv = pc.cast(s, pa.float64())
        ok = pc.is_valid(fv).to_numpy(zero_copy_only=False)
        return np.zeros(n, np.int64), fv.to_numpy(zero_copy_only=False), np.zeros(n, bool), ok
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    is_int = _match(s, _INT_RE)
    is_float = _match(s, _FLOAT_RE)
    ivals = np.zeros(n, np.int64)
    fvals = np.full(n, np.nan)
    if is_int.any():
        sub = pc.replace_substring_regex(s.filter(pa.array(is_int)), r"^\+", "")
        ivals[is_int] = pc.cast(sub, pa.int64()).to_numpy(zero_copy_only=False)
    if is_float.any():
        fvals[is_float] = pc.cast(s.filter(pa.array(is_float)), pa.float64()).to_numpy(zero_copy_only=False)
    return ivals, fvals, is_int, is_float


def _ts_values(arr, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Timestamps -> (int64 values, bad mask, reasons (object array, None where fine) or None)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    t = arr.type
    out = np.zeros(n, np.int64)
    reasons = np.full(n, None, dtype=object)
    if pa.types.is_null(t):
        reasons[:] = "missing timestamp"
        return out, np.ones(n, bool), reasons
    if (pa.types.is_string(t) or pa.types.is_large_string(t)) and unit != "iso" and arr.null_count == 0:
        fast = _fast_numeric_ts(arr, unit, reasons)
        if fast is not None:
            return fast
    missing = _missing_mask(arr)
    bad = missing.copy()
    reasons[missing] = "missing timestamp"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        if pa.types.is_date(t):
            arr = arr.cast(pa.date64())
        else:
            arr = pc.cast(arr, pa.timestamp("ms", t.tz), safe=False)
        out = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return out, bad, (reasons if bad.any() else None)
    if pa.types.is_integer(t):
        out = _scale_ints(arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64), unit, bad, reasons)
    elif pa.types.is_floating(t):
        fv = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        out = _scale_floats(fv, ~missing, unit, bad, reasons, arr)
    else:  # text
        s = pc.utf8_trim_whitespace(arr.cast(pa.string()))
        if unit == "iso":
            out, ok = _parse_iso(s)
            _flag(~ok & ~missing, s, lambda v: f"unparseable timestamp {v!r} (expected ISO-8601)", bad, reasons)
        else:
            ivals, fvals, is_int, is_float = _parse_numbers(s)
            _flag(~is_float & ~missing, s, lambda v: f"non-numeric timestamp {v!r}", bad, reasons)
            out = _scale_ints(ivals, unit, bad, reasons)
            floats = is_float & ~is_int
            if floats.any():
                out[floats] = _scale_floats(fvals, floats, unit, bad, reasons, s)[floats]
    return out, bad, (reasons if bad.any() else None)


def _fast_numeric_ts(arr: pa.Array, unit: str, reasons: np.ndarray):
    """Text timestamps that are all clean numbers: one cast, no per-value checks."""
    bad = np.zeros(len(arr), bool)
    # a failing cast is slow (~100 ns per value): try the likely type first
    for typ in (pa.float64(), pa.int64()) if unit == "s" else (pa.int64(), pa.float64()):
        try:
            vals = pc.cast(arr, typ).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        if typ == pa.int64():
            out = _scale_ints(vals, unit, bad, reasons)
        elif np.isfinite(vals).all():
            out = _scale_floats(vals, np.ones(len(vals), bool), unit, bad, reasons, arr)
        else:
            return None
        return out, bad, (reasons if bad.any() else None)
    return None


def _scale_ints(v: np.ndarray, unit: str, bad: np.ndarray, reasons: np.ndarray) -> np.ndarray:
    if unit == "s":
        over = np.abs(v) >= _TS_LIMIT // 1000
        if over.any():
            reasons[over & ~bad] = "timestamp out of range"
            bad |= over
            v = np.where(over, 0, v)
        return v * 1000
    if unit == "us":
        return np.floor_divide(v, 1000)
    if unit == "ns":
        return np.floor_divide(v, 1_000_000)
    over = np.abs(v) >= _TS_LIMIT
    if over.any():
        reasons[over & ~bad] = "timestamp out of range"
        bad |= over
        v = np.where(over, 0, v)
    return v


def _scale_floats(fv: np.ndarray, valid: np.ndarray, unit: str, bad: np.ndarray, reasons: np.ndarray, text: pa.Array) -> np.ndarray:
    """Float timestamps -> int64 ms (floor, after rounding away binary noise below 1 µs)."""
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.round(fv * _SCALE[unit], 3)
        whole = np.floor(scaled)
        nonfinite = valid & ~np.isfinite(scaled)
        fractional = valid & np.isfinite(scaled) & (whole != scaled) & (unit == "raw")
        out_of_range = valid & np.isfinite(scaled) & (np.abs(whole) >= _TS_LIMIT)
    for mask, what in ((nonfinite, "non-finite timestamp"), (fractional, "non-integer timestamp"), (out_of_range, "timestamp out of range")):
        _flag(mask & ~bad, text, lambda v, what=what: f"{what} {v!r}", bad, reasons)
    return np.where(bad | ~valid, 0, whole).astype(np.int64)


def _parse_iso(s: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """ISO-8601 text -> (epoch ms, ok). Arrow's parser first, pandas for mixed offsets."""
    for typ in (pa.timestamp("ns"), pa.timestamp("ns", "UTC")):
        try:
            ns = pc.cast(s, typ)
            ok = pc.is_valid(ns).to_numpy(zero_copy_only=False)
            return np.floor_divide(ns.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), 10**6), ok
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    parsed = pd.to_datetime(pd.Series(s.to_numpy(zero_copy_only=False), dtype=object), utc=True, format="ISO8601", errors="coerce")
    ok = parsed.notna().to_numpy()
    ns = np.where(ok, parsed.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").view(np.int64), 0)
    return np.floor_divide(ns, 10**6).astype(np.int64), ok


def _column(arr, kind: str, name: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """One column -> (numpy values of ``kind``, bad mask or None, reasons or None)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n, t = len(arr), arr.type
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    if kind == "str":
        if not text:
            try:
                arr = pc.cast(arr, pa.string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                arr = pa.array([None if v is None else (v if isinstance(v, str) else json.dumps(v, default=str)) for v in arr.to_pylist()], pa.string())
        vals = arr.fill_null("").to_numpy(zero_copy_only=False)
        return (vals if vals.dtype == object else vals.astype(object)), None, None
    reasons = np.full(n, None, dtype=object)
    label = {"int": "integer", "float": "float", "bool": "boolean"}[kind]
    missing = _missing_mask(arr) if text or kind != "float" else None
    bad = np.zeros(n, bool)
    if kind == "float":  # a missing value is NaN, not a reject
        if text:
            s = pc.utf8_trim_whitespace(arr)
            _, fvals, _, is_float = _parse_numbers(s)
            fail = ~is_float & ~missing
            vals = np.where(missing, np.nan, fvals)
        else:
            vals = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
            fail = np.zeros(n, bool)
    elif kind == "bool":
        if text:
            low = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
            is_t = pc.fill_null(pc.is_in(low, value_set=_TRUE), False).to_numpy(zero_copy_only=False)
            is_f = pc.fill_null(pc.is_in(low, value_set=_FALSE), False).to_numpy(zero_copy_only=False)
            vals, fail = is_t, ~is_t & ~is_f & ~missing
        elif pa.types.is_boolean(t):
            vals, fail = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(bool), np.zeros(n, bool)
        else:
            vals, fail = pc.not_equal(arr, 0).fill_null(False).to_numpy(zero_copy_only=False), np.zeros(n, bool)
    else:  # int
        if text:
            s = pc.utf8_trim_whitespace(arr)
            ivals, fvals, is_int, is_float = _parse_numbers(s)
            whole = is_float & ~is_int & np.isfinite(fvals) & (np.floor(fvals) == fvals) & (np.abs(fvals) < 2**62)
            vals = np.where(whole, np.where(whole, fvals, 0.0).astype(np.int64), ivals)  # (only whole values cast)
            fail = ~(is_int | whole) & ~missing
        elif pa.types.is_integer(t) or pa.types.is_boolean(t):
            vals, fail = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.zeros(n, bool)
        else:
            fv = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
            ok = np.isfinite(fv) & (np.floor(fv) == fv)
            vals, fail = np.where(ok, np.nan_to_num(fv), 0).astype(np.int64), ~ok & ~missing
    _flag(fail, arr, lambda v: f"unparseable value {v!r} in {label} column {name!r}", bad, reasons)
    if kind != "float" and missing.any():
        reasons[missing & ~bad] = f"missing value in {label} column {name!r}"
        bad |= missing
    return vals, (bad if bad.any() else None), (reasons if bad.any() else None)


def _convert(block: _Block, file: str, kinds: dict[str, str], ts_column: str, unit: str, rejects: Rejects, stream: str) -> RawChunk:
    table, lines = block.table, block.lines
    n = table.num_rows
    ts, bad, reasons = _ts_values(table.column(ts_column), unit)

    def merge(more_bad: np.ndarray, more_reasons: np.ndarray) -> None:
        """Add bad rows; a row keeps the reason it was first found bad for."""
        nonlocal bad, reasons
        if reasons is None:
            reasons = np.full(n, None, dtype=object)
        first = more_bad & ~bad
        reasons[first] = more_reasons[first]
        bad = bad | more_bad

    if block.bad is not None:
        merge(*block.bad)
    cols = {}
    for name, kind in kinds.items():
        arr = table.column(name) if name in table.column_names else pa.nulls(n, _KIND_ARROW[kind])
        vals, cbad, creasons = _column(arr, kind, name)
        cols[name] = vals
        if cbad is not None:
            merge(cbad, creasons)
    if not bad.any():
        return RawChunk(ts, cols, lines, file)
    idx = np.flatnonzero(bad)
    rejects.add_many(stream, file, lines[idx], reasons[idx].tolist(), block.raw(idx))
    keep = ~bad
    return RawChunk(ts[keep], {k: v[keep] for k, v in cols.items()}, lines[keep], file)
