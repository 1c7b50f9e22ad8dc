"""Overload handling in the embedded engine: measure, allocate, shed, sample, report.

Realises the allocations of :mod:`slidewise.optimizer.allocation` (Kang,
Naughton & Viglas, ICDE 2003, §5.2) with the paper's two random
devices, so that what is produced is a uniform random sample of the join:

* **random load shedding** — an arrival of stream ``i`` is processed with
  probability ``λ'_i/λ_i``. Mode ``drop`` (default) removes a shed arrival
  before the operator (it neither probes nor enters its window: real CPU and
  memory savings). Mode ``probe`` follows the paper's §5.2.1 assumption that
  window maintenance is cheap: the arrival still enters its window and only
  its own results (those it is the origin of) are withheld.
* **random window sampling** — a processed tuple stays in its window with
  probability ``W_i / full window``: results whose non-origin member was not
  sampled are withheld.

Withheld results are removed from the operator's output, which is exactly
the output of an operator that skipped those probes / stores (operators have
no probe or store mask yet, so these two devices save no operator work; drop
shedding does). Every decision is a hash of ``(seed, pos)`` against the
probability in force when the tuple arrived: seeded, independent of
chunking, and nothing is stored per tuple. Shed arrivals are counted per
stream and can go to the rejects output (reason ``shed (overload)``).

Rates: arrivals per second of replay, from event timestamps and the declared
``speed`` (timestamp units replayed per second; default 1). Service rate ``μ``:
``cpu_budget`` when declared (experiments), else measured as tuples per
second of operator time (EWMA over chunks). The stream is *overloaded* while
``Σλ > μ``; then ``Σλ' = μ``.

:class:`RunHooks` is the single object the engine calls per chunk; it also
hosts the adaptive re-planner (:mod:`slidewise.optimizer.adaptive`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from slidewise.errors import OptionError
from slidewise.model.batch import ResultBatch, StreamBatch
from slidewise.optimizer.allocation import Allocation, StreamLoad, allocate
from slidewise.plan.query import JoinQuery
from slidewise.runtime.rejects import Rejects, rows_as_text

SHED_REASON = "shed (overload)"
SHED_PROBE_REASON = "shed (overload): probe skipped, kept in its window"
_SALT_KEEP, _SALT_STORE = 0x5EED_0001, 0x5EED_0002


@dataclass
class OverloadOptions:
    """What the user declared; see the module docstring.

    ``cpu_budget``: μ in tuples/s; ``memory_budget``: M in window tuples
    (all windows together); ``min_share``: fraction of each budget every
    stream keeps; ``speed``: timestamp units per second of replay;
    ``shed``: ``drop`` or ``probe``; ``cpu`` / ``memory``: allocation
    strategies (``optimal``, ``equal``, ...); ``sigma``: join selectivity
    for the predicted rates (default: estimated from key frequencies);
    ``record_shed``: also write shed tuples to the rejects output (line 0:
    after reordering the engine no longer knows the source line).
    """

    cpu_budget: float | None = None
    memory_budget: float | None = None
    min_share: float = 0.0
    speed: float | None = None
    seed: int = 0
    shed: str = "drop"
    cpu: str = "optimal"
    memory: str = "optimal"
    sigma: float | None = None
    record_shed: bool = False
    history_chunks: int = 4

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.cpu_budget, self.memory_budget, self.speed))

    def validate(self, n: int) -> None:
        for name, v in (("--cpu-budget", self.cpu_budget), ("--memory-budget", self.memory_budget), ("--speed", self.speed)):
            if v is not None and not (np.isfinite(v) and v > 0):
                raise OptionError(
                    f"{name} must be a positive number, got {v!r}",
                    hint="e.g. --cpu-budget 5000 (tuples/s), --memory-budget 100000 (window tuples), --speed 1000 (ms timestamps in real time)",
                )
        if not 0 <= self.min_share <= 1.0 / n:
            raise OptionError(
                f"--min-share must be between 0 and 1/{n} = {1 / n:.3g}, got {self.min_share:g}", hint="the fraction of each budget every stream keeps, e.g. 0.1"
            )
        if self.shed not in ("drop", "probe"):
            raise OptionError(f"unknown shedding mode {self.shed!r}", hint="use drop or probe")


def uniform(pos: np.ndarray, salt: int) -> np.ndarray:
    """A uniform number in [0, 1) per position: splitmix64 of ``pos + salt`` (vectorised)."""
    with np.errstate(over="ignore"):
        z = np.asarray(pos, dtype=np.uint64) + np.uint64(salt & 0xFFFFFFFFFFFFFFFF)
        z = z * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def key_selectivity(batches: list[StreamBatch], keys: tuple[str, ...]) -> float | None:
    """Probability that one tuple per stream agree on the key: ``Σ_k Π_i f_i(k)`` in this chunk."""
    arrays = [b.ts if k == "ts" else b.cols.get(k) for b, k in zip(batches, keys)]
    if any(a is None or len(a) == 0 for a in arrays):
        return None
    try:
        _, inv = np.unique(np.concatenate([np.asarray(a) for a in arrays]), return_inverse=True)
    except TypeError:
        return None
    prod, off = None, 0
    for a in arrays:
        f = np.bincount(inv[off : off + len(a)]) / len(a)
        off += len(a)
        prod = f if prod is None else prod[: len(f)] * f[: len(prod)]
    return float(prod.sum())


def _subset(res: ResultBatch, mask: np.ndarray) -> ResultBatch:
    return ResultBatch(res.members[mask], res.ts[mask], res.exp[mask], res.sign[mask], {k: v[mask] for k, v in res.cols.items()})


class OverloadController:
    """Per-chunk controller: estimates rates, allocates, sheds and samples (see module docstring)."""

    def __init__(self, query: JoinQuery, options: OverloadOptions, *, rejects: Rejects | None = None, sources: dict | None = None):
        options.validate(query.n)
        self.query, self.opt, self.n = query, options, query.n
        self.names = list(query.aliases)
        self.speed = float(options.speed or 1.0)
        self.rejects = rejects if options.record_shed else None
        self.files = [str(sources.get(r.source)) if sources and isinstance(sources.get(r.source), str) else "" for r in query.streams]
        self.keys = query.key_columns()
        seed = int(options.seed)
        self.salt_keep, self.salt_store = seed * 0x10001 + _SALT_KEEP, seed * 0x10001 + _SALT_STORE
        n = self.n
        self.arrived, self.kept, self.shed, self.sampled_out = (np.zeros(n, np.int64) for _ in range(4))
        self.history: deque = deque(maxlen=max(1, options.history_chunks))
        self.rates = np.zeros(n)
        self.mu_measured: float | None = None
        self.sigma_sum = self.sigma_weight = 0.0
        self.allocation: Allocation | None = None
        self.cp_pos: list[int] = []  # change points: first pos of each allocation in force
        self.cp_keep: list[np.ndarray] = []
        self.cp_sample: list[np.ndarray] = []
        self.chunks = self.overloaded_chunks = self.memory_limited_chunks = 0
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.predicted = self.exact = self.weighted_s = 0.0
        self.produced = self.withheld = 0

    # ---------------------------------------------------------------- model
    def _loads(self, rates: np.ndarray) -> list[StreamLoad]:
        loads = []
        for i, ref in enumerate(self.query.streams):
            w = ref.window
            if w.kind == "rows":
                loads.append(StreamLoad(float(rates[i]), rows=float(w.size)))
            elif w.kind == "unbounded":
                loads.append(StreamLoad(float(rates[i]), rows=float(max(1, self.arrived[i]))))
            else:
                loads.append(StreamLoad(float(rates[i]), seconds=(w.length + 1) / self.speed))
        return loads

    @property
    def sigma(self) -> float | None:
        if self.opt.sigma is not None:
            return float(self.opt.sigma)
        return self.sigma_sum / self.sigma_weight if self.sigma_weight else None

    @property
    def service_rate(self) -> float | None:
        return float(self.opt.cpu_budget) if self.opt.cpu_budget is not None else self.mu_measured

    # -------------------------------------------------------------- per chunk
    def before(self, chunk: list[StreamBatch]) -> list[StreamBatch]:
        """Observe the arrivals, (re)allocate, and return the chunk to feed the operator."""
        batches = sorted(chunk, key=lambda b: b.stream)
        counts = np.array([len(b) for b in batches], np.int64)
        if not counts.sum():
            return chunk
        self.chunks += 1
        lo = min(int(b.ts[0]) for b in batches if len(b))
        hi = max(int(b.ts[-1]) for b in batches if len(b))
        prev_last = self.last_ts
        self.first_ts = lo if self.first_ts is None else self.first_ts
        self.last_ts = hi
        self.arrived += counts
        self.history.append((counts, lo, hi))
        span_s = (hi - self.history[0][1] + 1) / self.speed
        self.rates = sum(c for c, _, _ in self.history) / span_s
        if self.keys is not None and self.opt.sigma is None:
            s = key_selectivity(batches, self.keys)
            if s is not None:
                w = float(counts.sum())
                self.sigma_sum += s * w
                self.sigma_weight += w
        self._reallocate(int(min(b.pos[0] for b in batches if len(b))))
        chunk_s = (hi - (prev_last if prev_last is not None else lo - 1)) / self.speed
        if self.allocation is not None:  # σ-free model rates, times σ in stats()
            self.weighted_s += chunk_s
            self.predicted += self.allocation.output_rate * chunk_s
            self.exact += self.allocation.exact_rate * chunk_s
        return [self._shed(b) for b in chunk]

    def _reallocate(self, first_pos: int) -> None:
        mu = self.service_rate
        cpu = mu if mu is not None and self.rates.sum() > mu else None
        alloc = allocate(
            self._loads(self.rates),
            cpu_budget=cpu,
            memory_budget=self.opt.memory_budget,
            min_share=self.opt.min_share,
            mode=self.opt.shed,
            cpu=self.opt.cpu,
            memory=self.opt.memory,
            names=self.names,
        )
        self.allocation = alloc
        self.overloaded_chunks += alloc.cpu_limited
        self.memory_limited_chunks += alloc.memory_limited
        keep, sample = np.array(alloc.keep), np.array(alloc.sample)
        if self.cp_keep and np.allclose(keep, self.cp_keep[-1], atol=1e-9) and np.allclose(sample, self.cp_sample[-1], atol=1e-9):
            return
        self.cp_pos.append(first_pos)
        self.cp_keep.append(keep)
        self.cp_sample.append(sample)

    def _probabilities(self, pos: np.ndarray, stream: int, table: list[np.ndarray]) -> np.ndarray:
        idx = np.searchsorted(np.asarray(self.cp_pos, np.int64), pos, "right") - 1
        probs = np.array([t[stream] for t in table] + [1.0])
        return probs[idx]  # idx -1 (before any allocation) picks the trailing 1.0

    def _flags(self, pos: np.ndarray, stream: int, salt: int, table: list[np.ndarray]) -> np.ndarray:
        if not self.cp_pos:
            return np.ones(len(pos), bool)
        return uniform(pos, salt) < self._probabilities(pos, stream, table)

    def _shed(self, b: StreamBatch) -> StreamBatch:
        keep = self._flags(b.pos, b.stream, self.salt_keep, self.cp_keep)
        n_keep = int(keep.sum())
        self.kept[b.stream] += n_keep
        self.shed[b.stream] += len(b) - n_keep
        stored = self._flags(b.pos, b.stream, self.salt_store, self.cp_sample)
        self.sampled_out[b.stream] += int((~stored & (keep if self.opt.shed == "drop" else True)).sum())
        if n_keep == len(b):
            return b
        if self.rejects is not None:
            gone = b.take(~keep)
            reason = SHED_REASON if self.opt.shed == "drop" else SHED_PROBE_REASON
            self.rejects.add_many(
                self.names[b.stream], self.files[b.stream], np.zeros(len(gone), np.int64), reason, rows_as_text({"ts": gone.ts, **gone.cols}), kind="shed"
            )
        return b.take(keep) if self.opt.shed == "drop" else b

    def after(self, results: ResultBatch, seconds: float | None = None, fed: int = 0) -> ResultBatch:
        """Measure μ from this chunk's operator time; withhold unsampled results."""
        if seconds is not None and seconds > 0 and fed > 0:
            mu = fed / seconds
            self.mu_measured = mu if self.mu_measured is None else 0.5 * self.mu_measured + 0.5 * mu
        if len(results) and self.cp_pos:
            keep = np.ones(len(results), bool)
            members = results.members
            origin = members.argmax(axis=1)
            for i in range(self.n):
                is_origin = origin == i
                if self.opt.shed == "probe":
                    keep &= ~is_origin | self._flags(members[:, i], i, self.salt_keep, self.cp_keep)
                keep &= is_origin | self._flags(members[:, i], i, self.salt_store, self.cp_sample)
            if not keep.all():
                self.withheld += int((results.sign[~keep] > 0).sum())
                results = _subset(results, keep)
        self.produced += int((results.sign > 0).sum())
        return results

    def stats(self) -> dict:
        names = self.names

        def per(values, digits=3):
            return {n: (round(float(v), digits) if isinstance(v, float | np.floating) else int(v)) for n, v in zip(names, values)}

        duration = (self.last_ts - self.first_ts + 1) / self.speed if self.first_ts is not None else 0.0
        ws = self.weighted_s or None
        out = {
            "mode": self.opt.shed,
            "speed": self.speed,
            "cpu_budget": self.opt.cpu_budget,
            "memory_budget": self.opt.memory_budget,
            "min_share": self.opt.min_share,
            "seed": self.opt.seed,
            "strategy": f"{self.opt.cpu}/{self.opt.memory}",
            "service_rate_measured": None if self.mu_measured is None else round(self.mu_measured, 1),
            "chunks": self.chunks,
            "overloaded_chunks": self.overloaded_chunks,
            "memory_limited_chunks": self.memory_limited_chunks,
            "reallocations": len(self.cp_pos),
            "arrival_rate": per(self.rates.astype(float)),
            "arrived": per(self.arrived),
            "kept": per(self.kept),
            "shed": per(self.shed),
            "window_sampled_out": per(self.sampled_out),
            "sigma": None if self.sigma is None else round(self.sigma, 8),
            "duration_s": round(duration, 6),
            "results": self.produced,
            "results_withheld": self.withheld,
            "measured_output_rate": round(self.produced / duration, 4) if duration > 0 else None,
            "predicted_output_rate": None,
            "predicted_exact_rate": None,
            # probe mode feeds every arrival, so the operator's full answer is known exactly
            "exact_results": self.produced + self.withheld if self.opt.shed == "probe" else None,
        }
        if ws and self.sigma is not None:
            sig = self.sigma
            out["predicted_output_rate"] = round(sig * self.predicted / ws, 4)
            out["predicted_exact_rate"] = round(sig * self.exact / ws, 4)
            out["predicted_results"] = round(sig * self.predicted / ws * duration, 1)
            out["predicted_exact_results"] = round(sig * self.exact / ws * duration, 1)
        if self.allocation is not None:
            out["allocation"] = self.allocation.as_dict(names)
            if self.sigma is not None:
                out["allocation"]["sigma"] = self.sigma
                out["allocation"]["predicted_output_rate"] = round(self.allocation.output_rate * self.sigma, 4)
                out["allocation"]["predicted_exact_rate"] = round(self.allocation.exact_rate * self.sigma, 4)
        return out


