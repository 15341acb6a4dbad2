"""Stdlib-only tests of the image inputs of a request: every form found and numbered in one order,
placeholders, multipart bodies, limits and refusals naming the image, the layout of images in
the prompt (each copy of the state shows them) and their token cost when fitting. And the image
count checked while counting (issue 25): a body with hundreds of thousands of empty data URLs is
refused at the one past the limit, so the refusal costs a scan of the bytes, not a Source and a
label each (tracemalloc's peak, and time against a plain scan of the text).
Run: python3 -m unittest tests.unit.images.test_inputs
"""
import base64
import gc
import json
import tracemalloc
import unittest
from dataclasses import replace
from unittest import mock

from onepass import config, profile
from onepass.steps import readout
from onepass.api import Limits, decisions, systemone
from onepass.body import decode as transport
from onepass.images import inputs as image_inputs
from onepass.prompt import fitting, layout
from onepass.config import ConfigError
from onepass.backend import wire
from onepass.decision_model import Option, Question, ReadResult
from tests.support.kind_names import NOUL
from onepass.errors import InvalidRequest, PayloadTooLarge
from onepass.backend.warmup import png
from tests.support.build_decision import decision, from_body
from tests.support.memory_peak import peak_of
from tests.support.unit_profile import LABELS, VLM

VISION = VLM.vision
POLICY = image_inputs.Policy("tiny", VISION, None)  # links off: no network in these tests


def data_url(rgb, size=(8, 6)) -> str:
    return "data:image/png;base64," + base64.b64encode(png(*size, rgb)).decode()


RED, BLUE, GREEN = data_url((255, 0, 0)), data_url((0, 0, 255)), data_url((0, 255, 0))
NOUL_Q = {"type": "noul", "instructions": "Is it red?"}


def parse(body, files=None, policy=POLICY, api=systemone):
    return from_body(api, {"model": "jev-latest", **body}, files, policy)[0]


def problems(body, files=None, policy=POLICY, api=systemone):
    with unittest.TestCase().assertRaises(InvalidRequest) as ctx:
        parse(body, files, policy, api)
    return [(p.loc, p.msg) for p in ctx.exception.problems]


def colour(image) -> bytes:
    """The first pixel's RGB, read back from our own uncompressed-row PNGs."""
    import zlib
    data = image.data
    idat = data.index(b"IDAT")
    length = int.from_bytes(data[idat - 4:idat], "big")
    return zlib.decompress(data[idat + 4:idat + 4 + length])[1:4]


