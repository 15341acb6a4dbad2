"""Image inputs: every way a request carries images, found, numbered in one order, and turned into
checked bytes.

Owns: the top-level `images` list (data URLs, bare base64, links, chat-style parts; numbered
first), data URLs anywhere inside state strings and chat-style image parts in the state, then
data URLs in question texts (each replaced by `[image N]`), TypeSafe assets (multipart parts or `data_base64`; every occurrence of a
placeholder inside a string of the state, instructions or criteria becomes that image's label,
and each asset is shown once), OpenAI `input_image` parts; the per-request count; fetching links
(fetch.py) and checking bytes (formats.py) with every refusal naming the image and its place.
Never: decodes pixels, logs or echoes links or bytes, lets vLLM fetch (it gets data URLs only).
In: request fragments from an adapter (no I/O while collecting). Out: `[image N]` labels in its
text and Sources; later (resolve, the pipeline's images step) the Images.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import fetch

from . import formats
from ..profile import Vision
from ..errors import InvalidRequest, PayloadTooLarge, Problem
from ..decision_model import MAX_STATE_BYTES

# A data URL inside any string: the base64 runs to the first character that cannot be in it.
DATA_URL = re.compile(r"data:image/[\w.+-]*;base64,[A-Za-z0-9+/=]*")
PART_TYPES = {"image_url", "input_image"}  # chat-style and OpenAI-style image parts
ASSET_KEYS = {"type", "part", "format", "data_base64"}
ASSET_FORMATS = ("png", "jpg", "jpeg")  # the contract's `format` values; the bytes decide
MAX_FETCHES = 4  # links fetched at once per request
MAX_PLACEHOLDER = 256  # characters of an asset's placeholder: a name, not a document


@dataclass(frozen=True)
class Source:
    kind: str  # data_url, base64, link or bytes
    value: object  # the text or the bytes
    loc: tuple  # where the request put it; refusals name it


@dataclass(frozen=True)
class Policy:
    """What this server reads: the profile's image limits (None: text only) and link rules."""
    model: str
    vision: Vision | None
    links: fetch.Rules | None  # None: links are switched off


def label(n: int) -> str:
    return f"[image {n}]"


def over_count(loc, most: int, model: str, count: str) -> Problem:
    """The refusal of one image more than this server reads (none on a text-only model)."""
    if most == 0:
        return Problem(loc, f"this server's model{model and f' ({model})'} reads text only; "
                       "images need a vision-language model profile", "unsupported")
    return Problem(loc, f"this server reads at most {most} images per request; this one has "
                   f"{count}", "too_long")


