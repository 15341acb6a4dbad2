"""onepass: System One decisions from one forward pass on vLLM (standard library only).

The request path, in order (server.Service.decide):
  transport   body off the wire: size limits, gzip/zstd, strict JSON
  systemone   the /v1/systemone adapter: validate, build the internal Decision
  layout      one Read per question: chat prompt plus single-token label ids
  engine      vLLM client: reads run concurrently over keep-alive connections
  readout     label log-probs -> option probabilities, choice, score, confidence
  systemone   render the answers in the contract's shape
Around it: config (settings and profiles), decision (the data model), errors (the catalogue),
probes (start-up guard), warmup (warm-up bodies), server (HTTP, auth, health).
"""