class TestForms(unittest.TestCase):
    def test_images_list_first_then_state_in_order(self):
        """`images` entries are numbered first (data URL, bare base64, chat part), then the
        data URLs and image parts in the state in document order; each leaves its label."""
        bare = RED.split(",", 1)[1]
        d = parse({"images": [bare, {"type": "image_url", "image_url": {"url": BLUE}}],
                   "state": {"a": GREEN, "b": ["text", {"type": "image_url", "image_url": RED}],
                             "c": f"see {BLUE} here"},
                   "questions": {"q": NOUL_Q}},
                  policy=image_inputs.Policy("tiny", replace(VISION, max_images=8), None))
        self.assertEqual(d.state, {"a": "[image 3]", "b": ["text", "[image 4]"],
                                   "c": "see [image 5] here"})
        self.assertEqual([colour(i) for i in d.images],
                         [b"\xff\0\0", b"\0\0\xff", b"\0\xff\0", b"\xff\0\0", b"\0\0\xff"])

    def test_a_state_string_that_is_a_data_url(self):
        d = parse({"state": RED, "questions": {"q": NOUL_Q}})
        self.assertEqual((d.state, len(d.images)), ("[image 1]", 1))

    def test_assets_placeholders_everywhere_image_sent_once(self):
        """Every occurrence of a placeholder (state, instructions, criteria; inside strings, not
        keys) points at one image, which is sent once; legends echo criteria as sent."""
        ph = "<image:38e7ceb377534468bba143e212050716>"
        body = {"state": {"photo": ph, ph: "a key stays", "note": f"compare {ph} and <<b>>"},
                "questions": {"q": {"type": "noul", "instructions": f"Is {ph} damaged?",
                                    "criteria": {"true": f"{ph} shows damage"}},
                              "s": {"type": "score", "criteria": [f"{ph} bad", "good"]}},
                "assets": {ph: {"type": "image", "part": "asset-0"},
                           "<<b>>": {"type": "image", "format": "jpg",
                                     "data_base64": BLUE.split(",", 1)[1]}}}
        d, meta = from_body(systemone, {"model": "jev-latest", **body},
                             {"asset-0": png(4, 4, (255, 0, 0))}, POLICY)
        self.assertEqual(d.state, {"photo": "[image 1]", ph: "a key stays",
                                   "note": "compare [image 1] and [image 2]"})
        self.assertEqual(d.questions[0].instructions, "Is [image 1] damaged?")
        self.assertEqual(d.questions[0].options[0].text, "[image 1] shows damage")
        self.assertEqual(d.questions[1].options[0].text, "[image 1] bad")
        self.assertEqual(meta.legends[1], [f"{ph} bad", "good"])
        self.assertEqual([i.format for i in d.images], ["png", "png"])  # sniffed, not "jpg"

    def test_data_urls_in_question_texts_but_never_parts(self):
        """A data URL in instructions or criteria is an image too (after the state's); a choice
        whose options are named `type` and `image_url` stays a choice."""
        d = parse({"state": {"a": RED}, "questions": {
            "q": {"type": "noul", "instructions": f"Same colour as {BLUE}?"},
            "c": {"type": "choice", "criteria": {"type": "image_url", "image_url": "x"}}}})
        self.assertEqual(d.questions[0].instructions, "Same colour as [image 2]?")
        self.assertEqual([o.key for o in d.questions[1].options], ["type", "image_url"])
        self.assertEqual(len(d.images), 2)

    def test_asset_numbering_after_inline_images(self):
        d = parse({"images": [RED], "state": {"x": BLUE, "y": "<p>"},
                   "assets": {"<p>": {"type": "image", "format": "png",
                                      "data_base64": GREEN.split(",", 1)[1]}},
                   "questions": {"q": NOUL_Q}})
        self.assertEqual(d.state, {"x": "[image 2]", "y": "[image 3]"})

    def test_asset_refusals(self):
        part = {"type": "image", "part": "asset-0"}
        self.assertEqual(problems({"state": "x", "questions": {"q": NOUL_Q}, "assets": {}})[0][0],
                         ("assets",))
        self.assertEqual(problems({"state": "x", "questions": {"q": NOUL_Q},
                                   "assets": {"a": part}})[0][0], ("assets", "a", "part"))
        twice = problems({"state": "x", "questions": {"q": NOUL_Q},
                          "assets": {"a": part, "b": part}}, files={"asset-0": png(2, 2, (0, 0, 0))})
        self.assertEqual(twice[0][0], ("assets", "b", "part"))
        unclaimed = problems({"state": "x", "questions": {"q": NOUL_Q}},
                             files={"asset-9": png(2, 2, (0, 0, 0))})
        self.assertIn("asset-9", unclaimed[0][1])
        no_format = problems({"state": "x", "questions": {"q": NOUL_Q},
                              "assets": {"a": {"type": "image", "data_base64": "AAAA"}}})
        self.assertEqual(no_format[0][0], ("assets", "a"))
        self.assertEqual(problems({"state": "x", "questions": {"q": NOUL_Q},
                                   "assets": {"a": {"type": "audio"}}})[0][0], ("assets", "a"))

    def test_openai_input_image_parts(self):
        """/v1/decisions: input_image parts in messages, tool outputs and instructions stand as
        their labels in reading order; a link with links off is a 400 naming it."""
        body = {"input": [{"role": "user", "content": [
                    {"type": "input_text", "text": "Photos:"},
                    {"type": "input_image", "image_url": RED, "detail": "low"}]},
                    {"type": "function_call", "call_id": "c1", "name": "snap", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c1", "output": [
                        {"type": "input_image", "image_url": BLUE}]}],
                "questions": [{"type": "predicate", "instructions": [
                    {"type": "input_text", "text": "Same as"},
                    {"type": "input_image", "image_url": GREEN}]}]}
        d = parse(body, api=decisions)
        self.assertEqual(d.state, "user: Photos:\n[image 1]\n\ntool call c1: snap({})\n\n"
                                  "tool output c1: [image 2]")
        self.assertEqual(d.questions[0].instructions, "Same as\n[image 3]")
        self.assertEqual(len(d.images), 3)
        link = {"type": "input_image", "image_url": "https://example.com/a.png"}
        body["input"][0]["content"].append(link)
        got = problems(body, api=decisions)
        self.assertEqual(got[0][0], ("input", 0, "content", 2, "image_url"))
        self.assertIn("switched off", got[0][1])


