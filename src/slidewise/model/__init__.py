"""Tuples, columnar batches and time."""

from slidewise.model.batch import NO_EXP, ResultBatch, StreamBatch, Tup, merge_in_order

__all__ = ["NO_EXP", "ResultBatch", "StreamBatch", "Tup", "merge_in_order"]
