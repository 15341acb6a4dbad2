"""The engine's threads, shared fairly between requests: each request's calls wait in a lane of
their own, the threads take the lanes in turn (round robin), and one request has at most
`per_request` calls running, so a request of 800 reads holds some of the threads, not all, and
another request's first call starts after one call ends, not after all 800. A free thread
serves the lane with the fewest calls running.

Owns: the lanes (one per key: a request's; None for work outside a request, e.g. start-up),
the turn order, the cap per lane, and running a call submitted from an engine thread at once
on that thread (a generation that counts its prompt's tokens must not wait behind its own
request's cap: it would hold a place while waiting for one).
Never: knows what a call does, times anything or cancels a running call (Future.cancel drops
only calls not started, as Executor's do).
"""
from __future__ import annotations

import collections
import threading
from concurrent.futures import Future


class FairPool:
    def __init__(self, workers: int, per_request: int, name: str = "engine"):
        self.per_request = max(1, per_request)
        self._lanes: collections.OrderedDict = collections.OrderedDict()  # key -> deque of work
        self._running = collections.Counter()  # key -> its calls running
        self._cond = threading.Condition()
        self._closed = False
        self._local = threading.local()
        self.workers, self.name = workers, name
        self._threads, self._idle = 0, 0  # started as work comes, as an Executor's are

    def submit(self, key, fn, *args) -> Future:
        """A future of fn(*args), run when its lane's turn comes and the lane has a free place;
        from an engine thread, run at once on it."""
        future = Future()
        if getattr(self._local, "worker", False):
            _run(future, fn, args)
            return future
        with self._cond:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._lanes.setdefault(key, collections.deque()).append((future, fn, args))
            if not self._idle and self._threads < self.workers:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self.name}_{self._threads}",
                                 daemon=True).start()
            self._cond.notify()
        return future

    def running(self, key) -> int:
        with self._cond:
            return self._running[key]

    def _next(self):
        """From the lane with work waiting and the fewest calls running (below the cap; the
        first in turn order among equals), its oldest call; the lane then goes to the back of
        the turn order. None when no lane may start one."""
        free = [k for k in self._lanes if self._running[k] < self.per_request]
        if not free:
            return None
        key = min(free, key=lambda k: self._running[k])  # min keeps the first of equals
        queue = self._lanes[key]
        item = queue.popleft()
        if queue:
            self._lanes.move_to_end(key)
        else:
            del self._lanes[key]
        self._running[key] += 1
        return key, item

    def _work(self) -> None:
        self._local.worker = True
        while True:
            with self._cond:
                picked = self._next()
                while picked is None and not self._closed:
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                    picked = self._next()
                if picked is None:
                    return
            key, (future, fn, args) = picked
            try:
                _run(future, fn, args)
            finally:
                with self._cond:
                    self._running[key] -= 1
                    if not self._running[key]:
                        del self._running[key]
                    self._cond.notify_all()  # a lane at its cap may go again

    def shutdown(self) -> None:
        """No new work; the waiting work is cancelled, the running work ends on its own."""
        with self._cond:
            self._closed = True
            for queue in self._lanes.values():
                for future, _, _ in queue:
                    future.cancel()
            self._lanes.clear()
            self._cond.notify_all()


def _run(future: Future, fn, args) -> None:
    if not future.set_running_or_notify_cancel():
        return  # cancelled while it waited
    try:
        future.set_result(fn(*args))
    except BaseException as e:  # the caller's result() raises it, as an Executor's does
        future.set_exception(e)