class RunHooks:
    """What the engine calls per chunk when overload options or adaptivity are on."""

    def __init__(self, overload: OverloadController | None = None, adaptive=None, clock: Callable[[], float] = time.perf_counter):
        self.overload, self.adaptive, self.clock = overload, adaptive, clock

    def process(self, operator, chunk: list[StreamBatch]) -> ResultBatch:
        if self.adaptive is not None:
            self.adaptive.observe(operator, chunk)
        fed = self.overload.before(chunk) if self.overload is not None else chunk
        started = self.clock()
        res = operator.process(fed)
        if self.overload is not None:
            res = self.overload.after(res, self.clock() - started, sum(len(b) for b in fed))
        return res

    def finish(self, operator) -> ResultBatch:
        res = operator.finish()
        return self.overload.after(res) if self.overload is not None else res

    def stats(self) -> dict:
        out = {}
        if self.overload is not None:
            out["shedding"] = self.overload.stats()
        if self.adaptive is not None:
            out["replans"] = self.adaptive.stats()
        return out


def make_hooks(
    query: JoinQuery, *, overload: OverloadOptions | dict | None = None, adaptive=None, rejects: Rejects | None = None, sources: dict | None = None
) -> RunHooks | None:
    """The engine's per-chunk hooks, or ``None`` when nothing is asked (the engine is then unchanged).

    ``adaptive``: ``True``, a threshold (drift factor, e.g. 2.0) or an
    :class:`~slidewise.optimizer.adaptive.AdaptiveOptions`.
    """
    if isinstance(overload, dict):
        overload = OverloadOptions(**overload)
    ctl = OverloadController(query, overload, rejects=rejects, sources=sources) if overload is not None and overload.active else None
    planner = None
    if adaptive:
        from slidewise.optimizer.adaptive import AdaptiveReplanner

        planner = AdaptiveReplanner.from_option(query, adaptive)
    if ctl is None and planner is None:
        return None
    return RunHooks(ctl, planner)


