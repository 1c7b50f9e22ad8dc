"""Scheduling periodic re-executions of many queries (Golab's thesis §8.4).

Time is counted in synopsis updates (window slides). A query of period ``n``
should see at most ``n`` updates between re-executions (§8.4.1); a task's
time-until-deadline ``d`` is reset to its period when it runs and decremented
at every update, and it ran on time if ``d ≥ 0`` then. Queries that can share
one scan (the same *group*: one synopsis, different windows and periods) are
partitioned by :data:`POLICIES`:

* ``edf`` — Algorithm 9: one task per query, the lowest ``d`` first;
* ``no-sharing`` — Algorithm 9 over sub-groups (queries of one group and one
  period), each executed alone;
* ``aggressive`` — one task per group, with its shortest period;
* ``conservative`` — Algorithm 10: sub-groups; the tasks with the lowest ``d``
  that belong to the chosen task's group run together;
* ``hybrid`` — conservative over sub-groups whose periods the cost model
  (:func:`hybrid_periods`, §8.4.4) shortened to another sub-group's;
* ``hybrid-late`` / ``hybrid-late-pending`` — Algorithm 11: in overload (some
  ``d < 0``) the late (and pending, ``d = 0``) tasks of a group run together.

By default (``idle=True``, the service) a task is run only when its group's
synopsis was updated since the task last ran (an earlier re-execution would
repeat the same answer), so the scheduler idles when every task is up to date.
With ``idle=False`` it follows Algorithms 9-11 as written ("if Q(T) is not
empty, execute the task with the lowest d"): some task runs whenever asked,
updated or not, as §8.4.1's underload without idle time. The *latency* of a
re-execution is the number of updates since the query last ran beyond its
period (§8.5.1): 0 when on time.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import lcm

import numpy as np

__all__ = ["POLICIES", "PeriodicScheduler", "hybrid_periods", "schedule_cost"]

POLICIES = ("edf", "no-sharing", "aggressive", "conservative", "hybrid", "hybrid-late", "hybrid-late-pending")

#: sub-groups up to this many: every hybrid schedule is priced; beyond: greedy improvement
EXACT_SUBGROUPS = 6
#: the cost model simulates at most this many updates (the schedule repeats after the lcm of the periods)
HORIZON = 600
#: the greedy search moves a sub-group to one of this many nearest shorter periods
NEAREST = 3


def schedule_cost(periods: Sequence[int], costs: Sequence[float], post: Sequence[float] | None = None) -> float:
    """Cost per update of running sub-groups with these ``periods``, scan ``costs`` and post-processing
    costs ``post`` (default 0): at each update the due sub-groups run together for the scan cost of the
    most expensive (the scan of the longest window answers the shorter ones along the way, §8.4.4) plus
    the post-processing of each."""
    p = np.asarray(periods, np.int64)
    c = np.asarray(costs, np.float64)
    ticks = np.arange(1, min(lcm(*(int(x) for x in p)), HORIZON) + 1)
    due = ticks[:, None] % p[None, :] == 0
    total = np.where(due, c[None, :], 0.0).max(axis=1).sum()
    if post is not None:
        total += (due * np.asarray(post, np.float64)[None, :]).sum()
    return float(total / len(ticks))


def hybrid_periods(periods: Sequence[int], costs: Sequence[float], post: Sequence[float] | None = None) -> list[int]:
    """Hybrid scheduling (§8.4.4): each sub-group keeps its period or takes the shorter period of a sub-group
    that keeps its own, whichever assignment costs least per update: every assignment up to :data:`EXACT_SUBGROUPS`
    sub-groups, else the best single move (to one of the :data:`NEAREST` shorter kept periods) until none helps."""
    order = sorted(range(len(periods)), key=lambda i: periods[i])
    own = [int(periods[i]) for i in order]
    cost = [costs[i] for i in order]
    extra = [0.0 if post is None else post[i] for i in order]
    k = len(own)
    if k <= 1:
        return list(periods)
    if k <= EXACT_SUBGROUPS:
        best, best_cost = own, schedule_cost(own, cost, extra)
        for choice in itertools.product(*(range(i + 1) for i in range(k))):
            if any(choice[choice[i]] != choice[i] for i in range(k)):
                continue  # a sub-group may only adopt the period of one that keeps its own
            p = [own[c] for c in choice]
            value = schedule_cost(p, cost, extra)
            if value < best_cost - 1e-12:
                best, best_cost = p, value
    else:
        target = list(range(k))
        best_cost = schedule_cost(own, cost, extra)
        while True:
            moves = []
            for i in range(k):
                if any(target[x] == i for x in range(k) if x != i):
                    continue  # others follow it
                anchors = [a for a in range(i) if target[a] == a and own[a] < own[i]][-NEAREST:]
                for a in [i] + anchors:
                    if a != target[i]:
                        trial = target[:i] + [a] + target[i + 1 :]
                        moves.append((schedule_cost([own[x] for x in trial], cost, extra), trial))
            if not moves:
                break
            value, trial = min(moves, key=lambda m: m[0])
            if value >= best_cost - 1e-12:
                break
            best_cost, target = value, trial
        best = [own[x] for x in target]
    out = [0] * k
    for pos, i in enumerate(order):
        out[i] = best[pos]
    return out


@dataclass
class Query:
    name: str
    group: object  # queries of one group share a scan
    period: int  # updates between re-executions (n)
    window: int  # sub-windows read (the cost of one run: window - 1 merges)
    post: float = 0.0  # the cost of its own post-processing per run, in merges
    since: int = 0  # updates since it last ran
    runs: int = 0
    late: int = 0  # sum of latencies
    overdue: int = 0  # re-executions with a latency above 0


@dataclass
class Task:
    key: tuple
    group: object
    period: int
    d: int
    members: list[str] = field(default_factory=list)
    fresh: bool = False  # the synopsis was updated since the task last ran


class PeriodicScheduler:
    """Add and remove queries while running; :meth:`update` at every slide, then :meth:`next` until None (``idle``
    False: never None while there are tasks, call it as long as there is time)."""

    def __init__(self, policy: str = "hybrid-late-pending", idle: bool = True):
        if policy not in POLICIES:
            raise ValueError(f"unknown scheduling policy {policy!r}")
        self.policy = policy
        self.idle = idle  # False: never idle, a task runs whenever asked (Algorithms 9-11 as written)
        self.queries: dict[str, Query] = {}
        self._tasks: dict[tuple, Task] = {}
        self.dirty = False
        self._hybrid: dict[tuple, list[int]] = {}  # memo of hybrid_periods
        self.executions = 0  # scans (joint executions count once)

    def add(self, name: str, group: object, period: int, window: int, post: float = 0.0) -> None:
        """A query of ``group`` re-executed every ``period`` updates over ``window`` sub-windows; ``post``:
        its own post-processing per run in merges (for the hybrid cost model)."""
        self.queries[name] = Query(name, group, max(1, period), max(1, window), post)
        self.dirty = True

    def remove(self, name: str) -> None:
        self.dirty |= self.queries.pop(name, None) is not None

    @property
    def tasks(self) -> dict[tuple, Task]:
        """The tasks of the policy (rebuilt after queries were added or removed)."""
        if self.dirty:
            self._rebuild()
        return self._tasks

    def _rebuild(self) -> None:
        """Tasks of the policy from the queries; a task that stays keeps its deadline."""
        self.dirty = False
        policy, qs = self.policy, list(self.queries.values())
        plan: dict[tuple, tuple[object, int, list[str]]] = {}
        if policy == "edf":
            for q in qs:
                plan[("q", q.name)] = (q.group, q.period, [q.name])
        elif policy == "aggressive":
            for q in qs:
                key = ("g", q.group)
                g, p, m = plan.get(key, (q.group, q.period, []))
                plan[key] = (g, min(p, q.period), m + [q.name])
        else:
            periods: dict[object, dict[int, list[Query]]] = {}
            for q in qs:
                periods.setdefault(q.group, {}).setdefault(q.period, []).append(q)
            for group, subs in periods.items():
                own = sorted(subs)
                assigned = own
                if policy.startswith("hybrid"):
                    costs = [max(q.window for q in subs[p]) - 1 for p in own]
                    post = [sum(q.post for q in subs[p]) for p in own]
                    memo = (tuple(own), tuple(costs), tuple(post))
                    if memo not in self._hybrid:
                        self._hybrid[memo] = hybrid_periods(own, costs, post)
                    assigned = self._hybrid[memo]
                for p, a in zip(own, assigned):
                    task = ("s", group, a)
                    g, period, m = plan.get(task, (group, a, []))
                    plan[task] = (g, period, m + [q.name for q in subs[p]])
        old = self._tasks
        self._tasks = {}
        for key, (group, period, members) in plan.items():
            prev = old.get(key)
            d = period if prev is None else min(prev.d, period)
            self._tasks[key] = Task(key, group, period, d, members, prev.fresh if prev else True)

    def update(self, groups: Callable[[object], bool] | None = None) -> None:
        """A synopsis update of the groups ``groups(group)`` holds for (None: all): each of their tasks'
        time-until-deadline drops by one."""
        for t in self.tasks.values():
            if groups is None or groups(t.group):
                t.d -= 1
                t.fresh = True
        for q in self.queries.values():
            if groups is None or groups(q.group):
                q.since += 1

    def next(self) -> list[str] | None:
        """The queries to execute together now (one scan of their group), their deadlines reset; None: nothing due
        (with ``idle`` False: no task at all)."""
        ready = [t for t in self.tasks.values() if t.fresh or not self.idle]
        if not ready:
            return None
        v = min(t.d for t in ready)
        late = self.policy in ("hybrid-late", "hybrid-late-pending") and v < 0
        if late:
            bound = 0 if self.policy == "hybrid-late-pending" else -1
            chosen = [t for t in ready if t.d <= bound]
        else:
            chosen = [t for t in ready if t.d == v]
        first = min(chosen, key=lambda t: (t.d, t.period, str(t.key)))
        if self.policy in ("edf", "no-sharing", "aggressive"):
            batch = [first]
        else:
            batch = [t for t in chosen if t.group == first.group]
        names: list[str] = []
        for t in batch:
            t.d, t.fresh = t.period, False
            names += t.members
        for name in names:
            q = self.queries[name]
            q.late += max(0, q.since - q.period)
            q.overdue += q.since > q.period
            q.runs += 1
            q.since = 0
        self.executions += 1
        return names

    def latency(self, name: str | None = None) -> float:
        """Average latency per re-execution (of one query, or over all)."""
        qs = [self.queries[name]] if name else list(self.queries.values())
        runs = sum(q.runs for q in qs)
        return sum(q.late for q in qs) / runs if runs else 0.0
