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

// Fields the runtime never writes out of range, and orders it never breaks.
void ModelBuilder::check(EventIndex i, uint32_t source, uint16_t rank, const Event& e) {
  const auto k = static_cast<uint8_t>(e.kind);
  if (k == 0 || (k > static_cast<uint8_t>(EventKind::kSavedTensorUnpacked) &&
                 k < static_cast<uint8_t>(EventKind::kReducerConstructed)) ||
      k > static_cast<uint8_t>(EventKind::kTrainStep)) {
    malformed(MalformedKind::kUnknownEventKind, i, "an event kind this hookscope does not define");
  }
  const auto& t = m_.traces_[source];
  // Only a header a recorder wrote (it names the hookscope version) states the
  // world size; in-memory traces keep the default of 1.
  if (t.header.rank < 0 && !t.header.hookscope_version.empty() && t.header.world_size > 0 &&
      rank >= t.header.world_size) {
    malformed(MalformedKind::kRankOutOfRange, i, "the event's rank is not below the world size");
  }
  if (t.clock_went_back && !clock_back_reported_[source] && e.thread == t.clock_back_thread &&
      e.t_ns == t.clock_back_t_ns) {  // the reader merged it by time (trace/reader.h)
    malformed(MalformedKind::kTimeBackwards, i, "earlier than the thread's previous event in the file");
    clock_back_reported_[source] = 1;
  }
  if (rank_header_bad_[source]) {  // reported at the trace's first event
    malformed(MalformedKind::kRankOutOfRange, i, "the header's rank is not below its world size");
    rank_header_bad_[source] = 0;
  }
  const uint64_t thread_key = static_cast<uint64_t>(source) << 32 | e.thread;
  if (thread_key != last_thread_key_) {
    last_thread_ = &threads_[thread_key];
    last_thread_key_ = thread_key;
  }
  ThreadState& th = *last_thread_;
  if (th.last_at != kNever && e.t_ns < th.last_t) {
    malformed(MalformedKind::kTimeBackwards, i, "earlier than the thread's previous event", th.last_at);
  }
  th.last_t = e.t_ns;
  th.last_at = i;
  auto bad = [&](bool is_bad, const char* what) {
    if (is_bad) malformed(MalformedKind::kBadValue, i, what);
  };
  switch (e.kind) {
    case EventKind::kBackwardBegin: ++th.backwards; break;
    case EventKind::kApplyBegin: ++th.applies; break;
    case EventKind::kBackwardEnd:
      if (th.backwards == 0) {
        malformed(MalformedKind::kUnbalancedBackward, i, "backward_end without a backward_begin");
      } else {
        --th.backwards;
      }
      break;
    case EventKind::kApplyEnd:
      if (th.applies == 0) {
        malformed(MalformedKind::kUnbalancedBackward, i, "apply_end without an apply_begin");
      } else {
        --th.applies;
      }
      break;
    case EventKind::kHookAdded:
    case EventKind::kHookFired:
    case EventKind::kHookRemoved:
    case EventKind::kHookRemoveFailed:
      bad(e.sub >= trace::kNumHookKinds, "hook kind out of range");
      bad(e.kind == EventKind::kHookRemoved && e.arg > 3, "removal cause out of range");
      break;
    case EventKind::kOwnerCreated:
      bad(e.sub > static_cast<uint8_t>(OwnerKind::kCallSite), "owner kind out of range");
      break;
    case EventKind::kCollectiveBegin: bad(e.sub > 3, "collective op out of range"); break;
    case EventKind::kCollectiveEnd: bad(e.sub > 3, "collective status out of range"); break;
    case EventKind::kFailure: bad(e.sub > 2, "failure mode out of range"); break;
    case EventKind::kRecoveryStep: bad(e.sub > 5, "recovery step out of range"); break;
    case EventKind::kReducerDestroyed: bad(e.arg > 2, "destroy policy out of range"); break;
    default: break;
  }
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
