"""Stdlib tests of the door to the engine (onepass/edge/door.py): its order, its shedding and
its waiters' ends, on a clock the test moves (the waiters are threads; each test waits for
their outcomes, never for time to pass).
Run: python3 -m unittest tests.unit.edge.test_door
"""
import json
import socket
import threading
import time
import unittest

from onepass import inflight
from onepass.edge.door import Door, paced
from onepass.edge.pace import Pace
from onepass.edge.slots import Slots
from onepass.errors import ClientClosed, DeadlineExceeded, Overloaded, ShuttingDown
from tests.support.fake_engine import FakeEngine
from tests.support.inprocess_shim import call, start_shim, stop_shim
from tests.support.systemone_bodies import NOUL_Q, req

WAIT_S = 5.0  # the longest a test waits for a thread (a failure, not a pace)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Entering(threading.Thread):
    """One request at the door: `outcome` is "go" once it may start, else what it raised."""

    def __init__(self, door, call=None):
        super().__init__(daemon=True)
        self.door, self.call, self.outcome = door, call, None
        self.started_at = threading.Event()

    def run(self):
        try:
            self.door.enter(self.call)
            self.outcome = "go"
        except Exception as e:  # noqa: BLE001: the test reads it
            self.outcome = e
        self.started_at.set()


