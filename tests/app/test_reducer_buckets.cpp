// Note [Rebuilt buckets]: the Reducers panel counts the buckets the backward
// passes reduced, not only those DDP logged at construction, and says when
// DDP rebuilt them. A trace shaped as the torch bridge writes one
// (tests/torch/test_ddp_buckets.py: 8 parameters, "1 bucket" at
// construction, rebuilt into 3 after the first backward, the sizes known one
// backward later), a no_sync backward and a failed one that prove nothing;
// the samples (our runtime keeps its buckets: never "rebuilt"); the panel's
// words in the draw report, headless.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "reducer_buckets.h"
#include "testing/headless_app.h"
#include "testing/temp_dir.h"
#include "testing/test_util.h"
#include "testing/write_trace.h"
#include "trace/reader.h"

using namespace hookscope;
using analysis::kNever;
using trace::EventKind;

namespace {

struct BridgeLike {
  trace::TraceData data;
  size_t rebuilt_at = 0;  // backward 2's prepare_for_backward
};

BridgeLike bridge_like() {
  analysis::TraceBuilder b;
  std::vector<uint64_t> acc;
  for (int p = 0; p < 8; ++p) acc.push_back(b.accumulator(std::to_string(p) + ".weight"));
  const uint32_t owner = b.owner(trace::OwnerKind::kReducer, "Reducer 1");
  b.reducer_constructed(owner, 8, 1);
  BridgeLike out;
  auto backward = [&](uint64_t n, const std::vector<uint32_t>& sizes, bool finalized, bool members_known) {
    if (n == 2) out.rebuilt_at = b.size();
    b.prepare_for_backward(owner, n);
    uint32_t p = 0;
    for (uint32_t bucket = 0; bucket < sizes.size(); ++bucket) {
      for (uint32_t k = 0; k < sizes[bucket]; ++k, ++p) {
        b.mark_ready(owner, acc[7 - p], 7 - p, members_known ? bucket : trace::kNoBucket);
      }
      b.bucket_ready(owner, bucket, members_known ? sizes[bucket] : 0);
    }
    if (finalized) b.buckets_finalized(owner, n);
  };
  backward(1, {8}, true, false);        // the buckets logged at construction
  backward(2, {4, 2, 2}, true, false);  // rebuilt: told apart by their order only
  backward(3, {4, 2, 2}, true, true);   // the rebuilt members logged
  b.prepare_for_backward(owner, 4);     // under no_sync: nothing reduced
  backward(5, {4}, false, true);        // a failure after the first bucket
  out.data = b.take();
  return out;
}

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

}  // namespace

TEST_CASE("reducer buckets: a bridge trace's rebuilt buckets are counted and dated, not the construction's") {
  BridgeLike t = bridge_like();
  const size_t rebuilt = t.rebuilt_at;
  const analysis::Model m(std::move(t.data));
  REQUIRE(m.reducers().size() == 1);
  const app::BucketLayout l = app::bucket_layout(m, 0);
  CHECK(l.at_construction == 1);
  CHECK(l.buckets == 3);
  CHECK(l.before == 1);
  CHECK(l.rebuilt_backward == 2);
  CHECK(l.rebuilt_at == rebuilt);
  CHECK(l.sizes == std::vector<uint32_t>{4, 2, 2});
  const analysis::ReducerInfo& info = m.reducers()[0];
  const size_t end = m.num_events() - 1;
  CHECK(app::bucket_words(info, l, end) == "8 parameters in 3 buckets (4, 2, 2)");
  CHECK(app::rebuild_words(l, end) ==
        "buckets rebuilt at backward 2 (#" + std::to_string(rebuilt) + "); 1 bucket at construction");
  CHECK(app::bucket_words(info, l, rebuilt - 1) == "8 parameters in 1 bucket");
  CHECK(app::rebuild_words(l, rebuilt - 1) == "buckets rebuilt later, at backward 2 (#" + std::to_string(rebuilt) + ")");
}

TEST_CASE("reducer buckets: the samples' Reducers (our runtime) keep the buckets they were built with") {
  for (const char* name : {"recovery-none", "recovery-by-key", "shared-module-by-type"}) {
    CAPTURE(name);
    const analysis::Model m(trace::read_trace(sample(name)));
    REQUIRE_FALSE(m.reducers().empty());
    for (analysis::ReducerIndex r = 0; r < m.reducers().size(); ++r) {
      const app::BucketLayout l = app::bucket_layout(m, r);
      CHECK(l.rebuilt_at == kNever);
      CHECK(app::rebuild_words(l, m.num_events() - 1).empty());
      if (l.buckets > 0) CHECK(l.buckets == m.reducers()[r].num_buckets);
    }
  }
}

TEST_CASE("reducer buckets: the Reducers panel says the rebuilt buckets and when, headless") {
  testing::scratch_config_dir("hookscope_reducer_buckets");
  testing::TempDir dir("hookscope_reducer_buckets");
  BridgeLike t = bridge_like();
  const size_t rebuilt = t.rebuilt_at;
  const std::string path = dir.file("bridge_like.hstrace");
  testing::write_trace_file(std::move(t.data), path, "bridge-like");
  for (const bool after : {false, true}) {
    app::Args args = testing::headless_args({path});
    args.at.text = std::to_string(after ? rebuilt + 20 : rebuilt - 1);
    args.panel = "reducers";
    testing::HeadlessApp h(args);
    for (int i = 0; i < 4; ++i) h.frame();
    const std::string report = dir.file("report.json");
    REQUIRE(h.app().write_draw_report(report));
    std::ifstream in(report);
    const nlohmann::json words = nlohmann::json::parse(in)["reducers"];
    INFO(words.dump());
    auto says = [&](const std::string& w) {
      return std::any_of(words.begin(), words.end(), [&](const auto& s) { return s.template get<std::string>() == w; });
    };
    if (after) {
      CHECK(says("Reducer 1 r0 buckets: 8 parameters in 3 buckets (4, 2, 2)"));
      CHECK(says("Reducer 1 r0 buckets rebuilt at backward 2 (#" + std::to_string(rebuilt) + "); 1 bucket at construction"));
    } else {
      CHECK(says("Reducer 1 r0 buckets: 8 parameters in 1 bucket"));
      CHECK(says("Reducer 1 r0 buckets rebuilt later, at backward 2 (#" + std::to_string(rebuilt) + ")"));
    }
  }
}
#endif  // HOOKSCOPE_APP_UI
