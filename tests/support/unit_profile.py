"""The profiles and label set the stdlib unit tests lay prompts out with (no vLLM: the label
token ids are made up, never a tokenizer's)."""
from dataclasses import replace

from onepass import config
from onepass.prompt.layout import LabelSet
from tests.support.paths import FAST_PROFILE, ROOT

EMBEDDED = config.load_profile(str(ROOT / "serve_config.json"), FAST_PROFILE)[1]
# The unit tests lay prompts out with every technique off (dataclass defaults) and untempered,
# whatever the embedded profile's measured defaults are; TestTechniques turns them on one by one.
PROFILE = replace(EMBEDDED, layout=config.Layout(),
                  calibration=config.Calibration({"noul": 1.0, "choice": 1.0, "score": 1.0}))
LABELS = LabelSet(noul=(("Yes", 1), ("No", 2)),
                  choice=tuple((chr(65 + i), 100 + i) for i in range(26)),
                  score=tuple((str(i), 200 + i) for i in range(10)))
# The tiny vision profile as shipped: the image path's layout, limits and placeholders.
VLM = config.load_profile(str(ROOT / "serve_config.json"), "idefics3-tiny")[1]
