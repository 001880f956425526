// Replay: the state at any event equals a brute-force replay from event 0.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"
#include "scenarios/autograd_demo.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"
#include "trace/recorder.h"
#include "trace/strings.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::EventKind;
using trace::HookKind;

namespace {

using Id = std::pair<uint32_t, uint64_t>;  // (source, raw id)
using HookList = std::vector<std::pair<uint64_t, uint32_t>>;  // (key, fires)

// What a state says, in raw ids, so that two replays can be compared.
struct Canon {
  std::map<Id, std::array<HookList, trace::kNumHookKinds>> functions;
  std::map<Id, HookList> tensor_hooks;  // by the leaf's last AccumulateGrad
  std::set<Id> live_owners;
  std::map<Id, std::tuple<int64_t, std::vector<uint32_t>, bool>> reducers;
  bool operator==(const Canon&) const = default;
};

Canon canon_of(const Model& m, const State& st) {
  Canon c;
  auto entry = [&](const HookAt& h) {
    return std::make_pair(m.hooks()[h.hook].key, h.fires);
  };
  for (const FunctionAt& f : st.functions) {
    const FunctionInfo& info = m.functions()[f.function];
    auto& lists = c.functions[{info.source, info.id}];
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      for (const HookAt& h : f.hooks[k]) lists[k].push_back(entry(h));
    }
  }
  for (const HookAt& h : st.tensor_hooks) {
    const FunctionInfo& info = m.functions()[h.function];
    c.tensor_hooks[{info.source, info.id}].push_back(entry(h));
  }
  for (auto& [id, list] : c.tensor_hooks) std::sort(list.begin(), list.end());
  for (const OwnerAt& o : st.owners) {
    if (o.live) c.live_owners.insert({m.owners()[o.owner].source, m.owners()[o.owner].id});
  }
  for (const ReducerAt& r : st.reducers) {
    const OwnerInfo& o = m.owners()[m.reducers()[r.reducer].owner];
    c.reducers[{o.source, o.id}] = {r.backward, r.ready_order, r.finalized};
  }
  return c;
}

// The brute-force replay: every event applied to maps, with the semantics
// of trace/event.h and Note [Leaf hooks live on the tensor], independently
// of the model's interval machinery. Traces without unannounced Functions.
class Reference {
 public:
  void apply(const Model& m, size_t i) {
    const trace::Event e = m.event(i);
    const uint32_t s = m.source(i);
    const Id node{s, e.node};
    switch (e.kind) {
      case EventKind::kNodeCreated: {
        Fn& fn = c_.functions[node];
        fn = {};
        leaf_[node] = e.sub & trace::kNodeIsLeafAccumulator;
        if (!e.key) break;
        const Id prev{s, e.key};
        leaf_[prev] = true;
        if (auto it = c_.tensor_hooks.find(prev); it != c_.tensor_hooks.end()) {
          for (auto& h : it->second) fn[kind_.at({s, h.first})].push_back(h);
          c_.tensor_hooks.erase(it);
        }
        if (auto it = c_.functions.find(prev); it != c_.functions.end()) {
          for (int k : {0, 4}) {
            for (auto& h : it->second[k]) fn[k].push_back(h);
            it->second[k].clear();
          }
        }
        break;
      }
      case EventKind::kNodeReleased: {
        auto it = c_.functions.find(node);
        if (it == c_.functions.end()) break;
        for (int k = 0; k < trace::kNumHookKinds; ++k) {
          const bool survives = k == 4 || (k == 0 && leaf_[node]);
          for (auto& h : it->second[k]) {
            if (survives) c_.tensor_hooks[node].push_back(h);
          }
        }
        if (auto t = c_.tensor_hooks.find(node); t != c_.tensor_hooks.end()) {
          std::sort(t->second.begin(), t->second.end());
        }
        c_.functions.erase(it);
        break;
      }
      case EventKind::kHookAdded:
        kind_[{s, e.key}] = e.sub;
        c_.functions.at(node)[e.sub].push_back({e.key, 0});
        break;
      case EventKind::kHookFired:
        for_hook(s, e.key, [](HookList& l, size_t k) { ++l[k].second; });
        break;
      case EventKind::kHookRemoved:
        for_hook(s, e.key, [](HookList& l, size_t k) { l.erase(l.begin() + k); });
        break;
      case EventKind::kOwnerCreated:
        c_.live_owners.insert({s, e.owner});
        break;
      case EventKind::kOwnerDestroyed:
        c_.live_owners.erase({s, e.owner});
        break;
      case EventKind::kReducerConstructed:
        c_.reducers[{s, e.owner}] = {-1, {}, false};
        break;
      case EventKind::kReducerDestroyed: {
        c_.live_owners.erase({s, e.owner});
        auto& r = c_.reducers[{s, e.owner}];
        r = {std::get<0>(r), {}, false};  // no backward in progress any more
        break;
      }
      case EventKind::kPrepareForBackward:
        c_.reducers[{s, e.owner}] = {static_cast<int64_t>(e.arg), {}, false};
        break;
      case EventKind::kMarkReady:
        std::get<1>(c_.reducers[{s, e.owner}]).push_back(static_cast<uint32_t>(e.arg));
        break;
      case EventKind::kBucketsFinalized:
        std::get<2>(c_.reducers[{s, e.owner}]) = true;
        break;
      default:
        break;
    }
  }
  const Canon& canon() const { return c_; }

