"""The join workloads of ``slidewise bench joins`` and how to name an algorithm.

* **W2** – 2 streams, rates 1:1, ``[RANGE 1000]`` each, 1000 distinct values,
  1,000,000 tuples.
* **W4** – Golab & Özsu Table 5: 4 streams, λ = 10, 1, 1, 3; T = 100, 100, 200,
  100; v = 500, 50, 40, 5; 200,000 tuples.

Equi-join on the common attribute ``a``; ``ts`` is the loop index of the
paper's generator (Golab & Özsu §6.1), so every time unit carries exactly one
tuple and its global position ``pos`` equals its ``ts``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from slidewise.plan.expr import Col
from slidewise.plan.query import Equality, JoinQuery, StreamRef, WindowSpec

#: the algorithm every other one (and DuckDB) is compared with
REFERENCE = "columnar"
#: attribute columns every stream carries
COLUMNS = ("a", "x")


@dataclass(frozen=True)
class Workload:
    """Streams with relative rates, time windows and distinct join values."""

    name: str
    description: str
    rates: tuple[int, ...]
    windows: tuple[int, ...]
    distinct: tuple[int, ...]
    tuples: int

    @property
    def aliases(self) -> list[str]:
        return [f"S{i + 1}" for i in range(len(self.rates))]

    @property
    def warmup(self) -> int:
        """Tuples until every window is full (one tuple per time unit)."""
        return max(self.windows)

    def query(self, slide: int | None = None, restore: bool = False) -> JoinQuery:
        """The equi-join on ``a`` over ``[RANGE T_i (SLIDE slide)]`` windows."""
        refs = tuple(StreamRef(a, a, WindowSpec("range", t, slide=slide)) for a, t in zip(self.aliases, self.windows))
        eqs = tuple(Equality(Col(0, "a", self.aliases[0]), Col(i, "a", a)) for i, a in enumerate(self.aliases) if i)
        q = JoinQuery(refs, eqs, restore=restore)
        return replace(
            q,
            text=("ISTREAM_RESTORE" if slide and restore else "ISTREAM")
            + " (SELECT * FROM "
            + ", ".join(f"{r.alias} {r.window}" for r in refs)
            + " WHERE "
            + " AND ".join(str(e) for e in eqs)
            + ")",
        )

    @classmethod
    def from_dict(cls, d: dict) -> Workload:
        """Inverse of ``dataclasses.asdict`` (lists back to tuples), for child processes."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


WORKLOADS: dict[str, Workload] = {
    "W2": Workload("W2", "2 streams, rates 1:1, RANGE 1000 each, 1000 distinct values", (1, 1), (1000, 1000), (1000, 1000), 1_000_000),
    "W4": Workload(
        "W4",
        "Golab & Özsu Table 5: 4 streams, rates 10,1,1,3, RANGE 100,100,200,100, distinct values 500,50,40,5",
        (10, 1, 1, 3),
        (100, 100, 200, 100),
        (500, 50, 40, 5),
        200_000,
    ),
}


def resolve_algorithm(name: str):
    """A registry name, or ``package.module:Class`` for an out-of-tree operator."""
    if ":" in name:
        import importlib

        module, cls = name.split(":", 1)
        return getattr(importlib.import_module(module), cls)
    from slidewise.operators.joins import get_algorithm

    return get_algorithm(name)
