"""Where a row of an archive goes: the doubly partitioned index and the wave index baselines.

Golab, "Sliding Window Query Processing over Data Streams" (PhD thesis, Waterloo
2006), ch. 4. Time is cut into update slots of width Δ (``every``): a row
inserted by the update at ``now`` has the insertion slot ``now // Δ`` and the
expiration slot ``exp // Δ``. A layout maps the two slots to one of ``n``
sub-indices (cells):

* ``doubly`` — the round-robin doubly partitioned index (§4.3.1, Algorithm 1):
  G × E cells; insertion slot ``i`` goes to row ``i mod G``, expiration slot
  ``e`` to column ``e mod E``, so consecutive updates never insert into or
  expire from the same sub-index twice in a row. An update touches the E cells
  of one row and the G cells of the expiring column(s): G + E − 1 of n
  (§4.3.2; G = E = √n is the minimum).
* ``doubly-chr`` — chronological double partitioning (Fig. 4.1): runs of
  ⌈S / (ΔG)⌉ insertion slots per row and ⌈S / (ΔE)⌉ expiration slots per
  column, S being the largest lifetime (``max_lifetime``).
* ``wave-ins`` / ``wave-exp`` — the wave index (§4.4.1, R-ins, D-ins, R-exp,
  D-exp): n cells, runs of ⌈S / (Δn)⌉ insertion (or expiration) slots each;
  with variable lifetimes expirations (or insertions) reach every cell.

Any lifetime is placed correctly (a lifetime above S only unbalances the
cells); which cells an update rewrites follows from the rows they hold
(:mod:`slidewise.archive.store` keeps each file's smallest ``exp``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from slidewise.errors import OptionError

#: layout kinds, by partitioning of (insertion, expiration) time
KINDS = ("doubly", "doubly-chr", "wave-ins", "wave-exp")
#: bucket strategies: re-cluster a touched sub-index into one sorted file, or add sorted runs
STRATEGIES = ("rebuild", "norebuild")
#: the thesis's names of the variants -> (kind, strategy)
VARIANTS = {
    "rebuild": ("doubly", "rebuild"),
    "norebuild": ("doubly", "norebuild"),
    "rebuild-chr": ("doubly-chr", "rebuild"),
    "norebuild-chr": ("doubly-chr", "norebuild"),
    "r-ins": ("wave-ins", "rebuild"),
    "d-ins": ("wave-ins", "norebuild"),
    "r-exp": ("wave-exp", "rebuild"),
    "d-exp": ("wave-exp", "norebuild"),
}


@dataclass(frozen=True)
class Layout:
    """A partitioning of rows into ``n`` cells by insertion and expiration slot."""

    kind: str = "doubly"
    strategy: str = "rebuild"
    n: int = 16
    every: int = 1
    max_lifetime: int = 16
    g: int = 4
    e: int = 4

    @classmethod
    def make(cls, variant: str = "rebuild", *, n: int = 16, every: int = 1, max_lifetime: int | None = None, g: int | None = None, e: int | None = None) -> Layout:
        """The layout of a named variant (``VARIANTS``); G = E = √n unless given (doubly kinds)."""
        if variant not in VARIANTS:
            raise OptionError(f"unknown archive variant {variant!r}", hint=f"use one of {', '.join(VARIANTS)}")
        kind, strategy = VARIANTS[variant]
        if not isinstance(every, (int, np.integer)) or every < 1:
            raise OptionError(f"the archive's update interval must be a positive integer, not {every!r}", hint="e.g. every=60 (time units of the rows' ts and exp)")
        life = int(max_lifetime) if max_lifetime is not None else 16 * int(every)
        if life < 1:
            raise OptionError(f"the archive's largest lifetime must be positive, not {max_lifetime!r}", hint="the largest exp - ts of the rows")
        if kind.startswith("doubly"):
            if g is None and e is None:
                root = max(1, math.isqrt(n))
                g, e = root, max(1, n // root)
            elif g is None or e is None:
                g = g if g is not None else max(1, n // int(e))  # type: ignore[arg-type]
                e = e if e is not None else max(1, n // int(g))
            n = int(g) * int(e)
        else:
            g, e = (n, 1) if kind == "wave-ins" else (1, n)
        if n < 1 or g < 1 or e < 1:
            raise OptionError(f"an archive needs at least one sub-index (n={n}, G={g}, E={e})", hint="use n >= 1")
        return cls(kind, strategy, int(n), int(every), life, int(g), int(e))

    @property
    def variant(self) -> str:
        """The thesis's name of this layout (``rebuild``, ``d-ins``, ...)."""
        return next(name for name, ks in VARIANTS.items() if ks == (self.kind, self.strategy))

    def slot(self, t: object) -> np.ndarray:
        """The update slot of instants ``t`` (floor division by Δ)."""
        return np.floor_divide(np.asarray(t, dtype=np.int64), self.every)

    def _run(self, parts: int) -> int:
        """Slots per chronological run when the largest lifetime is cut into ``parts``."""
        return max(1, -(-self.max_lifetime // (self.every * parts)))

    def cells(self, now: int, exp: object) -> np.ndarray:
        """The cell of each row with expiration ``exp`` inserted by the update at ``now``."""
        ins = int(self.slot(now))
        out = self.slot(exp)
        if self.kind == "doubly":
            return (ins % self.g) * self.e + out % self.e
        if self.kind == "doubly-chr":
            return ((ins // self._run(self.g)) % self.g) * self.e + (out // self._run(self.e)) % self.e
        if self.kind == "wave-ins":
            return np.full(len(out), (ins // self._run(self.n)) % self.n, dtype=np.int64)
        return (out // self._run(self.n)) % self.n

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Layout:
        ints = {k: int(data[k]) for k in ("n", "every", "max_lifetime", "g", "e")}
        return cls(str(data["kind"]), str(data["strategy"]), **ints)
