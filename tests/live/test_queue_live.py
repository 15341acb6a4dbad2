"""vLLM's queue shared by what each request has cost (issue 67, recipe 6), against the session's
real vLLM (serve.sh starts it `--scheduling-policy priority`): four expensive decisions from
127.0.0.2 keep vLLM's queue full of their reads; a one-question decision from 127.0.0.1 sent
meanwhile (once vLLM's queue holds 16 of their reads) is answered 200 after vLLM computes only a
few of their reads, not the whole queue ahead of it.

Two shims on that one vLLM, side by side in the same run: one as serve.sh starts it
(`--vllm-scheduling priority`: each call carries its request's bytes sent, its own included, as its
priority), and one without (`fcfs`: every call priority 0, vLLM's queue first come, first
served, as before). The count compared is the prompt tokens vLLM computed between the cheap
request's send and its answer (vLLM's own counter): the work it waited behind. No clock is
asserted: the priority shim's count must be under half the fcfs shim's in the same run."""
import json
import secrets
import threading
import time
import urllib.request

from tests.live.test_abandon_live import engine_tokens
from tests.support import hostile_clients as hc
from tests.support.live_stack import free_port, start_shim, wait_health

def expensive() -> bytes:
    """32 choices, each read with the state after the question (no shared head), 3 times, in
    every order: hundreds of full-context reads, the recipe's shape at a size the fast model
    runs in seconds; a fresh salt opens the state, so no read is found in vLLM's prefix cache
    (another request's, or the other shim's)."""
    return json.dumps({
        "model": "jev-latest",
        "state": f"Case {secrets.token_hex(8)}. " + " ".join(
            f"Ticket {i}: the app crashes on invoice {i * 31}." for i in range(25)),
        "questions": {f"q{i}": {"type": "choice", "instructions": f"Which team handles part {i}?",
                                "criteria": {"billing": "Payments", "tech": "Bugs",
                                             "sales": None, "legal": None}} for i in range(32)},
        "kwargs": {"layout": {"question_first": True, "repeat": 3, "orders": 8,
                              "orders_as_reads": True}}}).encode()


CHEAP = json.dumps({"model": "jev-latest", "state": "Order 12 arrived broken.",
                    "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
                   ).encode()


DEEP = 16  # reads waiting in vLLM when the cheap request is sent


def waiting(vllm_url) -> float:
    """vLLM's gauge of the requests waiting in its queue."""
    text = urllib.request.urlopen(vllm_url + "/metrics", timeout=30).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:num_requests_waiting{"))


def idle(vllm_url, quiet_s: float = 2.0) -> None:
    """Until vLLM's token count has not grown for `quiet_s` (the last test's work is done)."""
    seen, since = engine_tokens(vllm_url), time.monotonic()
    while time.monotonic() - since < quiet_s:
        time.sleep(0.1)
        if (tokens := engine_tokens(vllm_url)) != seen:
            seen, since = tokens, time.monotonic()


def waited_behind(stack, scheduling: str) -> tuple[int, float]:
    """(status, prompt tokens vLLM computed while the cheap request waited) before a shim with
    `scheduling`, the four expensive requests running on it."""
    port = free_port()
    proc = start_shim(stack.vllm_url, port, args=["--vllm-scheduling", scheduling])
    threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()
    addr, socks = ("127.0.0.1", port), []
    try:
        wait_health(f"http://{addr[0]}:{port}", {"ok"}, timeout=300)
        idle(stack.vllm_url)
        for _ in range(4):
            socks.append(hc.connect(addr, hc.HOSTILE_SOURCE))
            socks[-1].sendall(hc.post(expensive(), {}))
        # the cheap one is sent once vLLM's queue holds DEEP of their reads (its gauge lags a
        # step: enough for a precondition), so both shims meet a queue as deep
        until = time.monotonic() + 300
        while waiting(stack.vllm_url) < DEEP:
            assert time.monotonic() < until, "vLLM's queue never filled with the expensive reads"
            time.sleep(0.05)
        before = engine_tokens(stack.vllm_url)
        status = hc.send(addr, hc.post(CHEAP, {}), hc.OTHER_SOURCE, 600)[0]
        return status, engine_tokens(stack.vllm_url) - before
    finally:
        for sock in socks:
            sock.close()  # their work is cut (the abandon tests hold that)
        proc.terminate()
        proc.wait(timeout=60)
        idle(stack.vllm_url)


def test_a_cheap_request_waits_behind_few_of_the_expensive_reads(stack):
    fcfs_status, fcfs = waited_behind(stack, "fcfs")
    status, prioritised = waited_behind(stack, "priority")
    print(f"prompt tokens vLLM computed while the cheap request waited: fcfs {fcfs:,.0f}, "
          f"priority {prioritised:,.0f}")
    assert (fcfs_status, status) == (200, 200)
    assert prioritised < fcfs / 2, (prioritised, fcfs)
