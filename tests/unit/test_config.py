"""Stdlib-only tests of the settings (onepass/config.py): defaults, the environment under the
flags, flags over the environment and the key from it alone, the bounds every count and timeout
is held to, and each kind's own settings. The profile file is tested in
tests/unit/test_profile.py; the image settings in tests/unit/images/test_inputs.py.
Run: python3 -S -m unittest tests.unit.test_config
"""
import json
import unittest

from onepass import config
from tests.support.paths import ROOT

POSITIVE = ("max_body_bytes", "max_questions", "max_in_flight", "max_reads", "engine_timeout_s",
            "drain_timeout_s", "max_box_questions", "number_max_tokens")


def load(*argv, **env):
    return config.load(list(argv), environ=env)


class TestSettings(unittest.TestCase):
    def test_defaults_come_from_the_table(self):
        """load: with no flag and no environment, every setting is its table default."""
        s = load()
        for name, (_, default, _, _) in config.SETTINGS.items():
            if name != "profile":  # resolved to the file's default profile's name
                self.assertEqual(getattr(s, name), default, name)
        shipped = json.loads((ROOT / "serve_config.json").read_text())["default_profile"]
        self.assertEqual((s.profile, s.api_key), (shipped, ""))

    def test_the_environment_fills_what_no_flag_sets_and_empty_is_unset(self):
        """load: ONEPASS_* is typed like its flag; an empty variable leaves the default."""
        s = load(ONEPASS_MAX_READS="12", ONEPASS_ENGINE_TIMEOUT_S="2.5", ONEPASS_MAX_QUESTIONS="")
        self.assertEqual((s.max_reads, s.engine_timeout_s, s.max_questions), (12, 2.5, 400))

    def test_flags_over_env_and_secret_from_env_only(self):
        """load: flags beat the environment; the API key comes from the environment."""
        s = config.load(["--port", "9001"], environ={"ONEPASS_PORT": "9000",
                                                     "ONEPASS_API_KEY": "k"})
        self.assertEqual((s.port, s.api_key), (9001, "k"))
        self.assertNotIn("'k'", repr(s))  # the key is never in a repr, so never in a log line
        with self.assertRaises(config.ConfigError):
            config.load([], environ={"ONEPASS_PORT": "nine"})

    def test_the_vllm_key_from_the_environment_only(self):
        """load: vLLM's key is ONEPASS_VLLM_KEY (unset: ''), never a flag or in a repr; one a
        header cannot carry is refused without being repeated."""
        self.assertEqual(load().vllm_key, "")
        s = load(ONEPASS_VLLM_KEY="9f0c-secret")
        self.assertEqual(s.vllm_key, "9f0c-secret")
        self.assertNotIn("9f0c-secret", repr(s))
        self.assertNotIn("vllm_key", vars(config.parse_args([])))  # no flag: argv is public
        for bad in ("a\r\nX-Evil: 1", "kéy"):
            with self.assertRaises(config.ConfigError) as ctx:
                load(ONEPASS_VLLM_KEY=bad)
            self.assertIn("ONEPASS_VLLM_KEY", str(ctx.exception))
            self.assertNotIn(bad, str(ctx.exception))

    def test_counts_and_timeouts_must_be_positive_and_finite(self):
        """load: 0, negative or infinite is a ConfigError naming it; port 0 means any port."""
        for name in POSITIVE:
            row = config.SETTINGS[name]
            for bad in ("0", "-1") + (("inf",) if row[0] is float else ()):
                with self.assertRaises(config.ConfigError, msg=(name, bad)) as ctx:
                    load(**{row[2]: bad})
                self.assertIn(name, str(ctx.exception))
        self.assertEqual(load("--port", "0").port, 0)
        with self.assertRaises(config.ConfigError):
            load("--port", "-1")

    def test_choices_and_the_engine_url(self):
        """load: drain_refusal is 503 or close; the vLLM URL loses its trailing slashes."""
        self.assertEqual(load(ONEPASS_DRAIN_REFUSAL="close").drain_refusal, "close")
        with self.assertRaises(config.ConfigError):
            load(ONEPASS_DRAIN_REFUSAL="drop")
        self.assertEqual(load("--vllm", "http://h:1//").vllm, "http://h:1")

    def test_each_kinds_settings_are_flags(self):
        """SETTINGS: box and number add their caps as flags and ONEPASS_* variables."""
        self.assertLessEqual({"max_box_questions", "box_max_tokens", "max_number_questions",
                              "number_max_tokens"}, set(config.KIND_SETTINGS))
        s = load("--box-max-tokens", "64", ONEPASS_MAX_NUMBER_QUESTIONS="3")
        self.assertEqual((s.box_max_tokens, s.max_number_questions), (64, 3))



class TestNoKeyAddress(unittest.TestCase):
    def test_no_key_listens_on_loopback_only_unless_allowed(self):
        """load: no key on an address other than loopback is a ConfigError naming the way out;
        a key, ONEPASS_ALLOW_NO_KEY=1 or a bare --allow-no-key let it through."""
        for host in ("0.0.0.0", "::", "10.1.2.3"):
            with self.assertRaises(config.ConfigError, msg=host) as ctx:
                load("--host", host)
            self.assertIn("--allow-no-key", str(ctx.exception))
        self.assertEqual(load("--host", "0.0.0.0", ONEPASS_API_KEY="k").host, "0.0.0.0")
        self.assertEqual(load("--host", "0.0.0.0", ONEPASS_ALLOW_NO_KEY="1").allow_no_key, "on")
        self.assertEqual(load("--host", "0.0.0.0", "--allow-no-key").allow_no_key, "on")
        self.assertEqual(load("--host", "localhost").allow_no_key, "off")
        with self.assertRaises(config.ConfigError):
            load(ONEPASS_ALLOW_NO_KEY="maybe")

    def test_a_key_variable_must_hold_a_key(self):
        """load: ONEPASS_API_KEY of only commas and spaces is refused (it would turn auth off);
        a list of keys is kept as it is."""
        for value in (",", " , ", "  "):
            with self.assertRaises(config.ConfigError, msg=value):
                load(ONEPASS_API_KEY=value)
        self.assertEqual(load(ONEPASS_API_KEY="a,b").api_key, "a,b")

    def test_the_connection_cap_per_source(self):
        """max_connections_per_source: 0 (the default: a quarter of max_connections, at least
        16) or a positive count; negative is refused."""
        self.assertEqual(load().max_connections_per_source, 0)
        self.assertEqual(load(ONEPASS_MAX_CONNECTIONS_PER_SOURCE="8").max_connections_per_source,
                         8)
        with self.assertRaises(config.ConfigError):
            load(ONEPASS_MAX_CONNECTIONS_PER_SOURCE="-1")


if __name__ == "__main__":
    unittest.main()
