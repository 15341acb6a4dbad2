"""Client threads for the live suites' load under way (a request must never hang)."""
import threading


class Clients:
    """Client threads calling self.client() until finish(); each appends to self.results.
    A thread still running after `wait_s` means a request hung (the test fails)."""

    def __init__(self, clients: int, wait_s: float):
        self.results, self.wait_s, self.stop = [], wait_s, threading.Event()
        self.threads = [threading.Thread(target=self.client) for _ in range(clients)]
        for t in self.threads:
            t.start()

    def client(self):
        raise NotImplementedError

    def finish(self) -> list:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=self.wait_s)
        assert not any(t.is_alive() for t in self.threads), "a request hung"
        return self.results
