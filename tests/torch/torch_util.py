"""Helpers for the torch bridge tests (tests/torch/, unittest.TestCase classes
run by main() below): run ranks as processes (gloo on 127.0.0.1, a free port,
every wait bounded), and run hookscope-cli."""

import datetime
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import traceback

CLI = os.environ.get("HOOKSCOPE_CLI", "hookscope-cli")
OUT = os.environ.get("HOOKSCOPE_TEST_OUT", "/tmp/hookscope-torch-tests")
os.makedirs(OUT, exist_ok=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn, rank, world, port, args, errors):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    try:
        fn(rank, world, *args)
    except BaseException:
        errors.put(f"rank {rank}:\n{traceback.format_exc()}")
        raise


def init_group(rank, world):
    import torch.distributed as dist
    # PyTorch 2.x's TCPStore (made here by the tcp:// init) uses libuv by
    # default, and Debian's 2.6 is built without it ("use_libuv was requested
    # but PyTorch was built without libuv support"): the classic TCPStore,
    # which is also 1.13's only one (there the variable means nothing).
    os.environ["USE_LIBUV"] = "0"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}",
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=30))


def run_ranks(fn, world=2, args=(), timeout=90):
    """Runs fn(rank, world, *args) in `world` processes; fails the test when
    one fails or they take longer than `timeout` seconds (then kills them).
    Once more on another port when the one picked was taken meanwhile (tests
    run in parallel)."""
    try:
        _run_ranks(fn, world, args, timeout)
    except AssertionError as e:
        if "Address already in use" not in str(e):
            raise
        _run_ranks(fn, world, args, timeout)


_launched = set()


def run_ranks_once(fn, world=2, args=(), timeout=90):
    """run_ranks, once per (fn, world, args) in this process: tests that read
    the same run (its traces, what it computed) share it."""
    key = (fn.__module__, fn.__name__, world, args)
    if key not in _launched:
        run_ranks(fn, world, args, timeout)
        _launched.add(key)


def _run_ranks(fn, world, args, timeout):
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_child, args=(fn, r, world, port, args, errors))
             for r in range(world)]
    for p in procs:
        p.start()
    deadline = timeout
    import time
    start = time.monotonic()
    for p in procs:
        p.join(max(1.0, deadline - (time.monotonic() - start)))
    hung = [p for p in procs if p.is_alive()]
    for p in hung:
        p.kill()
        p.join(5)
    msgs = []
    while not errors.empty():
        msgs.append(errors.get())
    if hung:
        raise AssertionError(f"{len(hung)} rank(s) still running after {timeout} s: killed\n"
                             + "\n".join(msgs))
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    if bad:
        raise AssertionError(f"ranks failed (exit codes {bad}):\n" + "\n".join(msgs))


def maybe_recording(path):
    """hookscope.recording(path), or nothing when path is None: the same
    program unrecorded, for the tests that recording changes nothing."""
    if path is None:
        import contextlib
        return contextlib.nullcontext()
    import hookscope
    return hookscope.recording(path)


def digest(losses, params):
    """What a program computed, bit for bit: each loss (a float or a tensor)
    and each named parameter as the hex of its bytes (sha256 for tensors)."""
    import hashlib
    import torch

    def bits(t):
        if isinstance(t, torch.Tensor):
            return hashlib.sha256(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()
        return float(t).hex()
    return {"losses": [bits(x) for x in losses], "params": {n: bits(p) for n, p in params}}


def expect_same_result(plain, recorded, what):
    """Recording never changes what the program computes (the bridge only observes)."""
    expect(plain["losses"], f"{what}: no losses were collected")
    expect(plain == recorded, f"{what}: recording changed the result:\n plain    {plain}\n"
                              f" recorded {recorded}")


def cli(*args, check=None):
    """Runs hookscope-cli; returns (exit code, stdout)."""
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check is not None and r.returncode != check:
        raise AssertionError(f"hookscope-cli {' '.join(map(str, args))}: exit {r.returncode}, "
                             f"wanted {check}\n{r.stdout}\n{r.stderr}")
    return r.returncode, r.stdout


def events(path):
    """The trace's events as dicts (hookscope-cli export --format jsonl)."""
    out = os.path.join(OUT, os.path.basename(path) + ".jsonl")
    cli("export", path, "--format", "jsonl", "-o", out, check=0)
    with open(out) as f:
        return [json.loads(line) for line in f if line.strip()]


def check_json(path):
    code, out = cli("check", path, "--format", "json")
    return code, json.loads(out)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    """Runs the calling file's unittest tests (`python3 test_x.py [-k PATTERN ...]`,
    unittest's own options) and exits as ctest reads it: 0 when they pass, 1 when
    one fails or none ran, 77 (SKIP_RETURN_CODE) when every one was skipped, e.g.
    by a setUpModule that finds a PyTorch without the API it tests."""
    import unittest
    result = unittest.main(module="__main__", exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(77)
    sys.exit(0 if result.testsRun else 1)
