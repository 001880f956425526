// What `diff` answers on a mid-size pair of traces, pinned: the rows, their
// order and the findings only in one trace (diff and diagnose were rewritten
// for speed on 300k hooked Functions; their answers must not move). Run at
// two sizes: below and above the size a diff splits across two threads.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/model.h"
#include "analysis/synthetic.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::HookKind;
using trace::OwnerKind;

namespace {

// N parameters' AccumulateGrads with a hook of "probe" each, and 200
// MulBackward0 over the first parameter (one signature: told apart by
// creation order) with a hook of the live "keeper". In `cleaned`, probe
// removes its hooks on the even parameters and keeper hooks only the first
// 100 MulBackward0. Then probe dies and every hook it left fires.
Model make(uint32_t n, bool cleaned) {
  TraceBuilder b;
  const uint32_t probe = b.owner(OwnerKind::kUser, "probe");
  const uint32_t keeper = b.owner(OwnerKind::kUser, "keeper");
  std::vector<uint64_t> nodes, keys;
  for (uint32_t k = 0; k < n; ++k) {
    nodes.push_back(b.accumulator("p" + std::to_string(k) + ".weight [64]"));
    keys.push_back(b.add_hook(nodes.back(), HookKind::kPost, probe));
  }
  for (int i = 0; i < 200; ++i) {
    const uint64_t mul = b.function("MulBackward0");
    b.edge(mul, nodes[0]);
    if (!cleaned || i < 100) b.add_hook(mul, HookKind::kPre, keeper);
  }
  std::vector<bool> on(n, true);
  for (uint32_t k = 0; cleaned && k < n; k += 2) {
    b.remove(nodes[k], keys[k], HookKind::kPost, probe, probe);
    on[k] = false;
  }
  b.destroy_owner(probe);
  for (uint32_t k = 0; k < n; ++k) {
    if (on[k]) b.fire(nodes[k], keys[k], HookKind::kPost, probe);
  }
  return Model(b.take());
}

size_t count_kind(const std::vector<Finding>& fs, FindingKind kind) {
  size_t n = 0;
  for (const Finding& f : fs) n += f.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("diff results on a mid-size pair: rows, their order and the findings of one side only") {
  for (const uint32_t n : {1'000u, 20'000u}) {
    CAPTURE(n);
    const Model left = make(n, false), cleaned = make(n, true);
    const ModelDiff d = diff_models(left, cleaned);

    // One row per parameter and per MulBackward0; the even parameters and the
    // last 100 MulBackward0 (by creation) lost their hook.
    REQUIRE(d.functions.size() == n + 200);
    CHECK(d.num_differing() == n / 2 + 100);
    CHECK(format_diff(d, "left", "cleaned")
              .starts_with(fmt::format("hooks at the end: {} of {} Function(s) differ (left vs cleaned)\n",
                                       n / 2 + 100, n + 200)));
    // Those that differ first, by name (p0, p10, p100, ... as text), then the
    // same-named MulBackward0 in creation order.
    CHECK(d.functions[0].function == "AccumulateGrad (p0.weight [64])");
    CHECK(d.functions[1].function == "AccumulateGrad (p10.weight [64])");
    CHECK(d.functions[2].function == "AccumulateGrad (p100.weight [64])");
    for (size_t i = 0; i < n / 2; ++i) {
      const FunctionCounts& row = d.functions[i];
      CHECK(row.hooks_a[static_cast<int>(HookKind::kPost)] == 1);
      CHECK(row.total_b() == 0);
      if (i > 0) CHECK(d.functions[i - 1].function < row.function);
    }
    for (size_t i = n / 2; i < n / 2 + 100; ++i) {
      const FunctionCounts& row = d.functions[i];
      CHECK(row.function == "MulBackward0");
      CHECK(row.b == kNoIndex);
      CHECK(row.hooks_a[static_cast<int>(HookKind::kPre)] == 1);
      if (i > n / 2) CHECK(d.functions[i - 1].a < row.a);
    }
    CHECK(left.functions()[d.functions[n / 2].a].created_at >
          left.functions()[d.functions[n + 199].a].created_at);  // the first 100 match
    for (size_t i = n / 2 + 100; i < d.functions.size(); ++i) CHECK_FALSE(d.functions[i].differs());

    // Each even parameter's leak and stale fire are in `left` only; the odd
    // ones' are in both and matched.
    CHECK(d.only_a.size() == n);
    CHECK(count_kind(d.only_a, FindingKind::kLeakedHook) == n / 2);
    CHECK(count_kind(d.only_a, FindingKind::kStaleFire) == n / 2);
    CHECK(d.only_b.empty());
    const ModelDiff reverse = diff_models(cleaned, left);
    CHECK(reverse.num_differing() == n / 2 + 100);
    CHECK(reverse.only_a.empty());
    CHECK(reverse.only_b.size() == n);
    const ModelDiff same = diff_models(left, left);
    CHECK(same.num_differing() == 0);
    CHECK(same.only_a.empty());
    CHECK(same.only_b.empty());
  }
}