 private:
  using Fn = std::array<HookList, trace::kNumHookKinds>;
  template <class F>
  void for_hook(uint32_t s, uint64_t key, F f) {
    auto visit = [&](HookList& l) {
      for (size_t k = 0; k < l.size(); ++k) {
        if (l[k].first == key) {
          f(l, k);
          return true;
        }
      }
      return false;
    };
    for (auto& [id, fn] : c_.functions) {
      if (id.first != s) continue;
      for (auto& l : fn) {
        if (visit(l)) return;
      }
    }
    for (auto& [id, l] : c_.tensor_hooks) {
      if (id.first == s && visit(l)) {
        if (l.empty()) c_.tensor_hooks.erase(id);
        return;
      }
    }
  }
  Canon c_;
  std::map<Id, bool> leaf_;
  std::map<Id, uint8_t> kind_;
};

trace::TraceData record_demo(int steps, uint64_t seed = 0) {
  trace::MemoryRecorder rec;
  rec.start();
  scenarios::run_autograd_demo({steps, seed});
  return rec.take_trace();
}

// Checks state_at at `samples` random indices (and the ends) against the reference.
void check_against_reference(const Model& m, size_t samples, uint64_t seed) {
  for (const FunctionInfo& f : m.functions()) REQUIRE(f.announced);
  std::mt19937_64 rng(seed);
  std::vector<size_t> at = {0, m.num_events() - 1};
  for (size_t k = 0; k < samples; ++k) at.push_back(rng() % m.num_events());
  std::sort(at.begin(), at.end());
  Reference ref;
  size_t next = 0;
  for (size_t i : at) {
    for (; next <= i; ++next) ref.apply(m, next);
    CAPTURE(i);
    const Canon got = canon_of(m, m.state_at(i));
    CHECK(got.functions == ref.canon().functions);
    CHECK(got.tensor_hooks == ref.canon().tensor_hooks);
    CHECK(got.live_owners == ref.canon().live_owners);
    CHECK(got.reducers == ref.canon().reducers);
  }
}

}  // namespace

TEST_CASE("state_at equals a replay from 0 on an autograd-demo trace") {
  Model m(record_demo(6));
  REQUIRE(m.num_events() > 300);
  // Its AccumulateGrads are freed with each step's graph and re-created.
  CHECK(std::count_if(m.functions().begin(), m.functions().end(),
                      [](const FunctionInfo& f) { return f.previous != kNoIndex; }) >= 5);
  // Small blocks, so that seeks cross many checkpoints.
  Model small(record_demo(6, 1), ModelOptions{64, 64.0});
  CHECK(small.num_checkpoints() > 5);
  check_against_reference(m, 150, 1);
  check_against_reference(small, 150, 2);
  // The demo's leaf hooks fire on the first weight and last bias every step.
  const State end = m.state_at(m.num_events() - 1);
  CHECK(end.num_hooks() == 0);  // the demo removes or releases everything
}

TEST_CASE("state_at equals a replay from 0 on a long synthetic trace") {
  for (auto policy : {trace::DestroyPolicy::kByKey, trace::DestroyPolicy::kNone,
                      trace::DestroyPolicy::kByType}) {
    CAPTURE(trace::to_string(policy));
    SyntheticOptions o;
    o.events = 60'000;
    o.parameters = 8;
    o.rebuild_every = 7;
    o.policy = policy;
    o.seed = 3;
    Model m(make_synthetic_trace(o), ModelOptions{512, 2.0});
    CHECK(m.num_checkpoints() > 10);
    check_against_reference(m, 120, 4);
  }
}

