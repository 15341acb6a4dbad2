"""Admission and scheduling of flagged requests (engine/onepass_engine/admission.py), without a
server: the front-end wrapper refuses what rules.py refuses, with vLLM's validation error and
its `param`, and makes an admitted request one token that reads no prefix cache (two-way); the
scheduler and prefix-cache wrappers keep a flagged request's one-step part whole and out of the
cache; every wrapper hands a request without the flag to the original untouched. The originals
are recording fakes with the signatures contract.py pins; SamplingParams and the error are
vLLM's own. Needs vLLM (the venv); the stdlib run skips it.
Run: .venv/bin/python -m unittest tests.unit.engine.test_admission
"""
import unittest
from types import SimpleNamespace

from tests.support.engine_fakes import engine, stand_in
from tests.support.venv_only import NO_VLLM

admission, rules = engine("admission", "rules")
if admission:
    from vllm.exceptions import VLLMValidationError
    from vllm.pooling_params import PoolingParams
    from vllm.sampling_params import SamplingParams

SCHEDULER = "vllm.v1.core.sched.scheduler", "Scheduler"


def sampling(**extra):
    return SamplingParams(extra_args=extra or None, max_tokens=16)


def request(params, num_tokens=40, block_hashes=()):
    """A scheduler Request stand-in."""
    return SimpleNamespace(sampling_params=params, num_tokens=num_tokens,
                           block_hashes=list(block_hashes))


def server(v2_runner=False, budget=64, threshold=0):
    """An InputProcessor stand-in: the config the wrapper reads."""
    scheduler = SimpleNamespace(max_num_batched_tokens=budget,
                                long_prefill_token_threshold=threshold)
    return SimpleNamespace(vllm_config=SimpleNamespace(use_v2_model_runner=v2_runner,
                                                       scheduler_config=scheduler))


@unittest.skipIf(admission is None, NO_VLLM)
class RecordingCase(unittest.TestCase):
    def setUp(self):
        self.calls = []

    def original(self, module_class, attr, answer):
        """A recording original with vLLM's signature, answering answer(arguments)."""
        def record(arguments):
            self.calls.append(arguments)
            return answer(arguments)
        return stand_in(*module_class, attr, record)


