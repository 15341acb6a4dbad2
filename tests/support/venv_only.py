"""Imports only the venv has (torch, vLLM), for the stdlib tests that need them. In an
interpreter with neither package at all (the stdlib run, python3 -S) they are None and their
tests skip with NO_VLLM or NO_TORCH; where the packages are installed (the coverage run in the
venv) an ImportError is raised, so a symbol vLLM renamed or moved fails the run instead of
skipping the tests meant to catch it.
"""
import importlib.util

NO_VLLM = "no vLLM in this python (the stdlib run, python3 -S): the venv's run has it"
NO_TORCH = "no torch in this python (the stdlib run, python3 -S): the venv's run has it"


def installed(*packages: str) -> bool:
    return all(importlib.util.find_spec(p) is not None for p in packages)


def load(imports, *packages: str):
    """imports() (a function doing the imports and returning what they bound), or None when
    one of `packages` is not installed here; its ImportError when they all are."""
    try:
        return imports()
    except ImportError:
        if installed(*packages):
            raise
        return None
