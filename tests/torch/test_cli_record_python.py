"""`hookscope-cli record-python` / `record --python`: the CLI runs the torch
bridge's `python -m hookscope.record` for the user (app/cli_python.cpp), with
the interpreter and the package found; clear errors when they are missing."""

import json
import os
import subprocess
import unittest

import torch_util as tu

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "programs", "hooks_program.py")


def run_cli(*args, env=None):
    e = dict(os.environ)
    # The CLI must find the package by itself (the build tree it was built in).
    e.pop("PYTHONPATH", None)
    e.update(env or {})
    return subprocess.run([tu.CLI, *args], capture_output=True, text=True, timeout=180, env=e)


class CliRecordPythonTest(unittest.TestCase):
    def test_record_python_runs_the_script(self):
        for verb in (["record-python", "-o"], ["record", "-o"]):
            out = os.path.join(tu.OUT, f"cli_{verb[0]}.hstrace")
            report = os.path.join(tu.OUT, f"cli_{verb[0]}.json")
            if os.path.exists(out):
                os.remove(out)
            args = [*verb, out] + (["--python"] if verb[0] == "record" else []) + [PROGRAM, "2", report]
            r = run_cli(*args)
            # The script's own arguments reach it, and its exit status comes back.
            tu.expect(r.returncode == 3, f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
            tu.expect("hookscope:" in r.stderr and out in r.stderr, f"the bridge's summary: {r.stderr}")
            fired = json.load(open(report))
            ev = tu.events(out)
            fires = [e for e in ev if e["kind"] == "hook_fire" and e.get("hook_kind") == "module_forward"]
            tu.expect(len(fires) == fired["forward"] == 2, f"forward hook fires: {len(fires)} vs {fired}")
            code, info = tu.cli("info", out)
            tu.expect(code == 0 and "python" in info, f"info: {info}")

    def test_record_python_errors_are_clear(self):
        r = run_cli("record-python", "-o", os.path.join(tu.OUT, "x.hstrace"), PROGRAM, "1", "/dev/null",
                    env={"HOOKSCOPE_PYTHON": "/nonexistent/python3"})
        tu.expect(r.returncode == 2 and "/nonexistent/python3 not found" in r.stderr
                  and "python3-torch" in r.stderr, f"missing interpreter: {r.returncode} {r.stderr}")
        # An interpreter without torch: /usr/bin/python3 without its site
        # packages (-S: no dist-packages, where Debian's torch is).
        fake = os.path.join(tu.OUT, "python-without-torch")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nexec /usr/bin/python3 -S -I \"$@\"\n")
        os.chmod(fake, 0o755)
        r = run_cli("record-python", PROGRAM, env={"HOOKSCOPE_PYTHON": fake})
        tu.expect(r.returncode == 2 and "cannot import torch" in r.stderr,
                  f"interpreter without torch: {r.returncode} {r.stderr}")
        r = run_cli("record-python", "-o", os.path.join(tu.OUT, "x.hstrace"),
                    os.path.join(tu.OUT, "no-such-script.py"))
        tu.expect(r.returncode == 2 and "no such script" in r.stderr, f"missing script: {r.stderr}")
        r = run_cli("record-python")
        tu.expect(r.returncode == 2 and "no script given" in r.stderr and "usage:" in r.stderr,
                  f"no script: {r.stderr}")
        r = run_cli("record-python", "-o", os.path.join(tu.OUT, "x.hstrace"), PROGRAM, "1",
                    os.path.join(tu.OUT, "x.json"), env={"HOOKSCOPE_PYTHONPATH": "/nonexistent"})
        tu.expect(r.returncode == 3, f"the build tree is still found after a wrong "
                  f"HOOKSCOPE_PYTHONPATH: {r.returncode} {r.stderr}")
        r = run_cli("record-python", "--help")
        tu.expect(r.returncode == 0 and "SCRIPT" in r.stdout, f"help: {r.stdout}")


if __name__ == "__main__":
    tu.main()
