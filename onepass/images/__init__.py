"""Images: found in a request and numbered (inputs), links fetched under the server's rules
(fetch), bytes checked by their header (formats); vLLM only ever gets data URLs."""
