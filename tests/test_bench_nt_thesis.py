"""The bench's NT thesis set-up (partitioned hash tables), kept out of the core."""

import pickle
from collections import Counter

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from slidewise.bench.nt_thesis import PartitionedHashStore, thesis_hash_tables
from slidewise.errors import PlanError
from slidewise.operators.incremental import Context
from slidewise.operators.state.stores import HashStore
from slidewise.plan.logical import Pattern
from tests.oracle_plans import expected_output
from tests.plan_cases import plan_cases
from tests.test_plan_properties import describe, run


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.booleans()), max_size=40), st.integers(1, 4))
def test_partitioned_hash_store_agrees_with_the_hash_store(ops, partitions):
    """The thesis's NT table (scanned partitions) holds, finds and deletes exactly what the index does."""
    a, b = HashStore(key=lambda v: v[0]), PartitionedHashStore(key=lambda v: v[0], partitions=partitions)
    for i, (k, life, delete) in enumerate(ops):
        r = ((k, life), i, i + life, 1)
        if delete:
            assert a.delete(r[0], r[2]) == b.delete(r[0], r[2])
        else:
            a.insert(r)
            b.insert(r)
        assert len(a) == len(b) and Counter(a) == Counter(b) and set(a.keys()) == set(b.keys())
        assert Counter(a.lookup(k)) == Counter(b.lookup(k))
    d = PartitionedHashStore(partitions=partitions)  # operator state is pickled between Spark calls
    for r in b:
        d.insert(r)
    c = pickle.loads(pickle.dumps(d))
    assert Counter(c) == Counter(d) and c.index_get(("absent",)) is None
    with pytest.raises(PlanError, match="partition"):
        PartitionedHashStore(partitions=0)


def test_thesis_tables_apply_to_nt_only_and_only_inside_the_block():
    with thesis_hash_tables(3):
        assert Context("nt").store(Pattern.WKS).kind == "hash-partitioned"
        assert Context("upa").store(Pattern.WKS).kind == "fifo"
    assert Context("nt").store(Pattern.WKS).kind == "hash"
    with pytest.raises(PlanError, match="partition"), thesis_hash_tables(0):
        pass


@given(case=plan_cases())
def test_nt_thesis_set_up_matches_the_oracle(case):
    """NT with the thesis's hash tables of scanned partitions (the bench's "NT thesis set-up")."""
    p, streams, tables = case
    note(describe(p, streams, tables))
    with thesis_hash_tables(3):
        got = run(p, streams, tables, "nt", 4)
    expected = expected_output(p, streams, tables)
    assert got == expected, f"missing {expected - got}, extra {got - expected}"
