"""The headers a bench script sends the shim: JSON, and the API key from ONEPASS_API_KEY when set
(serve.sh serves with auth on wherever it is reachable; the key is the one it was started with).
Never logs or prints the key."""
import os


def headers() -> dict:
    out = {"Content-Type": "application/json"}
    if os.environ.get("ONEPASS_API_KEY"):
        out["Authorization"] = "Bearer " + os.environ["ONEPASS_API_KEY"]
    return out