TEST_CASE("state_at equals a replay from 0 on a DDP recovery trace (ranks as threads)") {
  Model m(testing::record_recovery_trace(), ModelOptions{256, 8.0});
  REQUIRE_FALSE(m.reducers().empty());
  check_against_reference(m, 150, 5);
}

TEST_CASE("Cursor steps forward and back to exactly the states state_at gives") {
  SyntheticOptions o;
  o.events = 8'000;
  o.parameters = 4;
  o.rebuild_every = 3;
  o.policy = trace::DestroyPolicy::kNone;
  Model m(make_synthetic_trace(o), ModelOptions{256, 8.0});
  Cursor c(m);
  for (size_t i = 0; i < 1500; ++i) {
    REQUIRE(c.index() == i);
    if (i % 50 == 0) REQUIRE(c.state() == m.state_at(i));
    REQUIRE(c.next());
  }
  CHECK(c.state() == m.state_at(c.index()));
  std::mt19937_64 rng(9);
  for (int round = 0; round < 10; ++round) {
    const size_t start = 300 + rng() % (m.num_events() - 300);
    c.seek(start);
    for (int k = 0; k < 300; ++k) REQUIRE(c.prev());
    CHECK(c.state() == m.state_at(start - 300));
  }
  c.seek(0);
  CHECK_FALSE(c.prev());
  c.seek(m.num_events() - 1);
  CHECK_FALSE(c.next());
  CHECK_THROWS_AS(m.state_at(m.num_events()), std::out_of_range);
}

// Found by fuzz/fuzz_trace_model.cpp: a module hook (node 0, Note [Module
// hooks in traces]) ends when its key is added again, at a kHookAdded whose
// key now names the new hook on a Function; stepping asked find_hook() and
// kept the module hook (and its owner's count) that seeking dropped.
TEST_CASE("Cursor drops a module hook whose key is added again to a Function, as state_at does") {
  trace::TraceData d;
  d.header.hookscope_version = "test";
  d.header.world_size = 1;
  d.strings = {"", "encoder"};
  auto ev = [&](EventKind kind, uint64_t node, uint64_t key, uint64_t arg, uint32_t owner,
                HookKind sub) {
    trace::Event e;
    e.t_ns = 1000 * (d.events.size() + 1);
    e.kind = kind;
    e.node = node;
    e.key = key;
    e.arg = arg;
    e.owner = owner;
    e.sub = static_cast<uint8_t>(sub);
    d.events.push_back(e);
  };
  ev(EventKind::kOwnerCreated, 0, 0, 1, 5, static_cast<HookKind>(trace::OwnerKind::kModule));
  ev(EventKind::kNodeCreated, 10, 0, 0, 0, HookKind::kTensorPre);
  ev(EventKind::kHookAdded, 0, 7, 0, 5, HookKind::kModuleForward);  // #2: module hook
  ev(EventKind::kHookFired, 0, 7, 0, 5, HookKind::kModuleForward);
  ev(EventKind::kHookAdded, 10, 7, 0, 0, HookKind::kPre);  // #4: key 7 again, on Function 10
  ev(EventKind::kHookFired, 10, 7, 0, 0, HookKind::kPre);
  ev(EventKind::kHookRemoved, 10, 7, 0, 0, HookKind::kPre);
  ev(EventKind::kHookAdded, 0, 7, 0, 5, HookKind::kModuleForward);  // #7: a module hook again
  ev(EventKind::kNodeReleased, 10, 0, 0, 0, HookKind::kTensorPre);
  ev(EventKind::kHookAdded, 10, 7, 0, 0, HookKind::kPre);  // #9: ends it, on a released Function
  ev(EventKind::kNodeCreated, 11, 0, 0, 0, HookKind::kTensorPre);
  const Model m(std::move(d));
  REQUIRE(m.state_at(3).module_hooks.size() == 1);
  REQUIRE(m.state_at(4).module_hooks.empty());
  REQUIRE(m.state_at(7).module_hooks.size() == 1);
  REQUIRE(m.state_at(9).module_hooks.empty());
  Cursor c(m);
  for (size_t i = 0; i < m.num_events(); ++i) {
    INFO("event ", i);
    REQUIRE(c.index() == i);
    CHECK(c.state() == m.state_at(i));
    if (i + 1 < m.num_events()) REQUIRE(c.next());
  }
  for (size_t i = m.num_events() - 1; i > 0; --i) {
    INFO("back to event ", i - 1);
    REQUIRE(c.prev());
    CHECK(c.state() == m.state_at(i - 1));
  }
}
