"""On-disk archives of results with variable lifetimes (Golab's thesis ch. 4): :class:`Archive`.

The names are imported on first use, so that :func:`slidewise.archive.memory.prepare`
can run before pyarrow is imported.
"""

from typing import Any

__all__ = ["VARIANTS", "Archive", "Layout"]


def __getattr__(name: str) -> Any:
    if name == "Archive":
        from slidewise.archive.index import Archive

        return Archive
    if name in ("VARIANTS", "Layout"):
        from slidewise.archive import layout

        return getattr(layout, name)
    raise AttributeError(f"module 'slidewise.archive' has no attribute {name!r}")