class DoorTest(unittest.TestCase):
    def setUp(self):
        self.clock = Clock()
        self.expected = 0.0
        self.closed = None
        self.door = Door(2, target_s=0.5, interval_s=2.0, expected=lambda: self.expected,
                         closed=lambda: self.closed, clock=self.clock, poll_s=0.005)

    def arrive(self, call=None) -> Entering:
        """A waiter, once it has joined the queue (or come out of the door)."""
        call = call or inflight.Call("req_waiting")
        t = Entering(self.door, call)
        t.start()
        deadline = time.monotonic() + WAIT_S
        while not any(w.call is call for w in self.door.queue) and not t.started_at.is_set():
            self.assertLess(time.monotonic(), deadline, "the waiter never arrived")
            time.sleep(0.001)
        return t

    def outcome(self, t: Entering):
        self.assertTrue(t.started_at.wait(WAIT_S), "the waiter never came out")
        return t.outcome

    def fill(self) -> None:
        for _ in range(self.door.limit):
            self.assertEqual(self.outcome(self.arrive()), "go")

    def test_up_to_the_limit_start_at_once(self):
        self.fill()
        self.assertEqual(self.door.running, 2)
        t = self.arrive()
        self.assertIsNone(t.outcome)
        self.assertEqual(len(self.door.queue), 1)
        self.door.leave()
        self.assertEqual(self.outcome(t), "go")
        self.assertEqual(self.door.running, 2)

    def test_oldest_first_while_the_queue_drains(self):
        self.fill()
        first = self.arrive()
        self.clock.now += 0.1
        second = self.arrive()
        self.clock.now += 0.1  # queued 0.2 s: well within the interval, not standing
        self.assertFalse(self.door.standing(self.clock.now))
        self.door.leave()
        self.assertEqual(self.outcome(first), "go")
        self.assertIsNone(second.outcome)
        self.door.leave()
        self.assertEqual(self.outcome(second), "go")

    def test_an_address_past_its_share_of_the_places_goes_after_the_others(self):
        """Both places held by address A (its share of 2 is 1), A's older waiter and B's newer
        one queued (not standing, so oldest first would pick A's): a freed place goes to B,
        which runs none; then A's."""
        def from_(source):
            c = inflight.Call("req_" + source)
            c.source = source
            return c
        a1, a2, a3, b = from_("a"), from_("a"), from_("a"), from_("b")
        for c in (a1, a2):
            self.assertEqual(self.outcome(self.arrive(c)), "go")
        older = self.arrive(a3)
        self.clock.now += 0.1
        newer = self.arrive(b)
        self.door.leave(a1)
        self.assertEqual(self.outcome(newer), "go")
        self.assertIsNone(older.outcome)
        self.assertEqual(dict(self.door.by_source), {"a": 1, "b": 1})
        self.door.leave(a2)
        self.assertEqual(self.outcome(older), "go")

    def test_one_address_leaves_a_place_for_another(self):
        """With a spare place (the server's, when one address may hold more in flight than
        run), address A's many never run every place: B's first decision starts at once, with
        none of A's ended (the door never pre-empts, so a full door would make B wait for one
        of A's long decisions). With no spare (one address is every client), A takes all."""
        def from_(source):
            c = inflight.Call("req_" + source)
            c.source = source
            return c
        self.door = Door(4, target_s=0.5, interval_s=2.0, clock=self.clock, poll_s=0.005,
                         spare=1)
        a = [self.arrive(from_("a")) for _ in range(6)]
        self.assertEqual([self.outcome(t) for t in a[:3]], ["go"] * 3)
        self.assertEqual(self.door.running, 3)  # a waits though a place is free
        self.assertEqual(self.outcome(self.arrive(from_("b"))), "go")
        self.assertEqual(dict(self.door.by_source), {"a": 3, "b": 1})
        self.door = Door(4, target_s=0.5, interval_s=2.0, clock=self.clock, poll_s=0.005)
        self.assertEqual([self.outcome(self.arrive(from_("a"))) for _ in range(4)], ["go"] * 4)

    def test_newest_first_once_the_queue_stands(self):
        self.fill()
        first = self.arrive()
        self.clock.now += 1.95
        older = self.arrive()
        self.door.leave()  # not standing yet (1.95 s < the interval): the oldest goes
        self.assertEqual(self.outcome(first), "go")
        self.clock.now += 0.1  # the queue has not been empty for 2.05 s: standing
        newer = self.arrive()
        self.assertTrue(self.door.standing(self.clock.now))
        self.door.leave()
        self.assertEqual(self.outcome(newer), "go")
        self.assertIsNone(older.outcome)  # 0.1 s: within the target, it waits on
        self.clock.now += 0.5
        # past the target in a standing queue: refused, never started
        self.assertIsInstance(self.outcome(older), Overloaded)
        self.assertEqual(self.door.running, 2)

    def test_a_standing_queue_refuses_past_the_target(self):
        self.fill()
        old = self.arrive()
        self.clock.now += 1.9
        waiting = self.arrive()
        self.clock.now += 0.2  # standing now; `old` waited 2.1 s, `waiting` 0.2 s
        late = self.outcome(old)
        self.assertIsInstance(late, Overloaded)
        self.assertEqual(late.status, 529)
        self.assertGreaterEqual(late.retry_after_ms, 200)
        self.assertIn("standing", late.message)
        self.clock.now += 0.4  # 0.6 s: past the target
        self.assertIsInstance(self.outcome(waiting), Overloaded)
        self.assertEqual(self.door.queue, [])
        self.assertEqual(self.door.running, 2)  # nothing refused ever started

    def test_a_queue_that_drains_allows_the_interval(self):
        self.fill()
        t = self.arrive()
        self.clock.now += 1.5  # past the target, within the interval, never standing
        self.door.leave()
        self.assertEqual(self.outcome(t), "go")
        # the queue emptied: the next one waits up to the interval again
        u = self.arrive()
        self.clock.now += 1.9
        self.assertIsNone(u.outcome)
        self.clock.now += 0.2
        self.assertIsInstance(self.outcome(u), Overloaded)

    def test_a_client_gone_while_queued_leaves_and_never_starts(self):
        self.fill()
        call = inflight.Call("req_gone")
        gone = self.arrive(call)
        other = self.arrive()
        call.abandon()  # the watcher saw its client leave
        self.assertIsInstance(self.outcome(gone), ClientClosed)
        self.door.leave()  # the freed place goes to the one still there
        self.assertEqual(self.outcome(other), "go")
        self.assertEqual((self.door.running, self.door.queue), (2, []))

    def test_a_deadline_passing_while_queued_is_never_started(self):
        self.fill()
        call = inflight.Call("req_late", deadline=time.monotonic() + 0.05)
        t = self.arrive(call)
        self.assertIsInstance(self.outcome(t), DeadlineExceeded)
        self.assertEqual(self.door.running, 2)

    def test_a_deadline_sooner_than_the_expected_answer_is_refused_while_queued(self):
        # a Call's deadline is on time.monotonic: so is this door's clock (its waits are long)
        self.door = Door(2, target_s=60, interval_s=60, expected=lambda: self.expected,
                         poll_s=0.005)
        self.fill()
        self.expected = 3.0
        call = inflight.Call("req_short", deadline=time.monotonic() + 60)
        t = self.arrive(call)
        self.assertIsNone(t.outcome)  # 60 s left, 3 s expected: it waits
        call.deadline = time.monotonic() + 2.0  # less left than a decision takes now
        got = self.outcome(t)
        self.assertIsInstance(got, Overloaded)
        self.assertIn("deadline", got.message)
        self.assertEqual(self.door.running, 2)

    def test_the_drain_refuses_the_waiters_and_waits_for_the_running(self):
        slots = Slots(8, 8)
        self.closed = None
        for _ in range(3):
            self.assertIsNone(slots.take())
        self.fill()  # two of the three slots' requests run
        t = self.arrive()  # the third waits at the door
        drained = []
        drain = threading.Thread(target=lambda: drained.append(slots.close_and_wait(WAIT_S)))
        self.closed = ShuttingDown("draining", retry_after_ms=1000)  # what Service passes
        drain.start()
        self.assertIsInstance(self.outcome(t), ShuttingDown)
        slots.give()  # the waiter's handler gives its slot back
        self.assertEqual(self.door.running, 2)
        for _ in range(2):  # the running ones finish
            self.door.leave()
            slots.give()
        drain.join(WAIT_S)
        self.assertEqual(drained, [0])

    def test_a_wait_of_one_decisions_time_is_no_overload(self):
        """With decisions expected to take 3 s, the target is 3 s and the interval 6 s: a
        waiter 2.5 s in (past the settings' 2 s) still waits; past 6 s it is refused."""
        self.expected = 3.0
        self.assertEqual(self.door.waits(), (3.0, 6.0))
        self.fill()
        t = self.arrive()
        self.clock.now += 2.5
        self.door.leave()  # a sweep: it goes, not refused
        self.assertEqual(self.outcome(t), "go")
        late = self.arrive()
        self.clock.now += 6.1  # its own poll sweeps it
        self.assertIsInstance(self.outcome(late), Overloaded)

    def test_the_pace_sizes_how_many_run(self):
        """As many as finish in about the goal at the pace, within the cap, never below a
        quarter of it (one slow decision in the pace must not close the door on a burst)."""
        pace = Pace(clock=self.clock)
        door = Door(8, target_s=0.5, interval_s=2.0, clock=self.clock,
                    sized=paced(pace, goal_s=2.0))
        self.assertEqual(door.allowed(), 8)  # nothing answered yet: the cap
        with pace.timed():
            self.clock.now += 0.5  # one decision alone: 0.5 s of the engine each
        self.assertEqual(door.allowed(), 4)  # four beside each other finish in about 2 s
        self.door = door
        for _ in range(4):
            self.assertEqual(self.outcome(self.arrive()), "go")
        fifth = self.arrive()
        self.assertIsNone(fifth.outcome)  # waits, though the cap has room
        pace.share = 10.0  # a far slower engine: a quarter of the cap, 2
        self.assertEqual(door.allowed(), 2)
        self.assertEqual(paced(pace, goal_s=0)(), None)  # no goal: the cap alone
        for _ in range(2):
            door.leave()
        self.assertIsNone(fifth.outcome)  # two still running: the fifth waits
        door.leave()
        self.assertEqual(self.outcome(fifth), "go")

    def test_no_door_starts_every_one(self):
        door = Door(0, target_s=0.5, interval_s=2.0, clock=self.clock)
        for _ in range(100):
            door.enter()
        self.assertEqual((door.running, door.queue), (100, []))
        with door.entered():
            self.assertEqual(door.running, 101)
        self.assertEqual(door.running, 100)


