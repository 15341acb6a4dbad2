"""One JSON request over HTTP (standard library), for the live suites and the benches that
reuse their helpers: the body sent as JSON, the answer read as JSON."""
import http.client
import json


def request(base, method, path, body=None, headers=None, timeout=120):
    """(status, headers with lower-case names, the JSON answer) of `method path` at `base`
    (http://host:port); a dict or list body goes as JSON, bytes as they are."""
    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    payload = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    hdrs = {"Content-Type": "application/json"} if payload is not None else {}
    hdrs.update(headers or {})
    conn.request(method, path, body=payload, headers=hdrs)
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, json.loads(raw)