# ------------------------------------------------------------------- CLI ----


def add_cli_arguments(p) -> None:
    """``slidewise run`` options for overload handling and adaptivity."""
    g = p.add_argument_group("overload (Kang et al. §5.2) and adaptivity")
    g.add_argument("--cpu-budget", type=float, metavar="TUPLES_PER_S", help="service rate μ the join may use; arrivals beyond it are shed (default: measured)")
    g.add_argument("--memory-budget", type=float, metavar="TUPLES", help="window tuples M for all windows together; windows are sampled to fit")
    g.add_argument("--min-share", type=float, default=0.0, help="fraction of each budget every stream keeps (default 0)")
    g.add_argument(
        "--speed",
        type=float,
        metavar="UNITS_PER_S",
        help="timestamp units replayed per second (e.g. 1000 for ms in real time; default 1); alone, it turns on overload detection with the measured service rate",
    )
    g.add_argument("--shed", choices=["drop", "probe"], default="drop", help="drop: shed arrivals are removed; probe: they enter their window but do not probe")
    g.add_argument("--shed-seed", type=int, default=0, help="seed of the random shedding and sampling")
    g.add_argument("--shed-rejects", action="store_true", help="also write shed tuples to --rejects (reason 'shed (overload)')")
    g.add_argument(
        "--allocation",
        default="optimal",
        metavar="CPU[/MEMORY]",
        help="allocation strategy: optimal, equal, rates, windows (CPU), inverse (memory), max:STREAM (default optimal)",
    )
    g.add_argument(
        "--adaptive", nargs="?", type=float, const=2.0, metavar="FACTOR", help="re-plan the join order when a rate or distinct count drifts by FACTOR (default 2)"
    )


