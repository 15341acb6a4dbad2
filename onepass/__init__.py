"""onepass: System One decisions from one forward pass on vLLM (standard library only).

The request path: pipeline.Pipeline.decide runs pipeline.STEPS in order, ten functions
`step(record) -> record`, one module each under steps/ (parse, resolve, images, fit, read,
readout, reread, think, generate, render); steps/record.py's Record is the one shape they pass
on. docs/architecture.md shows what the record holds after each step.
Before it: edge/ (framing: strict HTTP/1.1; connections + conn_table: the connection loop, cap,
deadlines and drain; admission: keys and in-flight slots) and server.Service.admit (route, key,
readiness). Around it: config + profile (settings and profiles), decision_model (the data model),
errors (the catalogue), kinds/ (one unit per question kind, one registry), backend/probes
(start-up guard: the engine Facts), backend/warmup (warm-up bodies), server (routes, health,
the error renderer), metrics + telemetry (/metrics, counted outside the path, and the JSON
access log), openapi/ (/openapi.json). docs/architecture.md walks through it.
"""
__version__ = "0.1.0"  # reported by onepass_build_info; bump it when a build is released
