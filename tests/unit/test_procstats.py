"""procstats.py: the process's own series read from /proc, os and resource (standard library),
and what is left when /proc is absent."""
import os
import resource
import tempfile
import time
import unittest
from unittest import mock

from onepass import procstats
from onepass.metrics import Registry
from tests.support.prometheus_text import samples


def scrape() -> dict:
    r = Registry()
    procstats.register(r)
    return samples(r.render())


class TestProcess(unittest.TestCase):
    def test_values_follow_the_process(self):
        before = scrape()
        with open(__file__, encoding="utf-8"), open(os.devnull, encoding="utf-8"):
            during = scrape()
        self.assertEqual(during["process_open_fds"] - before["process_open_fds"], 2)
        end = time.process_time() + 0.2
        while time.process_time() < end:  # burn CPU time the counter must show
            pass
        after = scrape()
        self.assertGreaterEqual(after["process_cpu_seconds_total"]
                                - before["process_cpu_seconds_total"], 0.15)
        # the peak resident size (kB on Linux, updated a little behind VmRSS) bounds it above
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        self.assertTrue(1 << 20 < after["process_resident_memory_bytes"] <= 1.25 * peak + (1 << 20))
        self.assertGreater(after["process_virtual_memory_bytes"],
                           after["process_resident_memory_bytes"])
        self.assertEqual(after["process_max_fds"],
                         resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        started = after["process_start_time_seconds"]
        self.assertTrue(time.time() - 3600 < started <= procstats.IMPORTED_AT + 1, started)

    def test_start_time_from_a_command_name_with_spaces_and_parentheses(self):
        with tempfile.TemporaryDirectory() as proc:
            os.mkdir(f"{proc}/self")
            fields = ["S"] + ["0"] * 18 + ["500"]  # state, then fields 4-21, then starttime
            with open(f"{proc}/self/stat", "w", encoding="ascii") as f:
                f.write("4242 (py (x) y) " + " ".join(fields) + " 0 0\n")
            with open(f"{proc}/stat", "w", encoding="ascii") as f:
                f.write("cpu  1 2 3\nbtime 1700000000\n")
            with mock.patch.object(procstats, "PROC", proc):
                got = procstats.start_time()
        self.assertEqual(got, {(): 1700000000 + 500 / os.sysconf("SC_CLK_TCK")})

    def test_without_proc(self):
        """No /proc: memory is left out, never guessed; the rest still comes from os and
        resource, and nothing raises."""
        with mock.patch.object(procstats, "PROC", "/nonexistent-proc"):
            got = scrape()
        self.assertNotIn("process_resident_memory_bytes", got)
        self.assertNotIn("process_virtual_memory_bytes", got)
        self.assertGreater(got["process_cpu_seconds_total"], 0)
        self.assertEqual(got["process_start_time_seconds"], procstats.IMPORTED_AT)
        self.assertGreater(got["process_open_fds"], 0)  # /dev/fd where the system has it


if __name__ == "__main__":
    unittest.main()