class TestThroughTheEdge(unittest.TestCase):
    """A real shim before a slow stand-in engine, one decision at a time: the client of the
    queued one leaves, and its decision never reaches the engine."""

    def test_a_client_that_leaves_while_queued_costs_the_engine_nothing(self):
        engine = FakeEngine(delay_s=1.0)
        self.addCleanup(engine.stop)
        server = start_shim(engine.url, ONEPASS_MAX_RUNNING="1", ONEPASS_RUNNING_GOAL_S="0")
        self.addCleanup(stop_shim, server)
        service, body = server.service, json.dumps(req({"a": NOUL_Q})).encode()
        first = threading.Thread(target=call, args=(server,), kwargs={"body": body})
        first.start()  # holds the one place for its engine calls' second
        head = (f"POST /v1/systemone HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                f"application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        deadline = time.monotonic() + WAIT_S
        while service.door.running < 1:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        sock = socket.create_connection(server.server_address[:2])
        sock.sendall(head + body)
        while not service.door.queue:
            self.assertLess(time.monotonic(), deadline, "the second never queued")
            time.sleep(0.01)
        calls = sum(engine.calls.values())
        sock.close()  # its client leaves while it waits
        while service.door.queue:
            self.assertLess(time.monotonic(), deadline, "the gone client stayed queued")
            time.sleep(0.01)
        first.join(WAIT_S)
        self.assertEqual(service.door.running, 0)
        self.assertEqual(sum(engine.calls.values()), calls)  # it sent nothing to the engine


if __name__ == "__main__":
    unittest.main()