class TestLimits(unittest.TestCase):
    def test_count_bytes_pixels_and_bad_data_name_the_image(self):
        q = {"q": NOUL_Q}
        five = problems({"state": "x", "images": [RED] * 5, "questions": q})
        self.assertEqual(five, [(("images", 4), "this server reads at most 4 images per "
                                                "request; this one has 5")])
        small = replace(VISION, max_bytes=50, max_pixels=100)
        policy = image_inputs.Policy("tiny", small, None)
        big = data_url((1, 1, 1), (20, 20))
        got = problems({"state": {"a": big}, "questions": q}, policy=policy)
        self.assertEqual(got[0][0], ("state", "a"))
        self.assertTrue(got[0][1].startswith("image 1: "), got)
        for bad in ("data:image/png;base64,AAAA", "data:image/png;base64,!!notbase64",
                    "data:image/png;base64," + base64.b64encode(b"GIF89a").decode()):
            got = problems({"state": "x", "images": [RED, bad], "questions": q})
            self.assertEqual(got[0][0], ("images", 1))
            self.assertTrue(got[0][1].startswith("image 2: "), got)
        self.assertEqual(problems({"state": "x", "images": "nope", "questions": q})[0][0],
                         ("images",))
        self.assertEqual(problems({"state": "x", "images": [42], "questions": q})[0][0],
                         ("images", 0))

    def test_a_text_model_refuses_every_form(self):
        text_only = image_inputs.Policy("smol", None, None)
        for body in ({"images": [RED]}, {"state": {"a": RED}},
                     {"assets": {"<a>": {"type": "image", "format": "png",
                                         "data_base64": RED.split(",", 1)[1]}}}):
            got = problems({"state": "x <a>", "questions": {"q": NOUL_Q}, **body},
                           policy=text_only)
            self.assertEqual(len(got), 1)
            self.assertIn("(smol) reads text only", got[0][1])


class TestMultipart(unittest.TestCase):
    def body(self, request: dict, files: dict, boundary="d6f56c2db99e474a9bdd48fa83fb62ab"):
        out = b""
        parts = [("request", None, "application/json", json.dumps(request).encode())]
        parts += [(name, name, "image/png", data) for name, data in files.items()]
        for name, filename, ctype, data in parts:
            disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
            out += (f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
                    f"Content-Type: {ctype}\r\n\r\n").encode() + data + b"\r\n"
        return out + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"

    def test_the_sdk_layout_round_trips_bytes_exactly(self):
        image = png(3, 3, (13, 10, 13)) + b"\r\n--not-the-boundary\r\n\r\n"
        raw, ctype = self.body({"state": "x"}, {"asset-0": image, "asset-1": b"\x00" * 10})
        body, files = transport.parse(raw, ctype)
        self.assertEqual(body, {"state": "x"})
        self.assertEqual(files, {"asset-0": image, "asset-1": b"\x00" * 10})

    def test_malformed_bodies_are_4xx(self):
        raw, ctype = self.body({"state": "x"}, {})
        for bad_raw, bad_type in ((raw, "multipart/form-data"), (b"junk", ctype),
                                  (raw.replace(b'name="request"', b'name="other"'), ctype),
                                  (raw[:-10], ctype),
                                  (raw.replace(b"Content-Disposition: form-data; ", b""), ctype)):
            with self.assertRaises(InvalidRequest):
                transport.parse(bad_raw, bad_type)
        many, ctype = self.body({}, {f"p{i}": b"x" for i in range(40)})
        with self.assertRaises(InvalidRequest):
            transport.parse(many, ctype)


