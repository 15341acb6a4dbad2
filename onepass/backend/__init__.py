"""The vLLM side: the client (engine), the start-up guard (probes) and the warm-up bodies
(warmup)."""
