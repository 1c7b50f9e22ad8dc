"""On-disk archives of results with variable lifetimes (Golab's thesis ch. 4): :class:`Archive`."""

from slidewise.archive.index import Archive
from slidewise.archive.layout import VARIANTS, Layout

__all__ = ["VARIANTS", "Archive", "Layout"]
