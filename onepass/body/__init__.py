"""A request body: its decoding and its size limits."""