class Collector:
    """Collects a request's images in reading order; problems go to the adapter's Checker.
    With `most`, the count is checked while counting: the image one past it ends the parse
    at once (a 422), so a body of a million empty data URLs costs one scan of its bytes."""

    def __init__(self, check, most: int | None = None, model: str = ""):
        self.check, self.most, self.model = check, most, model
        self.sources: list[Source] = []

    def add(self, kind: str, value, loc) -> str:
        if self.most is not None and len(self.sources) >= self.most:
            self.check.add(*_fields(over_count(tuple(loc), self.most, self.model, "more")))
            raise self.check.error()
        self.sources.append(Source(kind, value, tuple(loc)))
        return label(len(self.sources))

    def url(self, value, loc) -> str | None:
        """An image given by URL text: a data URL, or an http(s) link to fetch."""
        if not isinstance(value, str):
            self.check.add(loc, "an image URL must be a string", "string_type")
            return None
        kind = _url_kind(value)
        if kind is None:
            self.check.add(loc, "an image URL must be a data: URL or an https link",
                           "value_error")
            return None
        return self.add(kind, value, loc)

    def listed(self, raw, loc=("images",)) -> None:
        """The top-level `images` list: data URLs, bare base64, links or chat-style parts."""
        if not isinstance(raw, list):
            self.check.add(loc, "images must be an array of images", "list_type")
            return
        for i, item in enumerate(raw):
            if isinstance(item, dict) and _is_part_type(item.get("type")):
                self.url(_part_url(item), (*loc, i))
            elif isinstance(item, str) and _url_kind(item) is None:
                self.add("base64", item, (*loc, i))
            else:
                self.url(item, (*loc, i))

    def in_state(self, value, loc=("state",), parts=True):
        """The value with every data URL (inside strings too) and, with `parts`, every image
        part replaced by its `[image N]` label; object keys are never touched. Question texts
        take no parts: a choice may well have options named `type` and `image_url`."""
        if isinstance(value, dict):
            if parts and _is_part_type(value.get("type")) and "image_url" in value:
                return self.url(_part_url(value), loc) or ""
            return {k: self.in_state(v, (*loc, k), parts) for k, v in value.items()}
        if isinstance(value, list):
            return [self.in_state(v, (*loc, i), parts) for i, v in enumerate(value)]
        if isinstance(value, str) and "data:image/" in value:
            return DATA_URL.sub(lambda m: self.add("data_url", m.group(0), loc), value)
        return value

    def assets(self, raw, files: dict) -> dict:
        """TypeSafe assets -> {placeholder: label}; each multipart part claimed exactly once."""
        claimed, labels = set(), {}
        if raw is None:
            raw = {}
        elif not isinstance(raw, dict) or not raw:
            self.check.add(("assets",), "assets must be a non-empty object of placeholder -> "
                           "asset", "dict_type")
            raw = {}
        for placeholder, asset in raw.items():
            loc = ("assets", placeholder if len(placeholder) <= MAX_PLACEHOLDER
                   else placeholder[:40] + "...")
            if not placeholder:
                self.check.add(loc, "an asset placeholder must be non-empty", "string_too_short")
            elif len(placeholder) > MAX_PLACEHOLDER:
                self.check.add(loc, f"an asset placeholder is at most {MAX_PLACEHOLDER} "
                               f"characters, not {len(placeholder)}", "string_too_long")
            elif not isinstance(asset, dict) or asset.get("type") != "image":
                self.check.add(loc, "an asset must be {\"type\": \"image\", \"part\": name} or "
                               "{\"type\": \"image\", \"format\", \"data_base64\"}", "value_error")
            elif set(asset) - ASSET_KEYS:
                self.check.add(loc, f"unknown asset fields {sorted(set(asset) - ASSET_KEYS)}",
                               "extra_forbidden")
            elif "part" in asset:  # multipart: data_base64 is then ignored
                part = asset["part"]
                if not isinstance(part, str) or part not in files:
                    self.check.add((*loc, "part"), "no multipart part has this name",
                                   "value_error")
                elif part in claimed:
                    self.check.add((*loc, "part"), "this multipart part is claimed by another "
                                   "asset", "value_error")
                else:
                    claimed.add(part)
                    labels[placeholder] = self.add("bytes", files[part], loc)
            elif asset.get("format") not in ASSET_FORMATS or not isinstance(
                    asset.get("data_base64"), str):
                self.check.add(loc, "an inline asset needs format (png, jpg or jpeg) and "
                               "data_base64 as a string", "value_error")
            else:
                labels[placeholder] = self.add("base64", asset["data_base64"], loc)
        for name in sorted(set(files) - claimed):
            self.check.add(("assets",), f"the multipart part {name!r} is claimed by no asset",
                           "value_error")
        return labels


def resolve(sources, policy: Policy | None, hold=None) -> tuple:
    """The Images of a request's sources, in label order: links fetched, bytes checked. Every
    refusal is a problem naming the image, all raised as one InvalidRequest. No policy (or no
    vision settings): a text-only model. With the request's `hold` on the body budget, each
    link's bytes are claimed as they arrive and what they keep is held after."""
    if not sources:
        return ()
    problems = []
    vision = policy.vision if policy else None
    if vision is None:
        problems.append(over_count(sources[0].loc, 0, policy.model if policy else "", ""))
    elif len(sources) > vision.max_images:
        problems.append(over_count(sources[vision.max_images].loc, vision.max_images, "",
                                   str(len(sources))))
    else:
        links = [s for s in sources if s.kind == "link"] if policy.links and hold else []
        base = hold.held if links else 0
        claim = hold.shared() if links else None  # each fetch claims its bytes as they come
        with ThreadPoolExecutor(MAX_FETCHES, thread_name_prefix="image") as pool:
            found = list(pool.map(lambda s: _image(s, policy, claim), sources))
        if links:  # what the fetched images keep: their bytes, later their data URLs
            hold.resize(base + sum(len(i.data) + fetch.base64_size(len(i.data))
                                   for s, i in zip(sources, found)
                                   if s.kind == "link" and not isinstance(i, str)))
        problems = [Problem(source.loc, f"image {n}: {image}", "image_invalid")
                    for n, (source, image) in enumerate(zip(sources, found), 1)
                    if isinstance(image, str)]
    if problems:
        raise InvalidRequest(problems)
    return tuple(found)


