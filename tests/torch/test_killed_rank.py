"""A rank killed with SIGKILL mid-run keeps its events (Note [Live chunks
reach the file]): programs/ddp_steps.py on 2 ranks by hand, each step taking
0.3 s, rank 1 kills itself at step 2. Its trace holds both backwards it ran,
every hook fire and its collectives (emitted by Gloo's threads, which then
block), under its own name; `info` says it ended without its footer. (Before
the writer copied live chunks it held one event, the rest of the run was
still in the process's buffers when it died.)"""

import glob
import os
import unittest

import torch_util as tu
from test_gui import record_ddp_steps


def kinds(events, kind):
    return [e for e in events if e["kind"] == kind]


def fires_in_first_backwards(events, n):
    """Hook fires from the first backward_begin up to the (n+1)-th."""
    begins = [e["index"] for e in kinds(events, "backward_begin")]
    end = begins[n] if len(begins) > n else len(events)
    return [e for e in events if e["kind"] == "hook_fire" and begins[0] <= e["index"] < end]


class KilledRankTest(unittest.TestCase):
    def test_killed_rank_keeps_its_events(self):
        # The default 30 s timeout: it bounds the rendezvous too, and under load
        # one rank's `import torch` may finish seconds after the other's (with
        # 3 s both ranks once gave up before training). Rank 0 fails at once
        # anyway: rank 1's death resets its connection.
        rank0, rank1 = record_ddp_steps("killed_rank", KILL_RANK1_AT=2, STEP_SLEEP_S=0.3)
        tu.expect(rank1.endswith("killed_rank.rank1.hstrace"), rank1)
        left = glob.glob(os.path.join(tu.OUT, "killed_rank.*tmp-*"))
        tu.expect(not left, f"a temporary file hides a rank's trace: {left}")

        dead, alive = tu.events(rank1), tu.events(rank0)
        # Steps 0 and 1 ran whole on rank 1 (0.3 s and more before the kill).
        tu.expect(len(kinds(dead, "backward_begin")) == 2 and len(kinds(dead, "backward_end")) == 2,
                  f"rank 1's two backwards: {[e['describe'] for e in kinds(dead, 'backward_begin')]}"
                  f" of {len(dead)} events")
        fires, peer = fires_in_first_backwards(dead, 2), fires_in_first_backwards(alive, 2)
        tu.expect(len(fires) >= 8 and len(fires) == len(peer),
                  f"rank 1 fired {len(fires)} hooks in its two backwards, rank 0 {len(peer)}")
        tu.expect(len(kinds(dead, "mark_ready")) == len(fires), "every fire marked its parameter ready")
        done = [e for e in kinds(dead, "collective_end") if e["index"] > kinds(dead, "backward_begin")[0]["index"]]
        tu.expect(len(done) >= 2, f"the gradients' allreduces on Gloo's threads: {len(done)}")

        code, info = tu.cli("info", rank1)
        tu.expect(code == 0, info)
        tu.expect("the recording ended without its footer: the process was killed or crashed at about t=" in info
                  and f"{len(dead)} events recovered" in info, f"info says rank 1 was killed: {info}")


if __name__ == "__main__":
    tu.main()
