"""Merge-union (bag union, UNION ALL) of signed-tuple inputs (Golab's thesis §3.2.2, §3.5.1 rule 2).

Merge-union does not reorder its inputs: every row of every input passes
through unchanged, positive or negative, keeping its ``exp``. Its output's
update pattern is the most complex of its inputs' (WK when WKS and WK mix).
Stateless: O(1) per row.

>>> from slidewise.operators.incremental import Context
>>> UnionRows(None, Context("upa")).push(1, [(("a",), 3, 13, 1)], 3)
[(('a',), 3, 13, 1)]
"""

from __future__ import annotations

from slidewise.operators.incremental import Incremental

__all__ = ["UnionRows"]


class UnionRows(Incremental):
    """Passes the rows of every input through (§3.2.2)."""

    name = "union"

    def push(self, side, rows, now):
        return list(rows)
