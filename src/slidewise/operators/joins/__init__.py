"""Multi-way sliding-window join operators, one module per algorithm: the registry.

Every concrete :class:`~slidewise.operators.joins.base.JoinOperator` subclass
with a ``name`` in a module of this package is registered automatically;
:func:`register` adds one from elsewhere (and :func:`unregister` removes it).
``--algorithm NAME`` selects one. Each class carries its facts (see
:mod:`~slidewise.operators.joins.base`); the planner, the cost model, explain
and the oracle tests read them from here. See ``README.md`` in this folder for
the list and how the planner chooses.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from slidewise.errors import PlanError
from slidewise.operators.joins.base import JoinOperator, ResultBuilder

__all__ = ["MODES", "JoinOperator", "ResultBuilder", "algorithms", "by_rank", "get_algorithm", "mode_of", "register", "unregister"]

#: the default algorithm: the columnar batch equi-join
DEFAULT = "columnar"
#: operators outside this package that the engine hosts like joins
EXTRA_MODULES = ("slidewise.operators.select",)
#: evaluation modes, the keys of the ``preference`` and ``compared`` facts
MODES = ("eager", "lazy")

_registry: dict[str, type[JoinOperator]] = {}


def _discover() -> None:
    names = [f"{__name__}.{i.name}" for i in pkgutil.iter_modules(__path__) if i.name != "base"]
    for module_name in [*names, *EXTRA_MODULES]:
        module = importlib.import_module(module_name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, JoinOperator) and cls.name and not inspect.isabstract(cls):
                _registry.setdefault(cls.name, cls)


def algorithms() -> dict[str, type[JoinOperator]]:
    """All registered join algorithms by name."""
    if not _registry:
        _discover()
    return dict(sorted(_registry.items()))


def register(cls: type[JoinOperator]) -> type[JoinOperator]:
    """Register ``cls`` under its ``name`` (usable as a class decorator); a name is taken once."""
    if not cls.name or inspect.isabstract(cls):
        raise PlanError(f"{cls.__name__} cannot be registered: it needs a name and every abstract method")
    known = algorithms()
    if known.get(cls.name, cls) is not cls:
        raise PlanError(f"join algorithm {cls.name!r} is already registered", hint="pick another name or unregister the old one")
    _registry[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a registered algorithm (no-op if unknown)."""
    algorithms()
    _registry.pop(name, None)


def get_algorithm(name: str) -> type[JoinOperator]:
    algos = algorithms()
    if name not in algos:
        raise PlanError(f"unknown join algorithm {name!r}", hint=f"choose one of: {', '.join(algos)}")
    return algos[name]


def mode_of(slide: int | None) -> str:
    """``"lazy"`` for a query with SLIDE, else ``"eager"``."""
    return "lazy" if slide else "eager"


def by_rank(fact: str, mode: str) -> list[type[JoinOperator]]:
    """Registered algorithms with a rank in ``mode`` under ``fact`` (``preference`` or ``compared``), in rank order."""
    ranked = [(getattr(cls, fact)[mode], name, cls) for name, cls in algorithms().items() if mode in getattr(cls, fact)]
    return [cls for _, _, cls in sorted(ranked, key=lambda e: (e[0], e[1]))]
