#!/usr/bin/env python3
"""onepass shim entry point: python3 shim.py [--config serve_config.json] [--vllm URL] [--port N]

Standard library only. Reads the configuration, binds the port, warms up in the background
(/health answers 503 until every question type has been answered), serves until SIGTERM/SIGINT,
then drains: new requests get 503, those in flight finish (--drain-timeout-s), then it exits.
No ONEPASS_API_KEY on an address other than loopback is a bad configuration unless
--allow-no-key says so; --check-config judges the configuration and exits.
Exit codes: 0 clean stop (or a configuration that passed --check-config), 3 bad configuration,
4 port unavailable.
"""
import ctypes
import logging
import os
import signal
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# `python3 -I -S shim.py` (isolated: no PYTHONPATH, no user site, no script directory on the
# path) is the safe way to start a stdlib program; the package sits beside this file.
sys.path.insert(0, str(ROOT))

from onepass import config  # noqa: E402
from onepass.edge.connections import Server  # noqa: E402
from onepass.server import READY, Service  # noqa: E402


M_MMAP_THRESHOLD, LARGE_BLOCK = -3, 1 << 20


def give_back_large_blocks() -> None:
    """glibc raises its mmap threshold to the largest block freed (up to 32 MiB), then keeps
    such blocks in its per-thread arenas: after a burst of large bodies the shim would hold
    hundreds of MiB it no longer uses. A fixed 1 MiB threshold returns every larger block to
    the system when it is freed (bench/measure/hostile_clients.py)."""
    try:
        ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK)
    except (OSError, AttributeError):
        pass  # not glibc: its allocator has its own rules


def main(argv=None) -> int:
    give_back_large_blocks()
    try:
        settings = config.load(argv)
    except config.ConfigError as e:
        print(f"onepass: bad configuration: {e}", file=sys.stderr)
        return config.EXIT_BAD_CONFIG
    if config.parse_args(argv).check_config:
        return 0
    logging.basicConfig(level=settings.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s onepass %(levelname)s %(message)s")
    access = logging.StreamHandler(sys.stderr)  # the access log: one bare JSON line a request
    access.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("onepass.access").addHandler(access)
    logging.getLogger("onepass.access").propagate = False
    service = Service(settings, ROOT)
    try:
        server = Server(service)
    except OSError as e:
        logging.error("cannot listen on %s:%s: %s", settings.host, settings.port, e)
        return 4
    host, port = server.server_address[:2]

    def stop(*_):  # the first signal drains, a second one stops at once
        now = server.draining.is_set()
        threading.Thread(target=server.shutdown if now else server.drain, daemon=True).start()
    # before the line that says it listens: a supervisor may signal as soon as it reads it
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.info("listening on http://%s:%d (vLLM %s, profile %s, auth %s)", host, port,
                 settings.vllm, settings.profile, "on" if settings.api_key else "off")
    if not settings.api_key and not service.loopback:
        logging.warning("auth is off on %s (--allow-no-key): whatever reaches this address may "
                        "use the model, read /metrics and make this server fetch image links",
                        host)
    threading.Thread(target=service.warm_up, name="warm-up", daemon=True).start()
    service.heartbeat.start(lambda: service.phase == READY)  # vLLM asked only once ready
    server.serve_forever()
    server.server_close()
    service.heartbeat.close()
    service.engine.close()
    logging.info("stopped")
    return 0


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: the interpreter would join the engine's worker threads, and a vLLM call
    # still running after a timed-out drain would hold the exit for up to its own timeout.
    os._exit(code)
