"""What serve.sh needs from the selected profile of serve_config.json (standard library only).

Usage: python3 tools/serve/serve_profile.py CONFIG PROFILE field KEY     one field ('' when absent)
       python3 tools/serve/serve_profile.py CONFIG PROFILE vllm-args     vLLM flags, one per line
PROFILE '' means the file's default_profile.

vLLM flags: vLLM never fetches media itself (only a domain that cannot exist is allowed, and
redirects are off in serve.sh), so the shim's checked data URLs are the only way images arrive.
A vision profile adds the image limit per prompt (every copy of the state shows every image:
max_images x 4 repeats), its processor cap and OpenAI-style content parts for the chat template;
then the profile's own `vllm_args`.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from onepass.config import MAX_REPEAT  # noqa: E402  (the shim's package: standard library only)

NO_FETCH_DOMAIN = "vllm-never-fetches.invalid"


def profile(config: str, name: str) -> dict:
    with open(config, encoding="utf-8") as f:
        doc = json.load(f)
    return doc["profiles"][name or doc["default_profile"]]


def vllm_args(p: dict) -> list[str]:
    args = ["--allowed-media-domains", NO_FETCH_DOMAIN]
    vision = p.get("vision")
    if vision:
        args += ["--limit-mm-per-prompt",
                 json.dumps({"image": vision.get("max_images", 4) * MAX_REPEAT}),
                 "--chat-template-content-format", "openai"]
        if vision.get("processor_kwargs"):
            args += ["--mm-processor-kwargs", json.dumps(vision["processor_kwargs"])]
    return args + list(p.get("vllm_args", []))


def main(argv: list[str]) -> int:
    config, name, command, *rest = argv
    p = profile(config, name)
    if command == "field":
        value = p.get(rest[0])
        print("" if value is None else value)
    elif command == "vllm-args":
        print("\n".join(vllm_args(p)))
    else:
        print(f"unknown command {command!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main(sys.argv[1:]))
