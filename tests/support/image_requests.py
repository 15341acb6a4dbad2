"""Images as the live suites send them: two small PNGs, a data URL, the TypeSafe SDK's multipart
body, and a local HTTP server's handler for image links (a PNG, a page, nothing else)."""
import base64
import json
from http.server import BaseHTTPRequestHandler

from onepass.backend.warmup import png

RED, BLUE = png(40, 30, (255, 0, 0)), png(40, 30, (0, 0, 255))


def url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def multipart(request_json: dict, files: dict, boundary="d6f56c2db99e474a9bdd48fa83fb62ab"):
    """The TypeSafe SDK's layout (wire contract 7.2): the JSON part, then one part per asset."""
    out = (f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
           f"Content-Type: application/json\r\n\r\n").encode() + json.dumps(request_json).encode()
    for name, data in files.items():
        out += (f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                f'filename="{name}"\r\nContent-Type: image/png\r\n\r\n').encode() + data
    return out + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


class Images(BaseHTTPRequestHandler):
    def do_GET(self):
        body, kind = {"/red.png": (RED, "image/png"), "/page": (b"<html>", "text/html")}.get(
            self.path, (b"", "text/plain"))
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass
