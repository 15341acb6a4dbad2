"""Unit tests of the engine plugin's modules that run without vLLM (engine/onepass_engine/)."""