def check_expansion(labels: dict, state, questions) -> None:
    """What replacing the placeholders would build, measured before it is built (a one-letter
    placeholder becomes the 9 characters of `[image 1]`): the state at most the state limit
    once replaced (longer ones are refused later anyway), and the questions' texts at most that
    much longer; past either a 413. Occurrences are counted per placeholder (str.count); the
    replacement makes at most as many, so the sizes are upper bounds."""
    growth = {p: len(label) - len(p) for p, label in labels.items() if len(label) > len(p)}
    size = _expanded(state, growth, whole=True)
    if size > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"the state with its asset placeholders replaced would be over "
                              f"{size} characters; this server reads states of at most "
                              f"{MAX_STATE_BYTES}")
    added = _expanded(questions, growth, whole=False)
    if added > MAX_STATE_BYTES:
        raise PayloadTooLarge(f"the asset placeholders would make the questions' texts over "
                              f"{added} characters longer; this server takes at most "
                              f"{MAX_STATE_BYTES} more")


def _expanded(value, growth: dict, whole: bool) -> int:
    """The characters replacing adds to the strings in value (with `whole`, and the strings'
    own), counted until past the state limit."""
    size, stack = 0, [value]
    while stack and size <= MAX_STATE_BYTES:
        v = stack.pop()
        if isinstance(v, str):
            size += len(v) * whole + sum(v.count(p) * grown for p, grown in growth.items())
        elif isinstance(v, (dict, list)):
            stack.extend(v.values() if isinstance(v, dict) else v)
    return size


def replace_placeholders(value, labels: dict):
    """Every occurrence of a placeholder inside a string (not an object key) becomes its
    label, the longest placeholder's first (so it wins where one contains another); a label's
    own text is never searched again. Plain text, never a pattern made of client text.
    check_expansion first bounds what that builds."""
    if not labels:
        return value
    ordered = sorted(labels, key=len, reverse=True)

    def walk(v):
        if isinstance(v, str):
            return _replaced(v, ordered, labels)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v
    return walk(value)


def _replaced(text: str, ordered: list, labels: dict) -> str:
    while ordered and ordered[0] not in text:
        ordered = ordered[1:]
    if not ordered:
        return text
    first, rest = ordered[0], ordered[1:]
    return labels[first].join(_replaced(piece, rest, labels) for piece in text.split(first))


def _fields(problem: Problem) -> tuple:
    return problem.loc, problem.msg, problem.type


def _url_kind(text: str) -> str | None:
    """data_url, link (http or https: the fetch rules decide which may be used) or None."""
    head = text[:8].lower()
    if head.startswith("data:"):
        return "data_url"
    return "link" if head.startswith(("https://", "http://")) else None


def _is_part_type(kind) -> bool:
    return isinstance(kind, str) and kind in PART_TYPES  # any JSON value may stand there


def _part_url(part: dict):
    """image_url as a string (OpenAI) or as {"url": ...} (chat completions)."""
    url = part.get("image_url")
    return url.get("url") if isinstance(url, dict) else url


def _image(source: Source, policy: Policy, claim=None):
    """An Image, or the reason it is refused (never the link or the bytes)."""
    v = policy.vision
    try:
        if source.kind == "data_url":
            return formats.from_data_url(source.value, v.max_bytes, v.max_pixels)
        if source.kind == "base64":
            return formats.from_base64(source.value, v.max_bytes, v.max_pixels)
        if source.kind == "bytes":
            return formats.from_bytes(source.value, v.max_bytes, v.max_pixels)
        if policy.links is None:
            return "image links are switched off on this server; send the image inline"
        data, _ = fetch.fetch(source.value, policy.links, claim)
        return formats.from_bytes(data, v.max_bytes, v.max_pixels)
    except (formats.BadImage, fetch.FetchRefused) as e:
        return str(e)
