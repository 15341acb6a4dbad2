"""onepass engine: per-request two-way (bidirectional) prefill for vLLM 0.32.0, as a general plugin.

Owns: the entry points vLLM calls (group `vllm.general_plugins`: `onepass_two_way` = `register`,
`onepass_batch_invariant` = `register_batch_invariant`) in every process that loads plugins;
`VLLM_PLUGINS` chooses which load.
Never: edits vLLM's files. Each hook wraps one vLLM callable and hands requests without the flag
to the original untouched, so they run exactly as on stock vLLM.
"""
PLUGIN_NAME = "onepass_two_way"
__version__ = "0.1.0"


def register() -> None:
    """Check the vLLM we were written for, then install the hooks (idempotent per process).

    An exception here is not caught by vLLM's plugin loader, so a mismatch stops vLLM's start-up
    with our message instead of serving a request the wrong way.
    """
    from . import contract, hooks
    contract.check()
    hooks.install()


def register_batch_invariant() -> None:
    """The second entry point (`onepass_batch_invariant`): CPU attention computed per query
    token, so an answer does not depend on what shares its engine step (invariant.py)."""
    from . import contract, hooks
    contract.check()
    hooks.install(hooks.INVARIANT_HOOKS)