class TestProcessInputs(RecordingCase):
    def setUp(self):
        super().setUp()
        self.process = admission.wrap_process_inputs(self.original(
            ("vllm.v1.engine.input_processor", "InputProcessor"), "process_inputs",
            self.engine_request))
        self.prompt = list(range(20))

    def engine_request(self, arguments):
        """vLLM's EngineCoreRequest stand-in: the prompt's ids (or its embeddings) and a
        copy of the params, as vLLM clones them."""
        prompt, params = arguments["prompt"], arguments["params"]
        embeds = prompt.get("prompt_embeds") if isinstance(prompt, dict) else None
        return SimpleNamespace(prompt_token_ids=None if embeds else prompt, prompt_embeds=embeds,
                               sampling_params=params.clone()
                               if isinstance(params, SamplingParams) else params)

    def admit(self, params, me=None, prompt=None, **kwargs):
        return self.process(me or server(), "req-1", prompt or self.prompt, params, ("generate",),
                            **kwargs)

    def refusal(self, params, me=None, prompt=None):
        with self.assertRaises(VLLMValidationError) as caught:
            self.admit(params, me, prompt)
        return str(caught.exception).rpartition(" (parameter=")[0], caught.exception.parameter

    def test_requests_without_the_flag_pass_untouched(self):
        for params in (sampling(), sampling(attention_mode="causal"), sampling(other=1),
                       PoolingParams(), SimpleNamespace(extra_args={"attention_mode": "odd"})):
            self.calls.clear()
            me = server()
            got = self.admit(params, me, priority=3, arrival_time=1.5)
            self.assertEqual(len(self.calls), 1)
            self.assertEqual({k: self.calls[0][k] for k in ("self", "request_id", "prompt",
                                                           "params", "priority", "arrival_time")},
                             {"self": me, "request_id": "req-1", "prompt": self.prompt,
                              "params": params, "priority": 3, "arrival_time": 1.5})
            if isinstance(params, SamplingParams):
                self.assertEqual(got.sampling_params.max_tokens, 16)
                self.assertFalse(got.sampling_params.skip_reading_prefix_cache)

    def test_a_malformed_flag_is_a_validation_error_naming_it(self):
        for extra, param in (({"attention_mode": "sideways"}, "vllm_xargs.attention_mode"),
                             ({"set_spans": "3-5"}, "vllm_xargs.set_spans"),
                             ({"attention_mode": "two-way", "set_spans": "3:5"},
                              "vllm_xargs.set_spans")):
            message, got = self.refusal(sampling(**extra))
            self.assertEqual(got, param, extra)
            self.assertTrue(message.startswith(param), (extra, message))
        self.assertEqual(self.calls, [])

    def test_refused_before_processing_as_rules_say(self):
        for params, me in ((sampling(set_spans="3:5,5:9"), server(v2_runner=True)),
                           (SamplingParams(extra_args={"attention_mode": "two-way"},
                                           min_tokens=2), server()),
                           (SamplingParams(extra_args={"set_spans": "3:5,5:9"}, min_tokens=3),
                            server())):
            two_way = params.extra_args.get("attention_mode") == "two-way"
            spans = ((3, 5), (5, 9)) if "set_spans" in params.extra_args else ()
            want = rules.before_processing(two_way, spans, me.vllm_config.use_v2_model_runner,
                                           params.min_tokens)
            self.assertIsNotNone(want)
            self.assertEqual(self.refusal(params, me), want)
        self.assertEqual(self.calls, [])  # refused before the prompt is processed

    def test_refused_after_processing_as_rules_say(self):
        """Spans past the prompt, and the one-step budget: min(budget, threshold) when the
        threshold is set, with the typed refusal in param."""
        for params, me, two_way, spans, budget in (
                (sampling(set_spans="3:5,5:20"), server(), False, ((3, 5), (5, 20)), 64),
                (sampling(attention_mode="two-way"), server(budget=19), True, (), 19),
                (sampling(attention_mode="two-way"), server(threshold=16), True, (), 16),
                (sampling(set_spans="3:5,5:9"), server(budget=16), False, ((3, 5), (5, 9)),
                 16)):
            self.calls.clear()
            want = rules.after_processing(two_way, spans, len(self.prompt), budget)
            self.assertIsNotNone(want)
            self.assertEqual(self.refusal(params, me), want)
            self.assertEqual(len(self.calls), 1)
        message, param = self.refusal(sampling(attention_mode="two-way"), server(budget=19))
        self.assertEqual(param, rules.over_budget(19, 20))

    def test_an_admitted_request_is_one_token_and_two_way_reads_no_prefix_cache(self):
        for extra, me, skips in (({"attention_mode": "two-way"}, server(budget=20), True),
                                 ({"attention_mode": "bidirectional"}, server(threshold=32),
                                  True),
                                 ({"set_spans": "3:5,5:9"}, server(budget=17), False),
                                 ({"attention_mode": "two-way", "set_spans": "3:5,5:9"},
                                  server(budget=20, v2_runner=False), True)):
            params = sampling(**extra)
            got = self.admit(params, me)
            self.assertEqual(got.sampling_params.max_tokens, 1, extra)
            self.assertIs(bool(got.sampling_params.skip_reading_prefix_cache), skips, extra)
            self.assertEqual(params.max_tokens, 16)  # the request's copy changed, not the body's

    def test_prompt_embeddings_count_as_the_prompt(self):
        prompt = {"prompt_embeds": [[0.0] * 4] * 30}  # their length is all the wrapper reads
        _, param = self.refusal(sampling(attention_mode="two-way"), server(budget=29), prompt)
        self.assertEqual(param, rules.over_budget(29, 30))
        got = self.admit(sampling(attention_mode="two-way"), server(budget=30), prompt)
        self.assertEqual(got.sampling_params.max_tokens, 1)


