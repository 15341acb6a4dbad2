"""The engine's threads shared by request, not by arrival (onepass/backend/fair_pool.py through
Engine.submit and Engine.map): one request never has more than its cap of calls running, a
second request's first call starts after at most one of the first's calls ends, not after its
whole queue, and a call made from an engine thread runs there (no wait for its own cap).
Counted, never timed: the calls block until the test lets them end, one at a time.
Run: python3 -S -m unittest tests.unit.backend.test_fair_pool
"""
import threading
import time
import unittest

from onepass.backend import wire
from onepass.backend.engine import Engine


class Calls:
    """Calls that block until released; what started, ended and ran at once, by request."""

    def __init__(self):
        self.lock, self.gate = threading.Lock(), threading.Semaphore(0)
        self.started, self.ended = [], []
        self.running, self.most = {}, {}

    def call(self, who: str) -> str:
        with self.lock:
            self.started.append((who, len(self.ended)))  # and how many had ended before it
            self.running[who] = self.running.get(who, 0) + 1
            self.most[who] = max(self.most.get(who, 0), self.running[who])
        self.gate.acquire()
        with self.lock:
            self.running[who] -= 1
            self.ended.append(who)
        return who

    def wait(self, predicate, limit_s: float = 30.0) -> None:
        end = time.monotonic() + limit_s  # a hang guard only: no assertion on time
        while not predicate():
            if time.monotonic() > end:
                raise AssertionError("the calls never got there")
            time.sleep(0.001)


def engine(threads: int, per_request: int) -> Engine:
    return Engine("http://127.0.0.1:9", "m", timeout_s=1, num_connections=threads,
                  calls_per_request=per_request)


def request_of(e: Engine, calls: Calls, who: str, n: int) -> list:
    """n calls submitted inside a request's context, as the pipeline makes them."""
    with e.request():
        return [e.submit(calls.call, who) for _ in range(n)]


class TestFairPool(unittest.TestCase):
    def test_a_request_holds_at_most_its_cap(self):
        """800 reads of one request on 32 threads: at most its cap (16) run at once, and the
        other request's first call starts with none of them ended."""
        e, calls = engine(32, 16), Calls()
        big = request_of(e, calls, "big", 800)
        calls.wait(lambda: len(calls.started) == 16)
        small = request_of(e, calls, "small", 1)
        calls.wait(lambda: ("small", 0) in calls.started)
        for _ in range(801):
            calls.gate.release()
        self.assertEqual([f.result() for f in big + small], ["big"] * 800 + ["small"])
        self.assertEqual(calls.most["big"], 16)
        e.close()

    def test_the_requests_take_turns(self):
        """With the cap at every thread, the second request's call still goes next: it starts
        once one of the first's calls ended, not after the first's 60."""
        e, calls = engine(4, 4), Calls()
        first = request_of(e, calls, "first", 60)
        calls.wait(lambda: len(calls.started) == 4)
        second = request_of(e, calls, "second", 2)
        calls.gate.release()
        calls.wait(lambda: any(who == "second" for who, _ in calls.started))
        starts = [ended for who, ended in calls.started if who == "second"]
        self.assertEqual(starts, [1])
        for _ in range(62):
            calls.gate.release()
        for f in first + second:
            f.result()
        self.assertEqual(calls.most["first"], 4)
        e.close()

    def test_a_call_from_an_engine_thread_runs_on_it(self):
        """A generation that counts its prompt (Engine.map inside a call) at a cap of one."""
        e = engine(2, 1)
        with e.request():
            outer = e.submit(lambda: e.map(lambda x: x * 2, [1, 2, 3]))
            self.assertEqual(outer.result(timeout=30), [2, 4, 6])
        e.close()

    def test_a_failure_drops_the_calls_not_started(self):
        """Engine.map's first failure cancels what has not started, as Executor.map's does."""
        e, ran, released = engine(1, 1), [], threading.Event()

        def one(x):
            ran.append(x)
            if x == 0:
                raise ValueError("boom")
            released.wait(30)  # the next call holds the one thread until map has failed
            return x
        with e.request(), self.assertRaises(ValueError):
            e.map(one, range(50))
        released.set()
        e.submit(lambda: None).result(timeout=30)  # the thread is past what was dropped
        self.assertIn(ran, ([0], [0, 1]))  # 1 only when it started before the failure was seen
        e.close()


if __name__ == "__main__":
    unittest.main()
