"""What serve.sh needs from the selected profile of serve_config.json (standard library only).

Usage: python3 tools/serve/serve_profile.py CONFIG PROFILE field KEY     one field ('' when absent)
       python3 tools/serve/serve_profile.py CONFIG PROFILE vllm-args     vLLM flags, one per line
       python3 tools/serve/serve_profile.py CONFIG PROFILE fields KEY... each field on a line, then
                                                                  the vLLM flags (one call)
       python3 tools/serve/serve_profile.py CONFIG PROFILE names         profile names, one per line
A KEY `a.b` reads field b of the profile's object a. PROFILE '' means the file's
default_profile; for `names`, every profile, the default first (serve.sh --dry-run), and a
PROFILE the file lacks is exit 2.

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


def field(p: dict, key: str):
    """A profile's field; `a.b` is field b of the object a (None when either is absent)."""
    value = p
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def names(config: str, name: str) -> list[str]:
    with open(config, encoding="utf-8") as f:
        doc = json.load(f)
    if name:
        if name not in doc["profiles"]:
            raise KeyError(f"no profile {name!r} in {config}; its profiles: "
                           + ", ".join(doc["profiles"]))
        return [name]
    default = doc["default_profile"]
    return [default] + [n for n in doc["profiles"] if n != default]


def main(argv: list[str]) -> int:
    config, name, command, *rest = argv
    if command == "names":
        try:
            print("\n".join(names(config, name)))
        except KeyError as e:
            print(e.args[0], file=sys.stderr)
            return 2
        return 0
    p = profile(config, name)
    if command == "field":
        value = field(p, rest[0])
        print("" if value is None else value)
    elif command == "fields":
        for key in rest:
            value = field(p, key)
            print("" if value is None else str(value).replace("\n", " "))
        print("\n".join(vllm_args(p)))
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
