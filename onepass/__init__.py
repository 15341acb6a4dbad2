"""onepass: System One decisions from one forward pass on vLLM (standard library only).

The request path, in order (server.Service.decide):
  transport   body off the wire: size limits, gzip/zstd, strict JSON
  systemone   the /v1/systemone adapter: validate, build the internal Decision
  layout      one Read per question: chat prompt plus single-token label ids
  engine      vLLM client: reads run concurrently over keep-alive connections
  readout     label log-probs -> option probabilities, choice, score, confidence
  systemone   render the answers in the contract's shape
Before it: framing (strict HTTP/1.1 heads and bodies) and connections (+ conn_table: the
connection loop, cap, deadlines and drain), server.Service.admit (route, key, slots from
admission) judging each request from its head. Around it: config (settings and profiles),
decision (the data model), errors (the catalogue), probes (start-up guard), warmup (warm-up
bodies), server (routing, health, the error renderer), fitting + state_parts (long states).
"""
