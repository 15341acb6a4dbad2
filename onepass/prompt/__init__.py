"""The prompt: each question laid out as Reads (layout), fitted into the context (fitting), the
state split into parts (state_parts) and ranked against the question (bm25)."""
