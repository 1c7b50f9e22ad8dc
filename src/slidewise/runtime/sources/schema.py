"""Schema inference: column kinds, the timestamp unit, and one schema for all files of a source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from slidewise.errors import SourceError
from slidewise.runtime.sources.base import _Info, _missing_ts
from slidewise.runtime.sources.convert import _FLOAT_RE, _INT_RE, _TS_LIMIT, _match, _missing_mask, _parse_iso, _ts_values


def _arrow_kind(t: pa.DataType, has_nulls: bool = False) -> str:
    if pa.types.is_integer(t):
        return "float" if has_nulls else "int"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    return "str"


def _info_from_table(table: pa.Table, ts_column: str, dirty_numbers: bool = False) -> _Info:
    """Kinds of a sample table; ``dirty_numbers``: text columns that are numbers but for
    a few values (see :func:`_mostly_numbers`) are numeric, the few values become rejects."""
    names = list(table.column_names)
    kinds = {}
    for f in table.schema:
        if f.name == ts_column:
            continue
        kinds[f.name] = _arrow_kind(f.type, table.column(f.name).null_count > 0)
        if dirty_numbers and pa.types.is_string(f.type):
            kinds[f.name] = _mostly_numbers(table.column(f.name).combine_chunks()) or "str"
    ts = table.column(ts_column).combine_chunks() if ts_column in names else None
    return _Info(names, kinds, ts.type if ts is not None else None, ts)


def _few_strays(n_num: int, n_other: int) -> bool:
    """Numbers but for at most max(1, 1%) other values: the column is numeric."""
    return n_num > n_other and n_other <= max(1, n_num // 100)


def _mostly_numbers(text: pa.Array) -> str | None:
    """ "int" / "float" when all but at most max(1, 1%) of the present values are numbers."""
    s = pc.utf8_trim_whitespace(text)
    present = ~_missing_mask(s)
    is_num = _match(s, _FLOAT_RE) & present
    n_num, n_bad = int(is_num.sum()), int(present.sum() - is_num.sum())
    if not _few_strays(n_num, n_bad):
        return None
    whole = int((_match(s, _INT_RE) & present).sum()) == n_num
    return "int" if whole and not (~present).any() else "float"


def _resolve_unit(reader, info: _Info, ts_column: str, ts_unit: str) -> str:
    if ts_column not in info.names:
        raise _missing_ts(reader.file, info.names, ts_column)
    t = info.ts_type
    temporal = pa.types.is_timestamp(t) or pa.types.is_date(t)
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t)
    if not (temporal or numeric or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)):
        raise SourceError(f"timestamp column {ts_column!r} has type {t}", location=reader.file, hint="timestamps must be numbers or ISO-8601 text")
    if ts_unit == "iso" and numeric:
        raise SourceError(f"timestamp column {ts_column!r} holds numbers, not ISO-8601 text", location=reader.file, hint="use --ts-unit auto, raw, s, ms, us or ns")
    if temporal:
        unit = "iso"
    elif ts_unit != "auto":
        unit = ts_unit
    else:
        unit = _auto_unit(info.ts_sample, t, reader.file, ts_column)
    sample = info.ts_sample
    if sample is not None and len(sample) and unit in ("raw", "s", "ms", "us", "ns", "iso"):
        ts, bad, reasons = _ts_values(sample, unit)
        present = ~_missing_mask(sample)
        if present.any() and not (present & ~bad).any():
            first = int(np.flatnonzero(present)[0])
            reason = reasons[first] if reasons is not None else None
            why = f"; out of range (timestamps must stay below {_TS_LIMIT})" if reason and "out of range" in reason else ""
            raise SourceError(
                f"no timestamp in the first {int(present.sum())} rows parses as "
                f"{'ISO-8601' if unit == 'iso' else unit + ' (numbers)'}, "
                f"e.g. {str(sample[first].as_py())[:40]!r}{why}",
                location=reader.file,
                hint=f"check --ts-column (now {ts_column!r}) and --ts-unit (now {unit!r})",
            )
    return unit


#: lower bounds of the magnitudes that read as epoch s, ms, us and ns (1973 on); below: a small number
_EPOCH_BANDS = np.array([10**8, 10**11, 10**14, 10**17], np.float64)
_BAND_NAMES = ("a small number", "epoch seconds", "epoch milliseconds", "epoch microseconds", "epoch nanoseconds")
_WHOLE_RE = r"^[+-]?\d+$"
_UNIT_CHOICES = "raw (numbers as they are), s, ms, us or ns (epoch numbers in that unit), iso (ISO-8601 text)"


def _auto_unit(sample: pa.Array | None, t: pa.DataType | None, file: str, ts_column: str) -> str:
    """``--ts-unit auto``: integers as they are (``raw``), numbers with a fraction as epoch seconds
    (``s``), text that is not numbers as ISO-8601; a SourceError naming two example values when the
    sample holds values that would imply different units, since any one choice would misread some:
    numbers beside ISO-8601 text, or magnitudes of different epoch units (s, ms, us, ns or a small
    number) with a gap of over 100x between them (values growing steadily through a band's
    boundary are one clock)."""
    if sample is None or len(sample) == 0 or t is None or pa.types.is_null(t):
        return "raw"
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        texts = sample
        present = ~_missing_mask(sample)
        values = pc.cast(sample, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
        fraction = np.full(len(values), pa.types.is_floating(t))  # floats: epoch seconds, as Zeek writes them
    else:
        texts = pc.utf8_trim_whitespace(sample.cast(pa.string()))
        present = ~_missing_mask(texts)
        is_num = _match(texts, _FLOAT_RE) & present
        if not is_num.any():
            return "iso" if present.any() else "raw"
        others = present & ~is_num
        if others.any():
            iso = np.zeros(len(texts), bool)
            idx = np.flatnonzero(others)
            iso[idx] = _parse_iso(texts.take(pa.array(idx, pa.int64())))[1]
            if iso.any():
                raise _ambiguous(file, ts_column, texts, int(np.flatnonzero(is_num)[0]), int(np.flatnonzero(iso)[0]), "a number", "ISO-8601 text")
            if is_num.sum() * 2 < present.sum():
                return "iso"
        present = is_num
        values = np.full(len(texts), np.nan)
        values[is_num] = pc.cast(texts.filter(pa.array(is_num)), pa.float64()).to_numpy(zero_copy_only=False)
        fraction = is_num & ~_match(texts, _WHOLE_RE)
    idx = np.flatnonzero(present & np.isfinite(values))
    if len(idx) > 1:
        size = np.maximum(np.abs(values[idx]), 1.0)
        order = np.argsort(size, kind="stable")
        bands = np.searchsorted(_EPOCH_BANDS, size[order], side="right")
        ratio = size[order][1:] / size[order][:-1]
        # a jump of over 100x into another epoch band: not one counter or clock growing through a boundary
        jumps = np.where((bands[1:] != bands[:-1]) & (ratio > 100), ratio, 0.0)
        if jumps.any():
            k = int(np.argmax(jumps))
            raise _ambiguous(file, ts_column, texts, int(idx[order[k]]), int(idx[order[k + 1]]), _BAND_NAMES[bands[k]], _BAND_NAMES[bands[k + 1]])
    return "s" if fraction[present].any() else "raw"


def _ambiguous(file: str, ts_column: str, texts: pa.Array, i: int, j: int, what_i: str, what_j: str):
    a, b = (str(texts[k].as_py())[:40] for k in (i, j))
    return SourceError(
        f"timestamp column {ts_column!r} mixes values that would be different units: {a!r} ({what_i}) and {b!r} ({what_j}); slidewise will not guess",
        location=file,
        hint=f"name the unit with --ts-unit: {_UNIT_CHOICES}",
    )


def _unify(readers, infos: list[_Info], units: list[str], ts_column: str) -> dict[str, str]:
    """One schema for all files of a source, or a SourceError naming two files that differ."""
    first, kinds = readers[0], dict(infos[0].kinds)
    for reader, info, unit in zip(readers[1:], infos[1:], units[1:]):
        diff = sorted(set(kinds) ^ set(info.kinds))
        clash = [f"{c} ({kinds[c]} vs {info.kinds[c]})" for c in kinds if c in info.kinds and kinds[c] != info.kinds[c] and {kinds[c], info.kinds[c]} != {"int", "float"}]
        if unit != units[0]:
            clash.insert(0, f"{ts_column} (timestamps as {units[0]} vs {unit})")
        if diff or clash:
            what = ", ".join(diff + clash)
            raise SourceError(
                f"files do not share a schema: {first.file} and {reader.file} differ in {what}",
                location=str(Path(first.file).parent),
                hint="all files of one source need the same columns and column types",
            )
        for c in kinds:
            if kinds[c] != info.kinds[c]:
                kinds[c] = "float"
    return kinds


def _declare(kinds: dict[str, str], schema: dict[str, str], stream: str, ts_column: str, file: str) -> dict[str, str]:
    """Inferred kinds with the declared ones in their place; values that do not convert become rejects."""
    for col in schema:
        if col == ts_column:
            raise SourceError(f"--schema {stream}: {col!r} is the timestamp column", location=file, hint="declare only other columns; the timestamp unit is --ts-unit")
        if col not in kinds:
            raise SourceError(
                f"--schema {stream}: no column {col!r} in the input", location=file, hint=f"columns: {', '.join(kinds) or '(none)'}; check the names in --schema"
            )
    return {c: schema.get(c, k) for c, k in kinds.items()}