class TestLayout(unittest.TestCase):
    def decision(self, **kw):
        d = parse({"state": {"photo": RED, "note": "<image> typed by a client"},
                   "questions": {"q": NOUL_Q}, "images": [BLUE]})
        return replace(d, **kw)

    def test_each_copy_shows_every_image_and_client_text_has_no_slots(self):
        for repeat in (1, 2, 3):
            d = self.decision(layout=replace(VLM.layout, repeat=repeat))
            read, = layout.layout(d, VLM, LABELS)
            system, user = read.chat
            self.assertEqual(user.count("<image>"), 2 * repeat)
            self.assertEqual(user.count("[image 1] <image>\n[image 2] <image>\n"), repeat)
            self.assertIn("<\u200bimage> typed by a client", user)
            self.assertEqual(read.images, (d.images[0], d.images[1]) * repeat)
            self.assertEqual(read.prompt, layout.wrap_chat(VLM, system, user))

    def test_text_requests_keep_the_text_path(self):
        d = replace(self.decision(), images=())
        read, = layout.layout(d, VLM, LABELS)
        self.assertEqual((read.chat, read.images), ((), ()))

    def test_fitting_pays_for_every_image_slot(self):
        """A prompt short in bytes is still counted when its images may not fit; the images
        are never cut, the state is."""
        d = replace(self.decision(), state="word " * 300)
        counted = []

        def count(texts):
            counted.extend(texts)
            return [len(t.split()) for t in texts]
        per_image = VISION.tokens_per_image
        reads, selections = fitting.fit(d, VLM, LABELS, count, 250 + 2 * per_image)
        self.assertEqual(len(selections), 1)
        self.assertEqual(reads[0].prompt.count("<image>"), 2)
        kept = reads[0].prompt.count("word")
        self.assertTrue(0 < kept < 300, kept)
        self.assertLessEqual(count([reads[0].prompt])[0] + 2 * (per_image - 1),
                             250 + 2 * per_image)

    def test_image_temperature_applies_to_every_kind(self):
        q = Question(NOUL, "Red?", (Option("true", None), Option("false", None)))
        cal = replace(VLM.calibration, temperature={"noul": 1.0, "choice": 1.0, "score": 1.0,
                                                    "image": 4.0})
        d = decision((q,), "x")
        read, = layout.layout(d, VLM, LABELS)
        result = ReadResult((-1.0, -3.0), 10)
        text = readout.probabilities(d, [read], [result], cal, 0.0)[0]
        image = readout.probabilities(replace(d, images=(object(),)), [read], [result], cal, 0.0)[0]
        self.assertAlmostEqual(text[0], 1 / (1 + 2.718281828459045 ** -2), places=9)
        self.assertAlmostEqual(image[0], 1 / (1 + 2.718281828459045 ** -0.5), places=9)


class TestEngineAndConfig(unittest.TestCase):
    def test_image_reads_become_chat_parts_at_their_slots(self):
        d = parse({"state": {"photo": RED, "b": BLUE}, "questions": {"q": NOUL_Q}})
        read, = layout.layout(replace(d, layout=replace(VLM.layout, repeat=2)), VLM, LABELS)
        messages = wire.messages(read, "<image>")
        system, user = read.chat
        self.assertEqual(messages[0], {"role": "system", "content": system})
        parts = messages[1]["content"]
        urls = [p["image_url"]["url"].data_url for p in parts if p["type"] == "image_url"]
        self.assertEqual(urls, [RED, BLUE, RED, BLUE])
        rebuilt = "".join(p["text"] if p["type"] == "text" else "<image>" for p in parts)
        self.assertEqual(rebuilt, user)

    def test_profile_and_settings_checks(self):
        with self.assertRaises(ConfigError):
            profile._check_vision(replace(VISION, placeholder="<img>"), "t")
        with self.assertRaises(ConfigError):
            profile._check_vision(replace(VISION, max_images=0), "t")
        with self.assertRaises(ConfigError):
            config.check_calibration(replace(VLM.calibration, temperature={
                "noul": 1, "choice": 1, "score": 1, "picture": 1}), "t")
        for env in ({"ONEPASS_IMAGE_LINKS": "sometimes"}, {"ONEPASS_IMAGE_LINKS_HTTP": "yes"},
                    {"ONEPASS_IMAGE_FETCH_TIMEOUT_S": "0"}):
            with self.assertRaises(ConfigError):
                config.load([], env)
        settings = config.load(["--profile", "idefics3-tiny"], {"ONEPASS_IMAGE_LINKS": "off"})
        self.assertEqual((settings.image_links, settings.model.vision), ("off", VISION))

    def test_image_link_ports_are_a_setting(self):
        """ONEPASS_IMAGE_LINK_PORTS: 80 and 443 unless set; the server's fetch rules use it;
        anything but ports 1-65535, comma-separated, is a ConfigError."""
        from onepass.server import Service
        from tests.support.paths import ROOT
        for env, ports in (({}, (80, 443)), ({"ONEPASS_IMAGE_LINK_PORTS": "443, 8443"},
                                             (443, 8443))):
            settings = config.load(["--profile", "idefics3-tiny"], env)
            self.assertEqual(Service(settings, ROOT).images.links.ports, ports)
        for bad in ("0", "80,x", "70000", "80,,443", "\u00b2", "-1", "1" * 5000):
            with self.subTest(bad), self.assertRaises(ConfigError):
                config.load([], {"ONEPASS_IMAGE_LINK_PORTS": bad})



# -- the image count, checked while counting ----------------------------------------------------
N = 440_000  # empty data URLs in a 10 MB state (the case had 16.8 MB)
EMPTY = "data:image/png;base64,"


