#!/usr/bin/env python3
"""Soak test for `hookscope-cli launch`: runs that fail, on purpose and not.

Each run launches a `recovery` scenario with a random number of ranks and
one of these failures, on a random rank and step:
  throw     an injected exception inside a rank's autograd hook
  kill      an injected SIGKILL of a rank (the rank kills itself)
  timeout   an injected hang: peers time out
  external  a rank process killed with SIGKILL from outside, at a random time
  external2 two rank processes killed at once (with 2 ranks: no survivor)
  interrupt the launcher stopped with SIGTERM mid-run: it must exit non-zero
  error     a rank that cannot run at all (an unreachable redis store):
            the run cannot finish and launch must say so
A run is SILENT when it fails without saying so:
  * launch exits 0 but the trace set is incomplete (a rank's last incarnation
    did not record the last training step, or a file does not read), or
  * launch exits non-zero but no trace of the set records a failure event
    (`hookscope-cli events --kind failure` is empty), or
  * launch does not exit within --run-timeout seconds (a stall).
Exit status: 0 when no run was silent, 1 otherwise.

  scripts/launch_soak.py --cli build/app/hookscope-cli --runs 50
"""
import argparse
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def rank_pids(launcher_pid):
    """The rank processes: children of the launcher."""
    try:
        out = subprocess.run(["pgrep", "-P", str(launcher_pid)], capture_output=True, text=True)
    except FileNotFoundError:
        return []
    return [int(p) for p in out.stdout.split()]


def trace_summary(cli, files):
    """(failure events, {rank: last train step}) over a trace set, or None if unreadable."""
    out = subprocess.run([cli, "events", "--kind", "failure", "--kind", "train_step",
                          "--format", "jsonl"] + files, capture_output=True, text=True)
    if out.returncode != 0:
        return None
    failures, last_step = 0, {}
    for line in out.stdout.splitlines():
        e = json.loads(line)
        if e.get("kind") == "failure":
            failures += 1
        else:
            last_step[e.get("rank", 0)] = max(last_step.get(e.get("rank", 0), -1), e.get("arg", 0))
    return failures, last_step


