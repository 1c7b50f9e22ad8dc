"""The CQL dialect of slidewise: select–project–join queries and the general queries of Golab's thesis.

Three entry points: :func:`parse` (a select–project–join query ->
:class:`~slidewise.plan.query.JoinQuery`, the columnar join path),
:func:`parse_plan` (any query -> unbound logical
:class:`~slidewise.plan.logical.Plan`, see :mod:`slidewise.cql.plan_builder` for
the plan shapes) and :func:`parse_any` (a JoinQuery for plain SPJ queries
with ISTREAM / ISTREAM_RESTORE / no output operator, a Plan otherwise; what
the command line uses). ``parse`` rejects a general query with a hint to use
the other two.

Part 1, select–project–join. A query names its output operator, a select list, windowed stream references
and a condition::

    SELECT [ISTREAM | RSTREAM | DSTREAM | ISTREAM_RESTORE | RSTREAM_RESTORE] select_list
    FROM NAME [window] [INTERNAL] [AS alias] [, ...]
    [WHERE condition] [;]

Also accepted: the CQL forms ``SELECT ISTREAM(select_list) FROM ...`` and
``ISTREAM(SELECT ... FROM ...)``. ``ISTREAM(`` directly followed by a
parenthesis always means this wrapper, never a parenthesised select item.

Keywords are case-insensitive and ``--`` starts a comment that runs to the end
of the line. Keywords are reserved only where the grammar could accept them,
so ``S1.range`` or ``S1.rows`` are ordinary attributes.

Output: none given means ``ISTREAM``; ``ISTREAM_RESTORE`` is
``output="istream", restore=True`` (likewise ``RSTREAM_RESTORE``).

Select list: ``*`` (``JoinQuery.select is None``) or items: expressions with an
optional ``AS name``, and ``S1.*``, kept as ``SelectItem(Col(i, "*", "S1"))``
for the planner to expand once the schema is known.

Windows (per reference; alias defaults to NAME; a reference without a window
is ``[UNBOUNDED]``)::

    [RANGE n [unit]]   [RANGE n [unit] SLIDE m [unit]]   [ROWS n]
    [PARTITION BY attr ROWS n]   [UNBOUNDED]   [NOW]

``INTERNAL`` inside the brackets (``[RANGE 5 INTERNAL]``) or after them marks an
internal window. Units: ``ms``/``millisecond(s)``, ``s``/``second(s)``,
``min``/``minute(s)``, ``h``/``hour(s)``, ``d``/``day(s)``, any case, with or
without a space (``10s``). A size with a unit is converted to milliseconds,
the unit of timestamps of ISO and epoch sources; a bare number is in the
source's own timestamp units. The parser cannot tell whether a source's
timestamps are milliseconds, so mixing both forms is the user's business.

Conditions: ``AND``, ``OR``, ``NOT``, parentheses; comparisons
``= != <> < <= > >=`` (``<>`` is stored as ``!=``); arithmetic ``+ - * / %``
and unary minus (``-3`` is ``Lit(-3)``, ``-S1.a`` is ``BinOp('-', Lit(0), S1.a)``);
the functions of :data:`slidewise.plan.expr.FUNCTIONS` (``ABS``, ``ROUND``, ``LOWER``, ``COALESCE``, ...), ``CASE``, ``LIKE``;
``CAST(expr AS INT | BIGINT | DOUBLE | FLOAT | TEXT | STRING)`` (``Func('cast',
(expr, Lit(kind)))``, kinds ``int``, ``float``, ``str``); integer,
float and single-quoted string literals (``'it''s'``); columns ``alias.attr``,
including ``alias.ts``. An unqualified column is allowed only when FROM has
one stream. Column references become ``Col(index in FROM, attr, alias)``.

The top-level ``AND`` of WHERE is split into conjuncts: ``A.x = B.y`` between
two different streams becomes an :class:`~slidewise.plan.query.Equality`, every
other conjunct a filter, in source order.

Every mistake raises :class:`~slidewise.errors.QueryError` with line, column,
the offending line with a caret under the spot, and a hint.

>>> q = parse("SELECT * FROM S1 [RANGE 10 s], S2 [ROWS 5] WHERE S1.a = S2.a AND S1.x > 3")
>>> [str(s.window) for s in q.streams], q.key_columns()
(['[RANGE 10000]', '[ROWS 5]'], ('a', 'a'))
>>> str(q.filters[0])
'S1.x > 3'

General queries (Golab's thesis §3.4; :func:`parse_plan`, :func:`parse_any`) add::

    SELECT [output] [DISTINCT] select_list        output also WSTREAM(select_list)[ROWS n | RANGE t]
    FROM NAME [window] | TABLE NAME | (query) [window] AS X  [, ...]
    [WHERE condition [AND NOT EXISTS (SELECT ... FROM ... WHERE inner.x = outer.y ...)]]
    [GROUP BY expr, ...]
    [UNION [ALL] | EXCEPT  SELECT ...]

with aggregates ``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``, ``SUM``,
``AVG``, ``MIN``, ``MAX``, ``MEDIAN``, ``QUANTILE(x, p)``, ``TOPK(k, x)``,
``APPROX_COUNT_DISTINCT``, ``APPROX_QUANTILE(x, p)`` as whole select items. ``UNION`` and ``UNION ALL``
are both the bag (merge) union; ``EXCEPT`` is the bag difference. A name in
``tables=`` (``--table R=PATH``) is a non-retroactive relation, ``TABLE R`` a
retroactive one; relations take no window. Every alias of the whole query is
unique.

>>> plan = parse_plan("SELECT RSTREAM(DISTINCT S.a) FROM S [RANGE 10]")
>>> [n.label() for n in walk(plan.root)]
['RSTREAM', 'Distinct', 'Project S.a', 'Window S[RANGE 10]']
"""

from slidewise.cql.join_builder import UNITS
from slidewise.cql.parser import load_any, load_query, parse, parse_any, parse_plan
from slidewise.plan.logical import walk  # noqa: F401 - used by the doctest above

__all__ = ["UNITS", "load_any", "load_query", "parse", "parse_any", "parse_plan"]
