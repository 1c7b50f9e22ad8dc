"""A one-line live progress display on stderr (rich), off when not a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """Shows rows read, results and rejects with the current rate, at most 10 times a second."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled and sys.stderr.isatty()
        self._last = 0.0
        self._start = time.perf_counter()
        self._live = None
        if self.enabled:
            from rich.console import Console
            from rich.live import Live

            self._live = Live("", console=Console(stderr=True), refresh_per_second=10, transient=True)
            self._live.start()

    def update(self, rows: int, results: int, rejects: int) -> None:
        if not self._live:
            return
        now = time.perf_counter()
        if now - self._last < 0.1:
            return
        self._last = now
        rate = rows / max(now - self._start, 1e-9)
        self._live.update(f"[bold]slidewise[/] rows {rows:,}  results {results:,}  rejects {rejects:,}  {rate:,.0f} rows/s")

    def close(self) -> None:
        if self._live:
            self._live.stop()
            self._live = None
