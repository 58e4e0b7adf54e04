"""A token bucket per API key: ``rate`` requests a second, ``burst`` at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from memstore.errors import RateLimitedError

# Buckets kept at most; the least recently used is dropped (it refills anyway).
MAX_BUCKETS = 10_000


class RateLimiter:
    """Admit or refuse one request of a key; ``rate <= 0`` admits everything."""

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[int, tuple[float, float]] = {}  # key id -> (tokens, at)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def admit(self, key_id: int) -> None:
        """Take one token of ``key_id``'s bucket, or raise
        :class:`~memstore.errors.RateLimitedError` with the seconds until one is free."""
        if not self.enabled:
            return
        now = self._clock()
        with self._lock:
            tokens, at = self._buckets.pop(key_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens < 1.0:
                self._buckets[key_id] = (tokens, now)
                wait = (1.0 - tokens) / self.rate
                raise RateLimitedError(
                    f"this API key may send {self.rate:g} requests a second"
                    f" (bursts of {self.burst}); retry in {wait:.2f} s",
                    retry_after=wait,
                )
            self._buckets[key_id] = (tokens - 1.0, now)  # re-inserted: most recent last
            while len(self._buckets) > MAX_BUCKETS:
                del self._buckets[next(iter(self._buckets))]


__all__ = ["RateLimiter"]
