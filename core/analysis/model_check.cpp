// The load pass's checks (Note [Malformed traces]): what a trace cannot
// claim, leaf chains kept loop-free, and the per-event budget of Note [Model
// memory bound]. model_build.cpp calls these while it walks the timeline.

#include <vector>

#include "analysis/model_builder.h"

namespace hookscope::analysis {

using trace::Event;
using trace::EventKind;
using trace::OwnerKind;

// The last AccumulateGrad of f's leaf. link() keeps leaf chains free of
// loops; hints (path compression) keep this near O(1) on long chains.
FunctionIndex ModelBuilder::latest(FunctionIndex f) {
  auto step = [&](FunctionIndex x) {
    return latest_hint_[x] != x ? latest_hint_[x] : m_.functions_[x].next;
  };
  FunctionIndex r = f;
  for (FunctionIndex n = step(r); n != kNoIndex; n = step(r)) r = n;
  for (FunctionIndex x = f; x != r;) {
    const FunctionIndex n = step(x);
    latest_hint_[x] = r;
    x = n;
  }
  return r;
}

// previous -> f in a leaf's chain of AccumulateGrads, when that keeps the
// chain a simple line: previous is its chain's last, f a new one.
bool ModelBuilder::link(FunctionIndex previous, FunctionIndex f, EventIndex at) {
  FunctionInfo& p = m_.functions_[previous];
  FunctionInfo& fi = m_.functions_[f];
  if (p.next != kNoIndex || fi.previous != kNoIndex || fi.next != kNoIndex) {
    malformed(MalformedKind::kLeafLink, at,
              "names a previous AccumulateGrad that already has a successor",
              p.next != kNoIndex ? m_.functions_[p.next].created_at : p.created_at);
    return false;
  }
  fi.previous = previous;
  p.next = f;
  p.flags |= trace::kNodeIsLeafAccumulator;
  return true;
}

void ModelBuilder::malformed(MalformedKind kind, EventIndex at, const char* what,
                             EventIndex related) {
  m_.malformations_.push_back(Malformation{kind, at, related, what});
}

bool ModelBuilder::take_slots(uint64_t n, EventIndex at, const char* what) {
  if (n <= slots_left_) {
    slots_left_ -= n;
    return true;
  }
  malformed(MalformedKind::kBadValue, at, what);
  return false;
}

// Autograd graphs have no cycles: a next-edge loop is reported, once per
// loop-closing edge, by an iterative depth-first walk (O(Functions + edges)).
void ModelBuilder::find_edge_cycles() {
  const auto& fns = m_.functions_;
  std::vector<uint8_t> color(fns.size(), 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::pair<FunctionIndex, uint32_t>> stack;  // (Function, next edge to try)
  for (FunctionIndex root = 0; root < fns.size(); ++root) {
    if (color[root] != 0) continue;
    stack.emplace_back(root, fns[root].edges_begin);
    color[root] = 1;
    while (!stack.empty()) {
      auto& [f, next] = stack.back();
      if (next >= fns[f].edges_end) {
        color[f] = 2;
        stack.pop_back();
        continue;
      }
      const EdgeInfo& edge = m_.edges_[next++];
      if (color[edge.to] == 1) {
        malformed(MalformedKind::kEdgeCycle, edge.at, "this next-edge closes a cycle",
                  fns[edge.to].created_at);
      } else if (color[edge.to] == 0) {
        color[edge.to] = 1;
        stack.emplace_back(edge.to, fns[edge.to].edges_begin);
      }
    }
  }
}

}  // namespace hookscope::analysis
