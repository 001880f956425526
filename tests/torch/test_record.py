"""The torch bridge on a single process: `python -m hookscope.record` and
`with hookscope.recording(...)` on real PyTorch programs, read back with
hookscope-cli (info, check, events, state)."""

import json
import os
import signal
import subprocess
import sys
import unittest

import torch_util as tu

HERE = os.path.dirname(os.path.abspath(__file__))


def record(script, out, *args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "hookscope.record", "-o", out, script, *args],
                          capture_output=True, text=True, timeout=120, env=env)


class RecordTest(unittest.TestCase):
    def test_record_module_cli(self):
        out = os.path.join(tu.OUT, "hooks_program.hstrace")
        report = os.path.join(tu.OUT, "hooks_program.json")
        r = record(os.path.join(HERE, "programs", "hooks_program.py"), out, "3", report)
        tu.expect(r.returncode == 3, f"the script's exit status comes through: {r.returncode} {r.stderr}")
        fired = json.load(open(report))
        code, info = tu.cli("info", out)
        tu.expect(code == 0 and "v1.2" in info, f"info: {info}")
        ev = tu.events(out)
        created = [e for e in ev if e["kind"] == "node_created"]
        tu.expect(any(e.get("text") == "AccumulateGrad" for e in created), "AccumulateGrad Nodes")
        text = json.dumps([e.get("function") for e in created])
        for name in ("0.weight [8, 4]", "0.bias [8]", "2.weight [2, 8]", "2.bias [2]"):
            tu.expect(f"AccumulateGrad ({name})" in text, f"parameter label {name} missing: {text[:800]}")
        edges = [e for e in ev if e["kind"] == "node_edge"]
        tu.expect(len(edges) >= 3 * 6, f"edges of 3 graphs: {len(edges)}")

        def hooks(kind, what):
            return [e for e in ev if e["kind"] == what and e.get("hook_kind") == kind]
        # Every fire the program counted is in the trace, and no more.
        tu.expect(len(hooks("tensor_pre", "hook_fire")) == fired["weight"] + fired["output"],
                  f"tensor hook fires: {len(hooks('tensor_pre', 'hook_fire'))} vs {fired}")
        tu.expect(len(hooks("post", "hook_fire")) == fired["post"], "Node post hook fires")
        tu.expect(len(hooks("pre", "hook_fire")) == fired["pre"], "Node pre hook fires")
        tu.expect(len(hooks("module_forward", "hook_fire")) == fired["forward"] == 3, "forward hook fires")
        tu.expect(len(hooks("module_backward", "hook_fire")) == fired["backward"] == 3,
                  "full backward hook fires")
        tu.expect(len(hooks("retain_grad", "hook_add")) == 3, "retain_grad hooks")
        tu.expect(len(hooks("retain_grad", "hook_fire")) == 3, "retain_grad fires (a C++ pre hook)")
        tu.expect(len(hooks("post", "hook_remove")) == 3, "Node post hooks removed by handle")
        tu.expect(len(hooks("tensor_pre", "hook_remove")) == 1, "the weight hook removed once")
        tu.expect(fired["weight"] == 1, f"the weight hook ran only in step 0: {fired}")
        # Module hooks: node 0 for add/remove/forward fires, the
        # BackwardHookFunction Node for full backward fires.
        for e in hooks("module_forward", "hook_fire"):
            tu.expect(e.get("node", 0) == 0, f"forward fire on node 0: {e}")
        for e in hooks("module_backward", "hook_fire"):
            tu.expect("BackwardHookFunctionBackward" in e.get("function", ""),
                      f"full backward fire names its Node: {e}")
        # Graph Nodes are released as PyTorch frees them.
        tu.expect(sum(e["kind"] == "node_released" for e in ev) >= 2 * 6, "released Nodes")
        code, report_text = tu.cli("check", out)
        tu.expect(code in (0, 1), f"check runs: {report_text}")
        n = len(ev)
        code, state = tu.cli("state", out, "--at", n - 1)
        tu.expect(code == 0, f"state: {state}")

    def test_recording_changes_nothing(self):
        # The program alone and under `python -m hookscope.record`: the same
        # losses and parameters, bit for bit, and the same exit status.
        prog = os.path.join(HERE, "programs", "hooks_program.py")
        plain_report = os.path.join(tu.OUT, "hooks_program.plain.json")
        plain = subprocess.run([sys.executable, prog, "3", plain_report], capture_output=True,
                               text=True, timeout=120)
        tu.expect(plain.returncode == 3, f"the program alone: {plain.returncode} {plain.stderr}")
        report = os.path.join(tu.OUT, "hooks_program.recorded.json")
        r = record(prog, os.path.join(tu.OUT, "hooks_program.same.hstrace"), "3", report)
        tu.expect(r.returncode == 3, f"recorded: {r.returncode} {r.stderr}")
        tu.expect_same_result(json.load(open(plain_report))["result"], json.load(open(report))["result"],
                              "hooks_program.py")

    def test_exit_status_and_message_come_through(self):
        # However a script ends, recorded it ends the same way: status and message.
        # (sys.exit(3): test_record_module_cli.)
        endings = {"raise ValueError('bad batch')": (1, "ValueError: bad batch"),
                   "sys.exit('usage: train.py DATA')": (1, "usage: train.py DATA"),
                   "os._exit(5)": (5, "")}
        for i, (ending, (code, said)) in enumerate(endings.items()):
            script = os.path.join(tu.OUT, f"ending{i}.py")
            with open(script, "w") as f:
                f.write("import os, sys, torch\n"
                        "a = torch.ones(2, requires_grad=True)\n"
                        "(a * 2).sum().backward()\n"
                        f"{ending}\n")
            plain = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60)
            r = record(script, os.path.join(tu.OUT, f"ending{i}.hstrace"))
            tu.expect(plain.returncode == code, f"{ending} alone: {plain.returncode} {plain.stderr}")
            tu.expect(r.returncode == code, f"{ending} recorded: exit {r.returncode}, wanted {code}\n"
                                            f"{r.stderr}")
            tu.expect(said in r.stderr and said in plain.stderr, f"{ending}: '{said}' not said: {r.stderr}")

    def test_retain_grad_then_in_place_is_clean(self):
        # PyTorch 2.x moves a retained tensor's retain_grad hook to the grad_fn
        # of an in-place op (Note [retain_grad on 2.x]): not a collateral removal.
        import torch
        import hookscope
        out = os.path.join(tu.OUT, "retain_in_place.hstrace")
        with hookscope.recording(out):
            x = torch.ones(3, requires_grad=True)
            y = x * 2
            y.retain_grad()
            y.mul_(3)
            y.sum().backward()
        tu.expect(y.grad.tolist() == [1.0, 1.0, 1.0], f"PyTorch retained it: {y.grad}")
        ev = tu.events(out)
        adds = [e for e in ev if e["kind"] == "hook_add" and e.get("hook_kind") == "retain_grad"]
        # Every add names the hook's owner, the move's too (the bridge once
        # wrote the snapshot's owner on the new Node's add: nodes.cpp diff_hooks).
        tu.expect(adds and all(e.get("owner_label") == "retain_grad" for e in adds), f"retain_grad's hook: {adds}")
        if int(torch.__version__.split(".")[0]) >= 2:
            tu.expect(len(adds) == 2, f"added, then moved to mul_'s Node: {adds}")
            tu.expect(adds[0]["node"] != adds[1]["node"], f"two Nodes: {adds}")
        code, report = tu.check_json(out)
        tu.expect(code == 0, f"retain_grad then an in-place op is clean: {report}")

    def test_recording_context_and_pause(self):
        import torch
        import hookscope
        out = os.path.join(tu.OUT, "context.hstrace")
        a = torch.ones(3, requires_grad=True)
        with hookscope.recording(out) as rec:
            h = a.register_hook(lambda g: g)
            (a * 2).sum().backward()
            hookscope.pause()
            (a * 3).sum().backward()   # not recorded
            hookscope.resume()
            h.remove()
            torch.autograd.grad((a * 4).sum(), a)   # recorded, as autograd::grad (sub 1)
        tu.expect(rec.stats["events"] > 0, "stats")
        ev = tu.events(out)
        kinds = [e["kind"] for e in ev]
        begins = [e for e in ev if e["kind"] == "backward_begin"]
        tu.expect([e.get("sub", 0) for e in begins] == [0, 1], f"paused backward not recorded: {kinds}")
        tu.expect(kinds.count("hook_fire") == 1 and kinds.count("hook_remove") == 1, f"{kinds}")
        # After the recording, nothing is patched: hooks work as before.
        h2 = a.register_hook(lambda g: g)
        tu.expect(type(h2).__name__ == "RemovableHandle" and not hasattr(h2, "_hookscope"), "unpatched")
        h2.remove()

    def test_killed_program_leaves_readable_trace(self):
        out = os.path.join(tu.OUT, "killed.hstrace")
        script = os.path.join(tu.OUT, "killed.py")
        with open(script, "w") as f:
            # The writer thread encodes and writes chunks behind the program; on
            # a loaded machine it may lag, so the program waits (at most 60 s)
            # until some chunks are on disk, then dies: what was written survives.
            f.write("import os, signal, sys, time, torch\n"
                    "a = torch.ones(4, requires_grad=True)\n"
                    "for i in range(400):\n"
                    "    (a * i).sum().backward()\n"
                    "deadline = time.time() + 60\n"
                    "while os.path.getsize(sys.argv[1]) < 8192 and time.time() < deadline:\n"
                    "    time.sleep(0.05)\n"
                    "os.kill(os.getpid(), signal.SIGKILL)\n")
        r = record(script, out, out)
        tu.expect(r.returncode == -signal.SIGKILL, f"killed: {r.returncode} {r.stderr}")
        code, info = tu.cli("info", out)
        tu.expect(code == 0, f"a killed run's trace is readable: {info}")
        ev = tu.events(out)
        # The writer also flushes on a timer, so the chunks on disk need not be
        # full ones (3,120 events in 8 KiB were seen under load): whatever was
        # written survives, thousands of events, not a 4,096-event chunk.
        tu.expect(len(ev) >= 1000, f"the chunks on disk survive the kill: {len(ev)} events")

    def test_bad_use_gives_clear_errors(self):
        import hookscope
        try:
            hookscope.stop()
            raise AssertionError("stop() without a recording should fail")
        except RuntimeError as e:
            tu.expect("no recording is running" in str(e), str(e))
        r = record(os.path.join(tu.OUT, "no_such_script.py"), os.path.join(tu.OUT, "x.hstrace"))
        tu.expect(r.returncode != 0 and "no such script" in r.stderr, r.stderr)
        try:
            with hookscope.recording("/nonexistent-dir/x.hstrace"):
                pass
            raise AssertionError("an unwritable path should fail")
        except RuntimeError as e:
            tu.expect("/nonexistent-dir/x.hstrace" in str(e), str(e))

    def test_missing_internals_are_named_not_fatal(self):
        # As with a PyTorch whose internals differ from 1.13: the part that
        # cannot be recorded is named, the rest is recorded.
        import warnings
        import torch
        import torch.utils.hooks as hooks_mod
        import hookscope
        saved = hooks_mod.BackwardHook._set_user_hook
        del hooks_mod.BackwardHook._set_user_hook
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = os.path.join(tu.OUT, "missing.hstrace")
                with hookscope.recording(out):
                    a = torch.ones(2, requires_grad=True)
                    a.register_hook(lambda g: g)
                    (a * 2).sum().backward()
        finally:
            hooks_mod.BackwardHook._set_user_hook = saved
        said = " ".join(str(w.message) for w in caught)
        tu.expect("module full backward hook" in said, f"the warning names what is missing: {said}")
        kinds = [e["kind"] for e in tu.events(out)]
        tu.expect(kinds.count("hook_fire") == 1, f"the rest is recorded: {kinds}")


if __name__ == "__main__":
    tu.main()
