"""Where the checkout is: the tests read onepass/, serve_config.json and the scripts from it."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The fast SmolLM2 profile: the unit tests' prompts and the live suite's engine plumbing run on
# it, whatever the shipped default is (tests/live/test_default_model_live.py runs the default).
FAST_PROFILE = "smollm2-135m-fast"
