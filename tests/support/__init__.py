"""What the test suites share, imported as a library (`from tests.support.X import ...`): the
processes and HTTP helpers, the stand-in engine, the shared request bodies and the one way unit
tests build a Decision. No tests live here (no file is named test_*.py), and no test module is
ever imported by another."""
