"""PyTorch #25723 through `hookscope-cli check`: the fire of a module full
backward hook after its removal is reported as a stale_fire finding that
points at the fire. Depends on the analysis's support for fires after
removal and for node-0 module hooks (Note [Module hooks in traces])."""

import os
import unittest

import torch_util as tu
from test_module_hooks import record_25723


class CheckStaleFireTest(unittest.TestCase):
    def test_25723_check_reports_stale_fire(self):
        out = os.path.join(tu.OUT, "check_stale_fire.hstrace")
        record_25723(out)
        ev = tu.events(out)
        fire = next(e for e in ev if e["kind"] == "hook_fire" and e.get("hook_kind") == "module_backward")
        code, report = tu.check_json(out)
        stale = [f for f in report if f["kind"] == "stale_fire"]
        tu.expect(code == 1 and stale, f"check should report the stale fire: {report}")
        tu.expect(any(fire["index"] in f.get("events", []) or f.get("at") == fire["index"]
                      for f in stale), f"the finding points at the fire #{fire['index']}: {stale}")


if __name__ == "__main__":
    tu.main()
