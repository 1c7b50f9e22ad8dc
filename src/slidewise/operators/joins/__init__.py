"""Multi-way sliding-window join operators, one module per algorithm.

Every concrete :class:`~slidewise.operators.joins.base.JoinOperator` subclass
with a ``name`` in a module of this package is registered automatically;
``--algorithm NAME`` selects it. See ``README.md`` in this folder for the list
and how the planner chooses.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from slidewise.errors import PlanError
from slidewise.operators.joins.base import JoinOperator, ResultBuilder

__all__ = ["JoinOperator", "ResultBuilder", "algorithms", "get_algorithm"]

#: the default algorithm: the columnar batch equi-join
DEFAULT = "columnar"
#: operators outside this package that the engine hosts like joins
EXTRA_MODULES = ("slidewise.operators.select",)


def algorithms() -> dict[str, type[JoinOperator]]:
    """All registered join algorithms by name."""
    found: dict[str, type[JoinOperator]] = {}
    names = [f"{__name__}.{i.name}" for i in pkgutil.iter_modules(__path__) if i.name != "base"]
    for module_name in [*names, *EXTRA_MODULES]:
        module = importlib.import_module(module_name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, JoinOperator) and cls.name and not inspect.isabstract(cls):
                found[cls.name] = cls
    return dict(sorted(found.items()))


def get_algorithm(name: str) -> type[JoinOperator]:
    algos = algorithms()
    if name not in algos:
        raise PlanError(f"unknown join algorithm {name!r}", hint=f"choose one of: {', '.join(algos)}")
    return algos[name]
