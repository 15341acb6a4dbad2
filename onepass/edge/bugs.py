"""Logging a bug without the request in it: an exception's message may quote client input (a
value that failed to parse, a fragment of the body), so only its type and where it was raised
reach the log.

Owns: the one way the edge logs an unexpected exception.
Never: logs an exception's message, arguments or locals.
"""
from __future__ import annotations

import sys
import traceback


def log_bug(log, what: str, *args) -> None:
    """Log the exception being handled as `what % args`, its type and its frames, never its
    message (nor those of the exceptions chained to it)."""
    error = sys.exc_info()[1]
    if error is None:
        log.error(what, *args)
        return
    frames = "".join(traceback.format_tb(error.__traceback__))
    log.error(what + " (%s; message withheld: it may quote the request)\n%s", *args,
              type(error).__name__, frames.rstrip())