def one_run(args, rng, index, workdir):
    nproc = rng.choice([2, 2, 3])
    steps = rng.randint(20, 120)
    mode = rng.choice(args.modes)
    fail_rank = rng.randrange(nproc)
    fail_step = rng.randint(1, steps - 3)
    prefix = os.path.join(workdir, f"run{index}")
    cmd = [args.cli, "launch", "--nproc", str(nproc), "recovery", "--steps", str(steps),
           "--timeout-ms", "1000", "-o", prefix]
    if mode in ("throw", "kill", "timeout"):
        cmd += ["--fail-mode", mode, "--fail-rank", str(fail_rank), "--fail-step", str(fail_step)]
    else:
        # No injected failure before the last step: the only failure is ours.
        cmd += ["--fail-step", str(steps - 2), "--fail-rank", str(fail_rank)]
    if mode == "error":
        cmd += ["--store", "redis://127.0.0.1:1", "--run-id", f"soak{index}"]
    t0 = time.monotonic()
    env = dict(os.environ, HOOKSCOPE_LAUNCH_STALL_S=str(args.stall))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    killed = None
    ranks_started = True
    if mode in ("external", "external2"):
        time.sleep(rng.uniform(0.02, 0.4))
        pids = rank_pids(proc.pid)
        victims = rng.sample(pids, min(len(pids), 1 if mode == "external" else 2))
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
                killed = f"{killed},{pid}" if killed else str(pid)
            except ProcessLookupError:
                pass
    elif mode == "interrupt":
        # Mid-run means once a rank runs: before that the launcher may still be
        # loading (no handler yet, so SIGTERM kills it outright, which is loud
        # but tests nothing). Wait for a rank process, then a random delay.
        deadline = time.monotonic() + 10
        while proc.poll() is None and not rank_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        ranks_started = bool(rank_pids(proc.pid))
        time.sleep(rng.uniform(0.0, 0.25))
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            killed = "the launcher"
    try:
        out, _ = proc.communicate(timeout=args.run_timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        rc = None
    seconds = time.monotonic() - t0
    files = sorted(glob.glob(prefix + ".*hstrace"))
    summary = trace_summary(args.cli, files) if files else None
    what = f"nproc {nproc} steps {steps} {mode} rank {fail_rank} step {fail_step}"
    if killed:
        what += f" (killed {killed})"
    verdict, why = "ok", ""
    if rc is None:
        verdict, why = "SILENT", f"stalled: no exit within {args.run_timeout} s"
    elif rc == 0:
        if summary is None:
            verdict, why = "SILENT", "exit 0 but the traces do not read"
        else:
            last = summary[1]
            short = [r for r in range(nproc) if last.get(r, -1) != steps - 1]
            if short:
                verdict, why = "SILENT", f"exit 0 but ranks {short} did not record step {steps - 1}"
    elif rc < 0 and not files and not ranks_started:
        # Killed by the signal itself before it started any rank: the shell
        # reports "Terminated" and nothing ran, so nothing was lost silently.
        verdict, why = "failed-loudly", f"killed by signal {-rc} before any rank started"
    else:
        if summary is None or summary[0] == 0:
            verdict, why = "SILENT", f"exit {rc} but no trace records a failure"
        else:
            verdict = "failed-loudly"
    if verdict == "ok" and mode == "error":
        verdict, why = "SILENT", "an unreachable store, yet exit 0"
    if verdict == "ok" and mode == "interrupt" and killed:
        verdict, why = "SILENT", "interrupted, yet exit 0"
    if args.check and rc not in (None, 0):
        chk = subprocess.run([args.cli, "check"] + files, capture_output=True, text=True)
        why += f" (check exit {chk.returncode})"
    return {"what": what, "rc": rc, "seconds": seconds, "verdict": verdict, "why": why,
            "output": out}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default="build/app/hookscope-cli")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--budget", type=float, default=0, help="stop starting runs after this many seconds (0: none)")
    p.add_argument("--run-timeout", type=float, default=240)
    p.add_argument("--stall", type=int, default=60,
                   help="launch's watchdog: no rank progress for this many seconds ends the run "
                        "(HOOKSCOPE_LAUNCH_STALL_S; launch's own default is 200 s + 4 timeouts)")
    p.add_argument("--modes", default="throw,kill,timeout,external,external,external2,interrupt,error")
    p.add_argument("--check", action="store_true", help="also run `check` on failed runs")
    p.add_argument("--keep", action="store_true", help="keep the traces (printed directory)")
    args = p.parse_args()
    args.modes = args.modes.split(",")
    args.cli = os.path.abspath(args.cli)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    workdir = tempfile.mkdtemp(prefix="hookscope-soak-")
    print(f"launch soak: seed {seed}, {args.runs} run(s), traces in {workdir}", flush=True)
    t0 = time.monotonic()
    results = []
    for i in range(args.runs):
        if args.budget and time.monotonic() - t0 > args.budget:
            print(f"budget of {args.budget:.0f} s spent after {i} run(s)")
            break
        r = one_run(args, rng, i, workdir)
        results.append(r)
        print(f"[{i:2}] {r['verdict']:13} exit {r['rc']} {r['seconds']:5.1f} s  {r['what']} {r['why']}",
              flush=True)
        if r["verdict"] == "SILENT":
            print("      " + r["output"].replace("\n", "\n      "))
    silent = sum(r["verdict"] == "SILENT" for r in results)
    loud = sum(r["verdict"] == "failed-loudly" for r in results)
    print(f"{len(results)} run(s): {len(results) - silent - loud} finished, {loud} failed loudly, "
          f"{silent} silent failure(s); {time.monotonic() - t0:.0f} s")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if silent else 0


if __name__ == "__main__":
    sys.exit(main())
