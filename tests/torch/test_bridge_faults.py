"""The torch bridge under faults (a recording must never change what a
program prints or how it exits, nor hang a forked child): each fault program runs
alone and under `python -m hookscope.record`, and its stdout, stderr and
exit status are the same (hookscope's own lines, each starting with
"hookscope: ", aside); a forked child never hangs or writes into the
parent's trace; a full disk is said with the true byte count; an older trace
is replaced only by a run that recorded something; hooks registered before
the recording are recorded; the first events reach the file at once.
Every wait is bounded (a hang fails the test, it does not stall ctest)."""

import os
import re
import resource
import signal
import subprocess
import sys
import time
import unittest

import torch_util as tu

PRELUDE = """\
import os, sys, torch
def step(tag):
    a = torch.ones(3, requires_grad=True)
    a.register_hook(lambda g: g * 2)
    (a * 3).sum().backward()
    print(tag, a.grad.tolist(), flush=True)
"""

# name -> (program body, exit status it ends with)
FAULTS = {
    "sys_exit_message": ("step('before')\nsys.exit('fatal: config not found')\n", 1),
    "exception": ("step('before')\nraise ValueError('bad batch ' + str(41 + 1))\n", 1),
    "exception_in_hook": (
        "a = torch.ones(2, requires_grad=True)\n"
        "def hook(g):\n    raise RuntimeError('hook failed on purpose')\n"
        "a.register_hook(hook)\n(a * 2).sum().backward()\n", 1),
    "chained_exception": (
        "try:\n    step('x')\n    {}['missing']\nexcept KeyError as e:\n"
        "    raise ValueError('while handling') from e\n", 1),
    "exit_5_at_once": ("raise SystemExit(5)\n", 5),
    "exit_0_stdout_stderr": (
        "step('out')\nprint('to stderr', file=sys.stderr)\nsys.exit(0)\n", 0),
    "os_exit": ("step('short')\nos._exit(3)\n", 3),
    # A child that ends with sys.exit(0) hung forever in the recorder's
    # finish, and wrote into the parent's file.
    "fork_child_sys_exit": (
        "step('parent before')\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    step('child')\n"
        "    sys.exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print('child status', os.waitstatus_to_exitcode(status), flush=True)\n"
        "step('parent after')\n", 0),
    "fork_child_exception": (
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    step('child')\n"
        "    raise KeyError('child failed')\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print('child status', os.waitstatus_to_exitcode(status), flush=True)\n", 0),
}


def write_program(name, body):
    path = os.path.join(tu.OUT, f"fault_{name}.py")
    with open(path, "w") as f:
        f.write(PRELUDE + body)
    return path


def run(args, timeout=180, preexec=None):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=preexec, cwd=tu.OUT)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{' '.join(args)} hung (> {timeout} s): {e.stderr}")


def own_lines_aside(text):
    """stderr without hookscope's lines: its messages, and its start warning
    (a PyTorch version that lacks a patched internal) with its source line."""
    out, skip_source = [], False
    for line in text.splitlines(True):
        if skip_source and line.startswith("  "):
            skip_source = False
            continue
        skip_source = "Warning: hookscope: " in line
        if not (line.startswith("hookscope: ") or skip_source):
            out.append(line)
    return "".join(out)


def pids_aside(text):
    return re.sub(r"pid=\d+", "pid=N", text)


FORK_WARNING = "is multi-threaded, use of fork() may lead to deadlocks"


def parent_and_child_apart(text):
    """(stderr without the parent's fork warning, the warnings): after
    os.fork() the parent warns (Python 3.12+, a threaded process) while the
    child writes its traceback to the same stderr, in either order from run
    to run (CI saw both), so the warning is compared on its own. Its source
    line ("  pid = os.fork()") follows it; the child's traceback never
    quotes that line (it fails in step())."""
    rest, warnings = [], []
    for line in pids_aside(text).splitlines(True):
        if FORK_WARNING in line:
            warnings.append(line)
        elif line.strip() == "pid = os.fork()" and warnings:
            warnings[-1] += line
        else:
            rest.append(line)
    return "".join(rest), sorted(warnings)


def recorded(script, trace, *args, preexec=None):
    return run([sys.executable, "-m", "hookscope.record", "-o", trace, script, *args],
               preexec=preexec)


