"""onepass: System One decisions from one forward pass on vLLM (standard library only).

The request path, in order (server.Service.handle, then pipeline.Pipeline.decide; each step's
line is marked with a step comment, and tests/live/test_core_live.py checks the run order):
  parse     body.py decodes the body; the route's api/ adapter checks it into a Request
  resolve   the model name, attention mode, kwargs.layout / .calibration / .reasoning, once
  images    images/ fetches links and checks every image's bytes
  fit       each kind plans its calls (parts.py); prompt/ frames each read (its kind's lines,
            kinds/) and fits its state to the context (reader.py)
  reads     backend/engine reads the label log-probs from vLLM, concurrently
  readout   readout turns them into option probabilities (temperature, prior, shrink, the kind's
            own step) and each kind's answer
  reread    uncertain questions of kinds that re-read are read again, blended 2:1 (answering.py)
  think     with kwargs.reasoning (or the profile's default): the gated questions write a
            bounded thought and are read again after it, blended 1:1 (think.py, reasoning.py)
  generate  the planned generations (box and number answers) run under vLLM's structured
            outputs, at once, and each kind combines its reads and generation (parts.py)
  render    the adapter renders the answers in its API's shape
Before it: edge/ (framing: strict HTTP/1.1; connections + conn_table: the connection loop, cap,
deadlines and drain; admission: keys and in-flight slots) and server.Service.admit (route, key,
readiness). Around it: config + profile (settings and profiles), decision (the data model),
errors (the catalogue), kinds/ (one unit per question kind, one registry), backend/probes
(start-up guard: the engine Facts), backend/warmup (warm-up bodies), server (routes, health,
the error renderer), metrics + telemetry (/metrics, counted outside the path, and the JSON
access log), openapi/ (/openapi.json). docs/architecture.md walks through it.
"""
__version__ = "0.1.0"  # reported by onepass_build_info; bump it when a build is released
STEPS = ("parse", "resolve", "images", "fit", "reads", "readout", "reread", "think", "generate",
         "render")
