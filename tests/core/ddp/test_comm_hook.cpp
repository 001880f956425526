// DDP comm hooks (Note [Comm hooks] in ddp/reducer.h) on 2 ranks over real
// Gloo: the hook replaces the Reducer's allreduce of each bucket, and is
// recorded as the torch bridge records PyTorch's (Note [Comm hooks in traces]).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"

#include "ddp/ddp.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "testing/gloo_ranks.h"
#include "testing/test_util.h"
#include "trace/emit.h"
#include "trace/recorder.h"

using namespace hookscope;
using trace::EventKind;
using trace::HookKind;
namespace ev = trace::ev;

namespace {

ddp::DdpOptions several_buckets() {
  ddp::DdpOptions opts;
  opts.reducer.first_bucket_bytes = 64;
  opts.reducer.bucket_cap_bytes = 256;
  return opts;
}

// One DDP step of the same model and data on each rank; the gradients it leaves.
std::vector<std::vector<float>> step(int r, std::shared_ptr<ddp::ProcessGroup> pg, const ddp::CommHook& hook,
                                     std::vector<size_t>* buckets_seen = nullptr, size_t* num_buckets = nullptr) {
  auto model = nn::mlp({6, 12, 3}, 5);
  ddp::DistributedDataParallel d(model, pg, several_buckets());
  REQUIRE(d.reducer().num_buckets() > 1);
  if (num_buckets) *num_buckets = d.reducer().num_buckets();
  if (hook) {
    d.register_comm_hook([&](ddp::GradBucket& b) {
      if (buckets_seen) buckets_seen->push_back(b.index);
      return hook(b);
    });
  }
  nn::SyntheticClassification data(6, 3, 11);
  auto shard = data.batch(0, 16, r, 2);
  cross_entropy(d(shard.x), shard.y).backward();
  std::vector<std::vector<float>> grads;
  for (auto& p : model->parameters()) grads.push_back(p.grad().to_vector());
  return grads;
}

}  // namespace

TEST_CASE("comm hook: replaces the allreduce; an averaging hook gives DDP's gradients, a summing one twice") {
  std::vector<std::vector<float>> plain[2], averaged[2], summed[2];
  std::vector<size_t> seen[2];
  size_t buckets = 0;
  testing::on_two_ranks([&](int r, std::shared_ptr<ddp::ProcessGroup> pg) {
    plain[r] = step(r, pg, nullptr);

    averaged[r] = step(
        r, pg,
        [&](ddp::GradBucket& b) {
          pg->allreduce_tensor(b.buffer)->wait();  // a real collective of the hook's own
          return mul_scalar(b.buffer, 0.5f);        // a new tensor: the Reducer copies it in
        },
        &seen[r], r == 0 ? &buckets : nullptr);
    summed[r] = step(r, pg, [&](ddp::GradBucket& b) {
      pg->allreduce_tensor(b.buffer)->wait();
      return b.buffer;  // reduced in place, not averaged: the Reducer does not average either
    });
  });
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    std::vector<size_t> in_order(buckets);
    for (size_t b = 0; b < buckets; ++b) in_order[b] = b;
    CHECK(seen[r] == in_order);  // in bucket order, once each
    REQUIRE(plain[r].size() == averaged[r].size());
    for (size_t i = 0; i < plain[r].size(); ++i) {
      for (size_t j = 0; j < plain[r][i].size(); ++j) {
        CHECK(averaged[r][i][j] == doctest::Approx(plain[r][i][j]).epsilon(1e-6).scale(1e-6));
        CHECK(summed[r][i][j] == doctest::Approx(2 * plain[r][i][j]).epsilon(1e-6).scale(1e-6));
      }
    }
  }
}

