"""Stdlib-only tests of the open-connection table (onepass/edge/conn_table.py): a newcomer past
the cap closes the connection idle the longest, else the one reading its request the longest,
never one being answered (then the newcomer is refused); one source's cap and share (it is
refused past its cap, and closes only its own connections or those of a source holding more);
and waiting for quiet. The sockets are stand-ins that record their shutdown. Over real sockets:
test_security.py.
Run: python3 -S -m unittest tests.unit.edge.test_conn_table
"""
import socket
import time
import unittest
from unittest import mock

from onepass import telemetry
from onepass.edge import conn_table
from onepass.edge.conn_table import IDLE, READING, WORKING, Table


class Sock:
    """Records shutdown(how) calls; hashable by identity, as a socket is."""

    def __init__(self, name):
        self.name, self.shut = name, []

    def shutdown(self, how):
        self.shut.append(how)


def table(*states):
    """A Table at its cap of len(states), connection i in states[i], opened i seconds ago less."""
    t, now = Table(len(states)), time.monotonic()
    socks = [Sock(i) for i in range(len(states))]
    for i, (sock, state) in enumerate(zip(socks, states)):
        conn = t.add(sock)
        conn.state, conn.since = state, now - 100 + i
    return t, socks


class TestEviction(unittest.TestCase):
    def test_the_longest_idle_goes_first(self):
        """add: past the cap the oldest idle connection is shut for reading and dropped."""
        t, socks = table(READING, IDLE, IDLE, WORKING)
        new = Sock("new")
        self.assertIsNotNone(t.add(new))
        self.assertEqual(socks[1].shut, [socket.SHUT_RD])
        self.assertEqual([s.shut for s in (socks[0], socks[2], socks[3])], [[], [], []])
        self.assertNotIn(socks[1], t.open)
        self.assertIn(new, t.open)

    def test_then_the_longest_reading(self):
        """add: with no idle connection, the one reading the longest is evicted and marked."""
        t, socks = table(WORKING, READING, READING)
        victim = t.open[socks[1]]
        t.add(Sock("new"))
        self.assertTrue(victim.evicted)
        self.assertEqual(socks[1].shut, [socket.SHUT_RD])

    def test_connections_being_answered_are_never_closed(self):
        """add: every connection working: the newcomer gets None and no one is shut."""
        t, socks = table(WORKING, WORKING)
        self.assertIsNone(t.add(Sock("new")))
        self.assertEqual([s.shut for s in socks], [[], []])
        t.remove(socks[0])
        self.assertIsNotNone(t.add(Sock("later")))

    def test_a_new_connection_starts_idle(self):
        """Conn: added idle, now; set() moves its state and clock."""
        conn = Table(1).add(Sock("a"))
        self.assertEqual(conn.state, IDLE)
        before = conn.since
        conn.set(READING)
        self.assertEqual(conn.state, READING)
        self.assertGreaterEqual(conn.since, before)


class TestSources(unittest.TestCase):
    def test_a_source_past_its_cap_is_refused_and_others_are_not(self):
        """add: a source holding its cap gets None (at_cap says why), nobody is shut, and
        another source still gets in."""
        t = Table(8, per_source=2)
        a = [Sock(f"a{i}") for i in range(3)]
        self.assertIsNotNone(t.add(a[0], "10.0.0.1"))
        self.assertIsNotNone(t.add(a[1], "10.0.0.1"))
        self.assertIsNone(t.add(a[2], "10.0.0.1"))
        self.assertTrue(t.at_cap("10.0.0.1"))
        self.assertFalse(t.at_cap("10.0.0.2"))
        self.assertIsNotNone(t.add(Sock("b"), "10.0.0.2"))
        self.assertEqual([s.shut for s in a], [[], [], []])
        t.remove(a[0])
        self.assertIsNotNone(t.add(a[2], "10.0.0.1"))  # a closed one frees its place

    def test_a_refusal_past_a_sources_cap_is_counted_and_logged_at_most_every_10_s(self):
        """refusal: past a source's cap a 503 (SourceOverCap), counted in
        onepass_source_cap_refusals_total, one warning line naming the source per 10 s."""
        t = Table(8, per_source=1)
        t.add(Sock("a"), "10.0.0.9")
        before = telemetry.SOURCE_CAPPED.series.get((), 0)
        with self.assertLogs("onepass", "WARNING") as logs:
            errors = [t.refusal("10.0.0.9") for _ in range(3)]
        self.assertEqual({e.status for e in errors}, {503})
        self.assertEqual(telemetry.SOURCE_CAPPED.series.get((), 0) - before, 3)
        self.assertEqual(len(logs.output), 1)
        self.assertIn("10.0.0.9", logs.output[0])

    def test_a_flood_never_closes_a_smaller_sources_keepalive(self):
        """add: table full, one source under its cap floods: it closes its own connections,
        never the idle keep-alive of a source holding fewer, though that one is the oldest."""
        t, now = Table(4, per_source=4), time.monotonic()
        keepalive = Sock("b")
        t.add(keepalive, "10.0.0.2").since = now - 100
        for i in range(3):
            t.add(Sock(f"a{i}"), "10.0.0.1").since = now - 50 + i
        for i in range(20):
            self.assertIsNotNone(t.add(Sock(f"flood{i}"), "10.0.0.1"), i)
        self.assertEqual(keepalive.shut, [])
        self.assertIn(keepalive, t.open)
        self.assertEqual(len(t.open), 4)

    def test_a_newcomer_takes_from_the_source_holding_the_most(self):
        """add: a new source closes the longest-idle connection of the source holding the most,
        not the oldest idle one of a source with a single connection."""
        t, now = Table(4), time.monotonic()
        keepalive, hog = Sock("b"), [Sock(f"a{i}") for i in range(3)]
        t.add(keepalive, "10.0.0.2").since = now - 100
        for i, sock in enumerate(hog):
            t.add(sock, "10.0.0.1").since = now - 50 + i
        self.assertIsNotNone(t.add(Sock("c"), "10.0.0.3"))
        self.assertEqual((keepalive.shut, hog[0].shut), ([], [socket.SHUT_RD]))

    def test_a_source_that_cannot_make_room_is_refused(self):
        """add: every connection it may close is being answered: None, and no one is shut."""
        t = Table(2, per_source=2)
        t.add(Sock("b"), "10.0.0.2")
        t.add(Sock("a"), "10.0.0.1").state = WORKING
        self.assertIsNone(t.add(Sock("a2"), "10.0.0.1"))
        self.assertFalse(t.at_cap("10.0.0.1"))

    def test_the_cap_defaults_to_a_quarter_and_at_least_16(self):
        """source_cap: 0 asks for a quarter of the table, at least 16 and at most all of it;
        a set value is kept up to the table's size."""
        self.assertEqual([conn_table.source_cap(n, 0) for n in (256, 40, 8, 1)], [64, 16, 8, 1])
        self.assertEqual([conn_table.source_cap(256, n) for n in (10, 300)], [10, 256])
        self.assertEqual(Table(256).per_source, 64)


