"""A small client of the ``slidewise serve`` API (the standard library's urllib: no extra needed).

>>> c = Client("http://127.0.0.1:8765")
>>> c.url
'http://127.0.0.1:8765'
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from slidewise.errors import ExecutionError, QueryError

__all__ = ["Client"]


class Client:
    """Calls of the API at ``url``; an error response raises :class:`QueryError` with the server's reason."""

    def __init__(self, url: str, timeout: float = 30.0):
        self.url, self.timeout = url.rstrip("/"), timeout

    def _call(self, method: str, path: str, body: dict | None = None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            try:
                reason = json.loads(e.read())["error"]
            except (ValueError, KeyError, TypeError):
                reason = e.reason
            raise QueryError(f"{method} {path}: {e.code} {reason}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ExecutionError(f"cannot reach {self.url}: {getattr(e, 'reason', e)}", hint="is `slidewise serve` running there?") from None

    def register(self, name: str, query: str, priority: int = 0) -> None:
        self._call("POST", "/queries", {"name": name, "query": query, "priority": priority})

    def remove(self, name: str) -> None:
        self._call("DELETE", f"/queries/{name}")

    def queries(self) -> list[dict]:
        return json.loads(self._call("GET", "/queries"))

    def results(self, name: str, after: int = 0) -> list[dict]:
        """Rows ``{"seq", "ts", "sign", "row"}`` answered after sequence number ``after``."""
        return [json.loads(line) for line in self._call("GET", f"/queries/{name}/results?after={int(after)}").splitlines() if line]

    def query(self, text: str) -> dict:
        """The one-time answer of ``text`` over the current windows: ``{"rows": [...], ...}``."""
        return json.loads(self._call("POST", "/query", {"query": text}))

    def stats(self) -> dict:
        return json.loads(self._call("GET", "/stats"))
