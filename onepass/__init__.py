"""onepass: System One decisions from one forward pass on vLLM (standard library only).

The request path, in order: pipeline.Pipeline.decide, one line per step, each a call into the
module named for it (each line is marked with a step comment, and tests/live/test_core_live.py
checks the run order):
  parse     body.py decodes the body; the route's api/ adapter checks it into a Request
  resolve   resolve.py: the model name, attention mode, kwargs.layout / .calibration /
            .reasoning, once, into the Decision
  images    images/ fetches links and checks every image's bytes
  fit       fit.py: each kind plans its calls, the work budget counts them (work.py), and the
            label reads are laid out (prompt/, each kind's lines) and fitted to the context
  reads     reads.py: the label log-probs from vLLM (backend/engine.py), concurrently
  readout   readout.py turns them into option probabilities (temperature, prior, shrink, the
            kind's own step)
  reread    reread.py: uncertain questions of kinds that re-read are read again, blended 2:1;
            the reads' Outcome
  think     think.py: with kwargs.reasoning (or the profile's default) the gated questions write
            a bounded thought and are read again after it, blended 1:1 (reasoning.py)
  generate  generate.py: the planned generations (box and number answers) under vLLM's
            structured outputs, at once; each kind combines its reads and generation
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
