"""Reading Prometheus's text exposition format back (standard library): every sample line of a
/metrics page, each line's grammar checked."""
import re

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def samples(text: str) -> dict:
    """{name{labels}: value} of every sample line, checking each line's grammar."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out
