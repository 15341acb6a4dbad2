"""A local TCP server for the stdlib tests that stand a socket in for vLLM (failure injection,
byte counting): a port on loopback, an accept loop on a daemon thread, `handle(conn)` per
connection (on the accept thread, or a thread of its own with `threaded`)."""
import socket
import threading


class LocalServer:
    threaded = False  # each connection on a thread of its own

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            if self.threaded:
                threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
            else:
                self.handle(conn)

    def handle(self, conn):
        raise NotImplementedError

    def close(self):
        self.sock.close()