def kwargs_from_args(args) -> dict:
    """``overload`` / ``adaptive`` keyword arguments for :func:`slidewise.run` from parsed CLI args."""
    out: dict = {}
    cpu, _, mem = args.allocation.partition("/")
    cpu = cpu or "optimal"
    mem = mem or ("optimal" if cpu == "windows" else cpu)  # one name for both budgets
    opts = OverloadOptions(
        cpu_budget=args.cpu_budget,
        memory_budget=args.memory_budget,
        min_share=args.min_share,
        speed=args.speed,
        seed=args.shed_seed,
        shed=args.shed,
        cpu=cpu,
        memory=mem,
        record_shed=args.shed_rejects,
    )
    if opts.active:
        out["overload"] = opts
    if args.adaptive is not None:
        out["adaptive"] = args.adaptive
    return out


def summary_line(stats: dict) -> str | None:
    """One line about shedding and re-plans for the CLI summary, if any happened."""
    parts = []
    sh = stats.get("shedding")
    if sh:
        shed = sum(sh["shed"].values())
        parts.append(
            f"overload: {sh['overloaded_chunks']}/{sh['chunks']} chunks over budget, "
            f"shed {shed:,} of {sum(sh['arrived'].values()):,} arrivals ({sh['mode']}), "
            f"{sh['results_withheld']:,} results withheld (probe shedding, window sampling); output "
            f"{sh['measured_output_rate']} results/s (predicted {sh['predicted_output_rate']}, "
            f"exact {sh['predicted_exact_rate']})"
        )
    if stats.get("replans"):
        moved = [r for r in stats["replans"] if r["migrated"]]
        parts.append(
            f"statistics drifted {len(stats['replans'])} time(s); join order migrated {len(moved)} "
            "time(s)" + (": " if moved else "") + "; ".join(f"{','.join(r['old'])} -> {','.join(r['new'])}" for r in moved)
        )
    return "\n".join(parts) or None