class BridgeFaultsTest(unittest.TestCase):
    def test_fault_programs_end_as_they_do_alone(self):
        for name, (body, status) in FAULTS.items():
            script = write_program(name, body)
            trace = os.path.join(tu.OUT, f"fault_{name}.hstrace")
            plain = run([sys.executable, script])
            r = recorded(script, trace)
            tu.expect(plain.returncode == status, f"{name} alone: exit {plain.returncode}\n{plain.stderr}")
            tu.expect(r.returncode == plain.returncode,
                      f"{name}: exit {r.returncode} recorded, {plain.returncode} alone\n{r.stderr}")
            tu.expect(r.stdout == plain.stdout,
                      f"{name}: stdout differs\n--- alone\n{plain.stdout}--- recorded\n{r.stdout}")
            # (A pid in the program's own output, such as Python 3.12+'s fork
            # warning under 2.6's threaded autograd, differs from run to run,
            # and so does where that warning lands among the child's lines.)
            tu.expect(parent_and_child_apart(own_lines_aside(r.stderr))
                      == parent_and_child_apart(plain.stderr),
                      f"{name}: stderr differs\n--- alone\n{plain.stderr}--- recorded\n{r.stderr}")

    def test_fork_warning_is_compared_apart_from_the_child(self):
        tb = "Traceback (most recent call last):\n  File \"p.py\", line 10\nRuntimeError: x\n"
        warn = "p.py:8: DeprecationWarning: This process (pid=1) " + FORK_WARNING + " in the child.\n" \
               "  pid = os.fork()\n"
        self.assertEqual(parent_and_child_apart(tb + warn),
                         parent_and_child_apart(warn.replace("pid=1", "pid=2") + tb))
        self.assertNotEqual(parent_and_child_apart(tb + warn), parent_and_child_apart(tb))
        self.assertNotEqual(parent_and_child_apart(tb + warn),
                            parent_and_child_apart(tb.replace("x", "y") + warn))

    def test_forked_child_records_its_own_trace(self):
        # The parent's trace is whole (the child never touched it); the child's
        # is PREFIX.pid<pid>.hstrace and holds the child's backward only.
        # The parent's first backward comes after the fork: PyTorch 2.x refuses
        # autograd in a child forked after one ("Autograd-and-Fork"), recorded or not.
        script = write_program("fork_own", (
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    step('child')\n"
            "    sys.exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "step('parent 1')\n"
            "step('parent 2')\n"))
        trace = os.path.join(tu.OUT, "fork_own.hstrace")
        for f in os.listdir(tu.OUT):
            if f.startswith("fork_own."):
                os.unlink(os.path.join(tu.OUT, f))
        r = recorded(script, trace)
        tu.expect(r.returncode == 0, r.stderr)
        parent = tu.events(trace)
        tu.expect(sum(e["kind"] == "backward_begin" for e in parent) == 2,
                  f"the parent's two backwards: {[e['kind'] for e in parent]}")
        children = [f for f in os.listdir(tu.OUT) if f.startswith("fork_own.pid")]
        tu.expect(len(children) == 1 and children[0].endswith(".hstrace"),
                  f"one child trace PREFIX.pid<pid>.hstrace: {children}")
        child = tu.events(os.path.join(tu.OUT, children[0]))
        tu.expect(sum(e["kind"] == "backward_begin" for e in child) == 1, "the child's one backward")
        tu.expect(sum(e["kind"] == "hook_fire" for e in child) == 1, "the child's hook fire")
        pid = children[0][len("fork_own.pid"):-len(".hstrace")]
        tu.expect(f"child pid {pid}: " in r.stderr and children[0] in r.stderr,
                  f"the parent names the child's trace: {r.stderr}")

    def test_full_disk_is_said_and_changes_no_status(self):
        # A file-size limit is a full disk for the writer (EFBIG): the program
        # ends as it does alone, and the message gives the bytes the file holds.
        body = "for i in range(2000):\n    step(i) if i % 500 == 0 else None\n" \
               "    b = torch.ones(50, requires_grad=True)\n" \
               "    [b.register_hook(lambda g: g) for _ in range(20)]\n" \
               "    (b * 2).sum().backward()\n"
        script = write_program("disk_full", body)
        trace = os.path.join(tu.OUT, "disk_full.hstrace")
        if os.path.exists(trace):
            os.unlink(trace)
        limit = 48 * 1024

        def small_disk():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        plain = run([sys.executable, script], preexec=small_disk)
        r = recorded(script, trace, preexec=small_disk)
        tu.expect(plain.returncode == 0, plain.stderr)
        tu.expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        tu.expect(r.stdout == plain.stdout, "stdout unchanged")
        size = os.path.getsize(trace)
        tu.expect(f"({size} bytes are in the file" in r.stderr,
                  f"the message gives the file's true size {size}: {r.stderr}")
        # /dev/full: the header cannot be written; the program runs unrecorded.
        r = recorded(script, "/dev/full")
        tu.expect(r.returncode == 0 and r.stdout == plain.stdout, f"/dev/full: {r.stderr}")
        tu.expect("hookscope: not recording" in r.stderr, r.stderr)

    def test_older_trace_kept_unless_something_recorded(self):
        good = os.path.join(tu.OUT, "keep_older.hstrace")
        script = write_program("keep_older_good", "step('x')\nstep('y')\n")
        tu.expect(recorded(script, good).returncode == 0, "the first run")
        before = open(good, "rb").read()
        n = len(tu.events(good))
        empty = write_program("keep_older_empty", "raise SystemExit(5)\n")
        r = recorded(empty, good)
        tu.expect(r.returncode == 5, r.stderr)
        tu.expect(open(good, "rb").read() == before, f"the older {n}-event trace is unchanged")
        tu.expect("not written" in r.stderr, f"said on stderr: {r.stderr}")
        tu.expect(not [f for f in os.listdir(tu.OUT) if f.startswith("keep_older.hstrace.tmp")],
                  "no temporary left")

    def test_hooks_registered_before_recording_are_recorded(self):
        import torch
        import hookscope
        out = os.path.join(tu.OUT, "present_at_start.hstrace")
        calls = []
        a = torch.ones(2, requires_grad=True)
        b = (a * 2)
        a.register_hook(lambda g: calls.append("leaf") or g)
        b.register_hook(lambda g: calls.append("nonleaf") or g)
        m = torch.nn.Linear(2, 1)
        m.register_forward_hook(lambda mod, i, o: calls.append("forward"))
        with hookscope.recording(out):
            m(b).sum().backward()
        tu.expect(sorted(calls) == ["forward", "leaf", "nonleaf"], f"the hooks ran: {calls}")
        ev = tu.events(out)
        adds = {e["key"]: e for e in ev if e["kind"] == "hook_add"}
        fires = [e for e in ev if e["kind"] == "hook_fire"]
        tu.expect(len(fires) == 3, f"one fire per call: {[(e.get('hook_kind'), e['key']) for e in fires]}")
        tu.expect(all(f["key"] in adds for f in fires), "every fire's hook was announced")
        kinds = sorted(e.get("hook_kind") for e in fires)
        tu.expect(kinds == ["module_forward", "tensor_pre", "tensor_pre"], f"kinds: {kinds}")
        code, report = tu.check_json(out)
        tu.expect(not [f for f in report if f["kind"] in ("unknown_hook", "fire_of_unknown_hook")],
                  f"check proves each fire: {report}")

    def test_first_events_reach_the_file_at_once(self):
        # Killed 0.3 s after start (the writer's timed flush is 100 ms, but only
        # on the next event): what the start recorded is in the file.
        script = os.path.join(tu.OUT, "first_events.py")
        with open(script, "w") as f:
            f.write("import sys, time, hookscope\n"
                    "hookscope.start(sys.argv[1])\n"
                    "print('started', flush=True)\n"
                    "time.sleep(60)\n")
        trace = os.path.join(tu.OUT, "first_events.hstrace")
        if os.path.exists(trace):
            os.unlink(trace)
        p = subprocess.Popen([sys.executable, script, trace], stdout=subprocess.PIPE, text=True)
        try:
            tu.expect(p.stdout.readline().strip() == "started", "the program started")
            time.sleep(0.3)
        finally:
            p.kill()
            p.wait(timeout=30)
        kinds = [e["kind"] for e in tu.events(trace)]
        tu.expect("owner_created" in kinds, f"the start's events are on disk: {kinds}")


if __name__ == "__main__":
    tu.main()
