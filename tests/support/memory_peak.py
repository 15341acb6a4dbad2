"""tracemalloc's peak while a function runs: a functional bound on what a step allocates, for
the stdlib tests (not a timing)."""
import gc
import tracemalloc


def peak_of(fn) -> int:
    """The peak bytes traced while fn() runs, from a collected heap."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
