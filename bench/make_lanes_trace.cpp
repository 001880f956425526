// Writes the trace the Lanes panel's frame time is measured on:
// H hooks (default 100k) of 24 owners on 2000 AccumulateGrads, added over the
// run, two thirds removed by key, half the owners destroyed midway with
// their hooks left on (red lanes), and every attached hook firing once per
// training step (stale fires after the deaths). Then:
//   xvfb-run -a -s "-screen 0 1600x1000x24" build/app/hookscope lanes.hstrace --panel lanes --bench-frames 300
//
//   make_lanes_trace OUT.hstrace [HOOKS=100000] [STEPS=40]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "testing/write_trace.h"

using namespace hookscope;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_lanes_trace OUT.hstrace [HOOKS=100000] [STEPS=40]\n");
    return 2;
  }
  const std::string out = argv[1];
  const long hooks = argc > 2 ? std::atol(argv[2]) : 100000;
  const long steps = argc > 3 ? std::atol(argv[3]) : 40;
  if (hooks < 100 || steps < 2) {
    std::fprintf(stderr, "make_lanes_trace: HOOKS >= 100 and STEPS >= 2, please\n");
    return 2;
  }
  constexpr int kOwners = 24, kFunctions = 2000;
  analysis::TraceBuilder b;
  std::vector<uint32_t> owners;
  for (int o = 0; o < kOwners; ++o) owners.push_back(b.owner(trace::OwnerKind::kUser, "probe " + std::to_string(o + 1)));
  std::vector<uint64_t> functions;
  for (int f = 0; f < kFunctions; ++f) functions.push_back(b.accumulator("p" + std::to_string(f) + ".weight [64]"));
  struct Live {
    uint64_t node, key;
    uint32_t owner;
    bool on = true;
  };
  std::vector<Live> live;
  const long per_step = hooks / steps;
  uint64_t rng = 12345;
  auto next = [&] { return rng = rng * 6364136223846793005ull + 1442695040888963407ull, rng >> 33; };
  for (long s = 0; s < steps; ++s) {
    for (long i = 0; i < per_step; ++i) {
      const uint64_t node = functions[next() % kFunctions];
      const uint32_t owner = owners[next() % kOwners];
      live.push_back({node, b.add_hook(node, trace::HookKind::kPost, owner), owner});
    }
    // One fire per attached hook in a sample of them (a backward pass).
    for (Live& h : live) {
      if (h.on && next() % 8 == 0) b.fire(h.node, h.key, trace::HookKind::kPost, h.owner);
    }
    // Two thirds of this step's hooks removed again by their owner.
    for (size_t i = live.size() - static_cast<size_t>(per_step); i < live.size(); ++i) {
      if (live[i].on && next() % 3 != 0) {
        b.remove(live[i].node, live[i].key, trace::HookKind::kPost, live[i].owner, live[i].owner);
        live[i].on = false;
      }
    }
    if (s == steps / 2) {
      for (int o = 0; o < kOwners; o += 2) b.destroy_owner(owners[o]);  // their hooks stay: leaks
    }
  }
  trace::TraceData data = b.take();
  const size_t num_events = data.events.size();
  testing::write_trace_file(std::move(data), out, "make_lanes_trace " + std::to_string(hooks) + " hooks");
  std::printf("wrote %s: %ld hooks, %zu events\n", out.c_str(), hooks, num_events);
  return 0;
}