TEST_CASE("comm hook: recorded as one hook of the Reducer on no Function, one fire per bucket call") {
  trace::MemoryRecorder rec;
  rec.start();
  size_t buckets = 0;
  testing::on_two_ranks([&](int r, std::shared_ptr<ddp::ProcessGroup> pg) {
    auto model = nn::mlp({6, 12, 3}, 5);
    ddp::DistributedDataParallel d(model, pg, several_buckets());
    if (r == 0) buckets = d.reducer().num_buckets();
    d.register_comm_hook([&](ddp::GradBucket& b) {
      pg->allreduce_tensor(b.buffer)->wait();
      return b.buffer;
    });
    nn::SyntheticClassification data(6, 3, 11);
    for (int i = 0; i < 2; ++i) {
      auto shard = data.batch(0, 16, r, 2);
      cross_entropy(d(shard.x), shard.y).backward();
    }
  });
  rec.finish();
  REQUIRE(buckets > 1);
  std::vector<uint32_t> twice;  // two backward passes, each bucket in order
  for (int i = 0; i < 2; ++i) {
    for (uint32_t b = 0; b < buckets; ++b) twice.push_back(b);
  }
  const auto events = testing::recorded(rec);
  for (uint16_t rank : {0, 1}) {
    CAPTURE(rank);
    uint32_t reducer = 0;
    uint64_t key = 0;
    std::vector<uint32_t> fired;
    std::vector<uint64_t> bytes;
    size_t removed = 0, collectives = 0;
    for (const auto& e : events) {
      if (e.rank != rank) continue;
      if (e.kind == EventKind::kReducerConstructed) reducer = e.as<ev::ReducerConstructed>().owner;
      // (DDP's broadcast at construction, owner 0, comes before the Reducer.)
      if (e.kind == EventKind::kCollectiveBegin && reducer != 0 && e.as<ev::CollectiveBegin>().owner == reducer) {
        ++collectives;
      }
      if (!trace::is_hook_event(e.kind) || trace::hook_kind_of(e) != HookKind::kCommHook) continue;
      if (e.kind == EventKind::kHookAdded) {
        const auto add = e.as<ev::HookAdded>();
        CHECK(add.node == 0);
        CHECK(add.owner == reducer);
        key = add.key;
      } else if (e.kind == EventKind::kHookFired) {
        const auto fire = e.as<ev::HookFired>();
        CHECK(fire.key == key);
        CHECK(fire.node == 0);
        CHECK(fire.owner == reducer);
        fired.push_back(fire.bucket);
        bytes.push_back(fire.bytes);
      } else if (e.kind == EventKind::kHookRemoved) {
        const auto gone = e.as<ev::HookRemoved>();
        CHECK(gone.key == key);
        CHECK(gone.remover == reducer);  // its own destructor: not a leak
        ++removed;
      }
    }
    CHECK(key != 0);
    CHECK(fired == twice);
    // mlp {6, 12, 3}, parameters reversed: bucket 0 is 2.bias and 2.weight, 3 + 36 floats (>= 64 bytes).
    CHECK(bytes.front() == 39 * sizeof(float));
    CHECK(removed == 1);
    CHECK(collectives == twice.size());  // the hook's allreduce, once a bucket call (next test)
  }
}

namespace {

// Each rank's events as the Reducers panel reads them (analysis replay).
struct HookRun {
  std::vector<trace::Event> events;  // without the start snapshot (testing::recorded)
  trace::TraceData trace;            // for the analysis
  size_t buckets = 0;
};

HookRun run_with_hook(const std::function<Tensor(ddp::ProcessGroup&, ddp::GradBucket&)>& hook, int backwards) {
  trace::MemoryRecorder rec;
  rec.start();
  HookRun run;
  testing::on_two_ranks([&](int r, std::shared_ptr<ddp::ProcessGroup> pg) {
    auto model = nn::mlp({6, 12, 3}, 5);
    ddp::DistributedDataParallel d(model, pg, several_buckets());
    if (r == 0) run.buckets = d.reducer().num_buckets();
    d.register_comm_hook([&, pg](ddp::GradBucket& b) { return hook(*pg, b); });
    nn::SyntheticClassification data(6, 3, 11);
    for (int i = 0; i < backwards; ++i) {
      auto shard = data.batch(0, 16, r, 2);
      cross_entropy(d(shard.x), shard.y).backward();
    }
  });
  rec.finish();
  run.events = testing::recorded(rec);
  run.trace = rec.take_trace();
  run.trace.header.world_size = 2;
  return run;
}

}  // namespace

TEST_CASE("comm hook: its allreduce of the bucket is the bucket's collective, as the torch bridge records it") {
  // Note [A comm hook's collectives]: the hook's fire, then the bucket ready
  // and its collective begun when the hook's allreduce starts, ended when it
  // completes; a collective of another size is of no Reducer.
  const HookRun run = run_with_hook(
      [](ddp::ProcessGroup& pg, ddp::GradBucket& b) {
        Tensor flag = Tensor::full({1}, 1.f);
        pg.allreduce_tensor(flag)->wait();  // the user's own, not the bucket's
        pg.allreduce_tensor(b.buffer)->wait();
        return b.buffer;
      },
      2);
  REQUIRE(run.buckets > 1);
  for (uint16_t rank : {0, 1}) {
    CAPTURE(rank);
    uint32_t reducer = 0;
    std::vector<std::string> story;  // per bucket call, in order
    std::map<uint64_t, uint32_t> begun;  // collective -> its owner
    size_t ended_ok = 0;
    uint64_t ready_collective = 0;
    for (const auto& e : run.events) {
      if (e.rank != rank) continue;
      if (e.kind == EventKind::kReducerConstructed) reducer = e.as<ev::ReducerConstructed>().owner;
      if (reducer == 0) continue;  // DDP's broadcast at construction
      if (e.kind == EventKind::kHookFired && e.as<ev::HookFired>().hook_kind == HookKind::kCommHook) {
        const auto fire = e.as<ev::HookFired>();
        story.push_back("fire " + std::to_string(fire.bucket) + " " + std::to_string(fire.bytes));
      } else if (e.kind == EventKind::kBucketReady) {
        const auto ready = e.as<ev::BucketReady>();
        CHECK(ready.owner == reducer);
        ready_collective = ready.collective_id;
        story.push_back("ready " + std::to_string(ready.bucket));
      } else if (e.kind == EventKind::kCollectiveBegin) {
        const auto c = e.as<ev::CollectiveBegin>();
        CHECK(c.op == trace::CollectiveOp::kAllreduce);
        begun[c.collective_id] = c.owner;
        if (c.owner == 0) {
          CHECK(c.bucket == trace::kNoBucket);
          CHECK(c.bytes == sizeof(float));
          story.push_back("other");
        } else {
          CHECK(c.owner == reducer);
          CHECK(c.collective_id == ready_collective);
          story.push_back("begin " + std::to_string(c.bucket) + " " + std::to_string(c.bytes));
        }
      } else if (e.kind == EventKind::kCollectiveEnd) {
        const auto c = e.as<ev::CollectiveEnd>();
        REQUIRE(begun.count(c.collective_id));
        CHECK(c.owner == begun[c.collective_id]);
        if (c.status == trace::CollectiveStatus::kOk) ++ended_ok;
      }
    }
    std::vector<std::string> want;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t b = 0; b < run.buckets; ++b) {
        // The bucket's bytes: the fire's and the collective's are the same.
        std::string bytes;
        for (const std::string& s : story) {
          if (s.rfind("fire " + std::to_string(b) + " ", 0) == 0) bytes = s.substr(s.rfind(' ') + 1);
        }
        want.push_back("fire " + std::to_string(b) + " " + bytes);
        want.push_back("other");
        want.push_back("ready " + std::to_string(b));
        want.push_back("begin " + std::to_string(b) + " " + bytes);
      }
    }
    CHECK(story == want);
    CHECK(ended_ok == begun.size());
    CHECK(begun.size() == 4 * run.buckets);
  }
}

