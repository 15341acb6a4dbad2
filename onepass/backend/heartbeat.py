"""vLLM's heartbeat: once the shim is ready, GET vLLM's /health every `interval_s`, and the reason
vLLM is unresponsive when a probe is not answered 200 within `bound_s` (None while it answers).

Owns: the probe (a connection of its own per probe, with vLLM's key as every call; never
counted as an engine error, so a stalled engine does not also look like failing requests) and
its thread. server.Service turns `reason` into /health 503 `unresponsive`, so a
balancer or readiness probe takes a hung-but-living vLLM out until it answers again.
Never: judges requests or touches the pooled connections decisions use (a probe waits on no
decision's connection, and none waits on it).
In: vLLM's base URL, the interval and the bound. Out: `reason`.
"""
from __future__ import annotations

import http.client
import logging
import threading
import urllib.parse
from typing import Callable

log = logging.getLogger("onepass")


class Heartbeat:
    def __init__(self, base_url: str, interval_s: float, bound_s: float, key: str = ""):
        url = urllib.parse.urlsplit(base_url)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.path = url.path.rstrip("/") + "/health"
        self.interval_s, self.bound_s = interval_s, bound_s
        self.auth = {"Authorization": f"Bearer {key}"} if key else {}  # never logged
        self.reason: str | None = None  # why vLLM counts as unresponsive now; None: it answers
        self.probes = 0  # probes sent (the tests count them)
        self._stop = threading.Event()

    def probe(self) -> str | None:
        """One GET /health: None when vLLM answers 200 within the bound, else why not."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.bound_s)
        self.probes += 1
        try:
            conn.request("GET", self.path, headers=self.auth)
            status = conn.getresponse().status
        except TimeoutError:
            return (f"vLLM did not answer GET /health within {self.bound_s:g} s "
                    "(ONEPASS_ENGINE_PROBE_BOUND_S): hung, stopped or overwhelmed")
        except (OSError, http.client.HTTPException) as e:
            return f"vLLM's GET /health failed ({type(e).__name__}: {e})"
        finally:
            conn.close()
        return None if status == 200 else f"vLLM answered GET /health with HTTP {status}"

    def beat(self) -> None:
        """Probe once and keep the result; a change of state is logged once."""
        reason = self.probe()
        if reason and not self.reason:
            log.warning("vLLM unresponsive, /health 503 until it answers again: %s", reason)
        elif self.reason and not reason:
            log.info("vLLM answers again, /health 200: it was unresponsive (%s)", self.reason)
        self.reason = reason

    def start(self, active: Callable[[], bool]) -> None:
        """Probe every interval while `active()` (the shim is ready), in a daemon thread."""
        def run():
            while not self._stop.wait(self.interval_s):
                if active():
                    self.beat()
        threading.Thread(target=run, name="heartbeat", daemon=True).start()

    def close(self) -> None:
        self._stop.set()