class TestOneStep(RecordingCase):
    def test_where_the_one_step_part_begins(self):
        self.assertEqual(admission.one_step_from(request(sampling(attention_mode="two-way"))), 0)
        self.assertEqual(admission.one_step_from(request(sampling(set_spans="6:9,9:12"))), 6)
        self.assertEqual(admission.one_step_from(
            request(sampling(attention_mode="two-way", set_spans="6:9,9:12"))), 0)
        self.assertEqual(admission.one_step_from(request(sampling())), -1)
        self.assertEqual(admission.one_step_from(request(sampling(attention_mode="causal"))),
                         -1)

    def test_the_budget_is_the_smaller_of_budget_and_threshold(self):
        self.assertEqual(admission.one_step_budget(server(budget=64).vllm_config
                                                   .scheduler_config), 64)
        for threshold, want in ((16, 16), (100, 64)):
            config = server(budget=64, threshold=threshold).vllm_config.scheduler_config
            self.assertEqual(admission.one_step_budget(config), want)

    def test_mamba_split_leaves_flagged_requests_uncut(self):
        split = admission.wrap_mamba_split(self.original(
            SCHEDULER, "_mamba_block_aligned_split", lambda a: a["num_new_tokens"] // 16 * 16))
        for params in (sampling(attention_mode="two-way"), sampling(set_spans="6:9,9:12")):
            self.assertEqual(split(None, request(params), 37, 4), 37)
        self.assertEqual(self.calls, [])
        plain = request(sampling())
        self.assertEqual(split("me", plain, 37, 4, num_external_computed_tokens=2), 32)
        self.assertEqual(self.calls, [{"self": "me", "request": plain, "num_new_tokens": 37,
                                       "num_new_local_computed_tokens": 4,
                                       "num_external_computed_tokens": 2}])

    def test_lookahead_never_cuts_the_one_step_part(self):
        """What the scheduler grants a 40-token request, against the rule: a grant that
        would end inside the one-step part becomes the prefix before it (0: wait)."""
        granted = {}
        lookahead = admission.wrap_lookahead(self.original(
            SCHEDULER, "_reserve_prefill_lookahead", lambda a: granted["n"]))
        for mode, computed, grant, want in (
                ({}, 0, 10, 10),  # no flag: as granted
                ({"attention_mode": "two-way"}, 0, 40, 40),  # the whole prompt
                ({"attention_mode": "two-way"}, 0, 39, 0),  # cut: wait
                ({"attention_mode": "two-way"}, 0, 0, 0),
                ({"set_spans": "6:9,9:12"}, 0, 5, 5),  # ends before the spans
                ({"set_spans": "6:9,9:12"}, 0, 6, 6),  # ends where they begin
                ({"set_spans": "6:9,9:12"}, 0, 20, 6),  # the prefix alone first
                ({"set_spans": "6:9,9:12"}, 4, 20, 2),
                ({"set_spans": "6:9,9:12"}, 6, 20, 0),  # the spans on: wait for all
                ({"set_spans": "6:9,9:12"}, 6, 34, 34),
                ({"set_spans": "6:9,9:12"}, 4, 36, 36)):
            granted["n"] = grant
            req = request(sampling(**mode), num_tokens=40)
            self.assertEqual(lookahead("me", req, computed, 40 - computed), want,
                             (mode, computed, grant))
            self.assertEqual(self.calls[-1], {"self": "me", "request": req,
                                              "num_computed_tokens": computed,
                                              "num_new_tokens": 40 - computed})


class TestPrefixCache(RecordingCase):
    def test_what_a_flagged_request_may_cache(self):
        """Nothing of a two-way request; whole blocks before the first span of a set read."""
        self.assertEqual(admission.cached_up_to(request(sampling(attention_mode="two-way")), 4),
                         0)
        self.assertEqual(admission.cached_up_to(request(sampling(set_spans="10:12,12:13")), 4),
                         8)
        self.assertEqual(admission.cached_up_to(request(sampling(set_spans="8:12,12:13")), 4),
                         8)
        self.assertEqual(admission.cached_up_to(request(sampling(set_spans="3:5,5:9")), 4), 0)
        self.assertIsNone(admission.cached_up_to(request(sampling()), 4))

    def test_cache_blocks_publishes_no_flagged_block(self):
        cache = admission.wrap_cache_blocks(self.original(
            ("vllm.v1.core.kv_cache_coordinator", "KVCacheCoordinator"), "cache_blocks",
            lambda a: "cached"))
        me = SimpleNamespace(scheduler_block_size=4)
        plain, two_way = request(sampling()), request(sampling(attention_mode="two-way"))
        read = request(sampling(set_spans="10:12,12:13"))
        self.assertIsNone(cache(me, two_way, 40))
        self.assertEqual(self.calls, [])
        self.assertEqual([cache(me, plain, 40), cache(me, read, 40), cache(me, read, 6)],
                         ["cached"] * 3)
        self.assertEqual([(c["request"], c["num_computed_tokens"]) for c in self.calls],
                         [(plain, 40), (read, 8), (read, 6)])

    def test_a_flagged_request_reads_cached_blocks_before_its_first_span_only(self):
        seen = []
        computed = admission.wrap_computed_blocks(self.original(
            ("vllm.v1.core.kv_cache_manager", "KVCacheManager"), "get_computed_blocks",
            lambda a: seen.append(list(a["request"].block_hashes)) or "hits"))
        me = SimpleNamespace(coordinator=SimpleNamespace(
            scheduler_block_size=4, block_pool=SimpleNamespace(hash_block_size=2)))
        hashes = [f"h{i}" for i in range(10)]  # hashes of 2 tokens each
        for params, want in ((sampling(), hashes), (sampling(attention_mode="two-way"), []),
                             (sampling(set_spans="10:12,12:13"), hashes[:4])):
            req = request(params, block_hashes=hashes)
            self.assertEqual(computed(me, req), "hits")
            self.assertEqual(seen[-1], want)
            self.assertEqual(req.block_hashes, hashes)  # put back

        def fails(manager, req):
            raise RuntimeError("lookup failed")
        req = request(sampling(set_spans="10:12,12:13"), block_hashes=hashes)
        with self.assertRaisesRegex(RuntimeError, "lookup failed"):
            admission.wrap_computed_blocks(fails)(me, req)
        self.assertEqual(req.block_hashes, hashes)


if __name__ == "__main__":
    unittest.main()
