"""Where the checkout is: the tests read onepass/, serve_config.json and the scripts from it."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
