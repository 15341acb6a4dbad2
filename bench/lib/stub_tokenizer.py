"""A stand-in for vLLM's /tokenize, for bench/measure/fitting_cost.py only: words, punctuation
and token-shaped added tokens (`<|...|>`, `<...>`) as one token each, so an added token splits a
text as a real tokenizer's does. Listens on a free loopback port, prints its URL, serves until
killed. Never used for an answer.
"""
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PIECE = re.compile(r"<[^<>\s]{1,64}>|\w+|[^\w\s]")
IDS: dict = {}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with LOCK:
            tokens = [IDS.setdefault(p, len(IDS)) for p in PIECE.findall(body.get("prompt", ""))]
        raw = json.dumps({"tokens": tokens}).encode()
        self.send_response(200)
        for name, value in (("Content-Type", "application/json"), ("Content-Length", len(raw))):
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):  # quiet: the bench prints its own figures
        pass


class Server(ThreadingHTTPServer):
    request_queue_size = 256  # the shim opens up to --engine-connections at once


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