class TestProxied(unittest.TestCase):
    """A trusted proxy's connections (add with capped=False) and the clients it names (move)."""

    def test_a_trusted_proxy_is_not_capped_as_one_address(self):
        """add: uncapped past the source's cap; its refusal when the table is full is the 529
        for a full table, never the 503 naming its address's cap."""
        t = Table(4, per_source=2)
        for i in range(4):
            t.add(Sock(f"p{i}"), "10.0.0.1", capped=False).state = WORKING
        self.assertIsNone(t.add(Sock("p4"), "10.0.0.1", capped=False))  # full, none to close
        self.assertEqual(t.refusal("10.0.0.1", capped=False).status, 529)

    def test_a_connection_moves_to_its_client_within_the_clients_cap(self):
        """move: the count goes from the proxy to the client named; a client at its cap is
        refused (False) and the connection stays the proxy's; moving back is never capped."""
        t = Table(8, per_source=2)
        socks = [Sock(f"p{i}") for i in range(3)]
        for sock in socks:
            t.add(sock, "10.0.0.1", capped=False)
        self.assertTrue(t.move(socks[0], "203.0.113.7"))
        self.assertTrue(t.move(socks[1], "203.0.113.7"))
        self.assertFalse(t.move(socks[2], "203.0.113.7"))
        self.assertEqual((t.held["203.0.113.7"], t.held["10.0.0.1"]), (2, 1))
        self.assertEqual((t.open[socks[0]].source, t.open[socks[2]].source),
                         ("203.0.113.7", "10.0.0.1"))
        self.assertTrue(t.move(socks[0], "10.0.0.1", capped=False))
        self.assertEqual((t.held["203.0.113.7"], t.held["10.0.0.1"]), (1, 2))
        t.remove(socks[1])
        self.assertNotIn("203.0.113.7", t.held)
        self.assertTrue(t.move(socks[1], "203.0.113.8"))  # closed already: nothing to count
        self.assertNotIn("203.0.113.8", t.held)


class TestQuiet(unittest.TestCase):
    def test_quiet_returns_at_once_when_all_idle_long_enough(self):
        """wait_quiet: only idle connections older than quiet_s: no wait."""
        t, _ = table(IDLE, IDLE)
        with mock.patch.object(conn_table, "time", wraps=time) as clock:
            t.wait_quiet(1.0, 5.0)
        self.assertEqual(clock.sleep.call_count, 0)  # returned at its first look

    def test_quiet_waits_out_a_request_under_way(self):
        """wait_quiet: a reading connection holds it until the timeout."""
        t, _ = table(IDLE, READING)
        now = [time.monotonic()]  # a clock that moves only by the polls' sleeps
        with mock.patch.object(conn_table, "time", wraps=time) as clock:
            clock.monotonic.side_effect = lambda: now[0]
            clock.sleep.side_effect = lambda s: now.__setitem__(0, now[0] + s)
            t.wait_quiet(0.0, 0.2)
        # looked again until the timeout: 0.2 s of 0.02 s polls, never quiet
        self.assertGreaterEqual(clock.sleep.call_count, 10)

    def test_descriptors_are_left_when_they_suffice(self):
        """fit_descriptors: a cap the soft limit already covers is kept as asked."""
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < 10 + 2 + conn_table.FD_RESERVE:
            self.skipTest("the soft descriptor limit is below what this case assumes")
        self.assertEqual(conn_table.fit_descriptors(10, 2), 10)
        self.assertEqual(resource.getrlimit(resource.RLIMIT_NOFILE)[0], soft)


if __name__ == "__main__":
    unittest.main()