TEST_CASE("comm hook: the Reducers replay reads its buckets reduced, not just ready") {
  HookRun run = run_with_hook(
      [](ddp::ProcessGroup& pg, ddp::GradBucket& b) {
        pg.allreduce_tensor(b.buffer)->wait();
        return b.buffer;
      },
      1);
  analysis::Model m(std::move(run.trace));
  const auto& finalized = m.events_of_kind(EventKind::kBucketsFinalized);
  REQUIRE(finalized.size() == 2);  // one backward on each rank
  for (analysis::EventIndex done : finalized) {
    const analysis::ReducerIndex r = m.reducer_of(m.find_owner(0, m.event(done).owner));
    REQUIRE(r != analysis::kNoIndex);
    const analysis::State st = m.state_at(done);
    auto at = std::find_if(st.reducers.begin(), st.reducers.end(),
                           [&](const analysis::ReducerAt& x) { return x.reducer == r; });
    REQUIRE(at != st.reducers.end());
    CHECK(at->finalized);
    REQUIRE(at->buckets.size() == run.buckets);
    for (const analysis::BucketAt& b : at->buckets) {
      CAPTURE(b.index);
      CHECK(b.pending == 0);
      CHECK(b.status == analysis::BucketStatus::kReduced);
    }
  }
}

TEST_CASE("comm hook: a hook that runs no allreduce of its bucket's size leaves the bucket without a collective") {
  // As the bridge cannot tell such a hook's collectives from the program's,
  // the runtime does not invent one: the fire alone says the hook ran.
  const HookRun run = run_with_hook([](ddp::ProcessGroup&, ddp::GradBucket& b) { return b.buffer; }, 1);
  size_t fires = 0;
  for (const auto& e : run.events) {
    CHECK(e.kind != EventKind::kBucketReady);
    if (e.kind == EventKind::kCollectiveBegin) CHECK(e.as<ev::CollectiveBegin>().op == trace::CollectiveOp::kBroadcast);
    if (e.kind == EventKind::kHookFired && e.as<ev::HookFired>().hook_kind == HookKind::kCommHook) ++fires;
  }
  CHECK(fires == 2 * run.buckets);
}

TEST_CASE("comm hook: a second hook, an empty one, or a result of the wrong size is a clear error") {
  testing::on_two_ranks([&](int r, std::shared_ptr<ddp::ProcessGroup> pg) {
    auto model = nn::mlp({6, 12, 3}, 5);
    ddp::DistributedDataParallel d(model, pg, several_buckets());
    CHECK_THROWS_WITH_AS(d.register_comm_hook(nullptr), doctest::Contains("needs a callable hook"),
                         std::invalid_argument);
    d.register_comm_hook([](ddp::GradBucket&) { return Tensor::zeros({1}); });
    CHECK_THROWS_WITH_AS(d.register_comm_hook([](ddp::GradBucket& b) { return b.buffer; }),
                         doctest::Contains("register_comm_hook can only be called once"), std::logic_error);
    nn::SyntheticClassification data(6, 3, 11);
    auto shard = data.batch(0, 16, r, 2);
    CHECK_THROWS_WITH(cross_entropy(d(shard.x), shard.y).backward(),
                      doctest::Contains("its comm hook returned 1 values on cpu for bucket 0"));
  });
}