def limits(most: int) -> Limits:
    return Limits(max_options=255, max_questions=400, max_images=most, model="tiny")


def bodies() -> dict:
    return {
        "systemone state": (systemone, {"model": "m", "state": " ".join([EMPTY] * N),
                                        "questions": {"q": {"type": "noul",
                                                            "instructions": "x"}}}),
        "decisions parts": (decisions, {"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": EMPTY}] * (N // 4)}],
            "questions": [{"type": "predicate", "instructions": "x"}]}),
    }


def refusal(api, body, most: int):
    """(the problems, peak bytes allocated) of parsing an already-decoded body."""
    gc.collect()
    tracemalloc.start()
    try:
        api.parse(body, None, limits(most))
    except InvalidRequest as e:
        problems = e.problems
    else:
        raise AssertionError("accepted")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return problems, peak


class TestCountedWhileCounting(unittest.TestCase):
    def test_refused_at_the_one_past_the_limit(self):
        for most in (4, 0):  # a vision profile's 4, a text-only profile's none
            for kind, (api, body) in bodies().items():
                with self.subTest(kind=kind, most=most):
                    problems, peak = refusal(api, body, most)
                    self.assertEqual(problems[-1].type, "too_long" if most else "unsupported")
                    self.assertLess(peak, 1 << 20)  # not 145 MiB of Sources and labels

    def test_the_refusal_looks_at_one_image_past_the_limit(self):
        """The count is checked while counting: 5 images collected for a limit of 4, not the
        body's 440,000 (each a Source and a label before the count was checked)."""
        for kind, (api, body) in bodies().items():
            with self.subTest(kind=kind), mock.patch.object(
                    image_inputs.Collector, "add", autospec=True,
                    side_effect=image_inputs.Collector.add) as add:
                refusal(api, body, 4)
            self.assertEqual(add.call_count, 5)


class TestPlaceholderExpansion(unittest.TestCase):
    """Every occurrence of an asset placeholder becomes its label (`[image N]`, 9 characters):
    the size that makes is counted before anything is replaced, and past the state limit it
    is a 413, so a one-letter placeholder cannot multiply a body in memory."""

    ASSET = {"a": {"type": "image", "format": "png", "data_base64": RED.split(",", 1)[1]}}

    def refused_with_peak(self, body) -> int:
        def run():
            with self.assertRaises(PayloadTooLarge) as ctx:
                parse({**body, "assets": self.ASSET})
            self.assertIn(f"at most {fitting.MAX_STATE_BYTES}", ctx.exception.message)
        return peak_of(run)

    def test_a_one_letter_placeholder_cannot_multiply_the_state(self):
        """A state of 1 MiB of `a`s with an asset named `a` (9 MiB once replaced) is refused
        before the replaced state is built: the peak stays under the state's own size."""
        peak = self.refused_with_peak({"state": {"t": ["a" * (1 << 19)] * 2},
                                       "questions": {"q": NOUL_Q}})
        self.assertLess(peak, 1 << 20)

    def test_the_question_texts_are_bounded_together(self):
        """120 questions of 10 KiB of `a`s each (each `a` 8 characters longer once replaced:
        9.4 MiB more in all) are refused the same way: the bound is the request's, not each
        text's."""
        questions = {str(i): {"type": "noul", "instructions": "a" * 10240} for i in range(120)}
        self.assertLess(self.refused_with_peak({"state": "x", "questions": questions}), 1 << 20)

    def test_placeholders_are_plain_text_capped_in_length(self):
        """A placeholder of a million characters is a 422 naming the cap (its name cut in the
        refusal), before any replacing; characters a pattern would read (`.*`, `(`) are only
        text; the longest placeholder wins where one contains another."""
        long = "x" * 1_000_000
        with self.assertRaises(InvalidRequest) as ctx:
            parse({"state": long, "questions": {"q": NOUL_Q},
                   "assets": {long: self.ASSET["a"]}})
        problem = ctx.exception.problems[0]
        self.assertIn(f"at most {image_inputs.MAX_PLACEHOLDER} characters", problem.msg)
        self.assertLess(len(str(problem.loc)), 100)
        labels = {".*": "[image 1]", "(": "[image 2]", "(.*": "[image 3]"}
        replaced = image_inputs.replace_placeholders(
            {"s": "a.*b(c(.*d", "l": ["x.*"], "k": 1}, labels)
        self.assertEqual(replaced, {"s": "a[image 1]b[image 2]c[image 3]d",
                                    "l": ["x[image 1]"], "k": 1})


if __name__ == "__main__":
    unittest.main()
