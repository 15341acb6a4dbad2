"""The headers a bench script sends the shim: JSON, and the API key from ONEPASS_API_KEY when set
(serve.sh serves with auth on wherever it is reachable; the key is the one it was started with).
And for a script that calls vLLM itself, vLLM's key from ONEPASS_VLLM_KEY: serve.sh makes a fresh
one at each start unless it is started with ONEPASS_VLLM_KEY set (then the same value goes to
the script). Never logs or prints either key."""
import os


def headers() -> dict:
    out = {"Content-Type": "application/json"}
    if os.environ.get("ONEPASS_API_KEY"):
        out["Authorization"] = "Bearer " + os.environ["ONEPASS_API_KEY"]
    return out


def vllm_key() -> str:
    """vLLM's key ('' when unset: a vLLM started without one)."""
    return os.environ.get("ONEPASS_VLLM_KEY", "")


def vllm_headers() -> dict:
    """JSON, and vLLM's key: what a call straight to vLLM carries (never the shim's key)."""
    out = {"Content-Type": "application/json"}
    if vllm_key():
        out["Authorization"] = "Bearer " + vllm_key()
    return out
