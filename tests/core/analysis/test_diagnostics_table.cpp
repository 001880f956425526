// FindingTable (Note [Compact findings]): the GUI's compact findings must be
// diagnose()'s findings exactly, message, detail and evidence included, in
// the same order, on the shipped samples and on recorded and synthetic runs.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/diagnostics_table.h"
#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"
#include "trace/reader.h"

using namespace hookscope;
using namespace hookscope::analysis;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

void check_same(const Finding& a, const Finding& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.severity == b.severity);
  CHECK(a.message == b.message);
  CHECK(a.at == b.at);
  CHECK(a.events == b.events);
  CHECK(a.count == b.count);
  CHECK(a.function == b.function);
  CHECK(a.node == b.node);
  CHECK(a.owner == b.owner);
  CHECK(a.owner_id == b.owner_id);
  CHECK(a.key == b.key);
  CHECK(a.rank == b.rank);
  CHECK(a.source == b.source);
  CHECK(a.detail == b.detail);
}

// Every finding of `m` through the table, by index and all at once, against
// diagnose(); and the counts and groups made from the rows. Returns how many.
size_t check_table(const Model& m) {
  const std::vector<Finding> want = diagnose(m);
  const FindingTable table = diagnose_table(m);
  REQUIRE(table.size() == want.size());
  // Backwards, so that blocks are unpacked out of order and evicted.
  for (size_t k = want.size(); k-- > 0;) {
    CAPTURE(k);
    check_same(table[k], want[k]);
    const FindingRow& r = table.row(k);
    CHECK(r.at == want[k].at);
    CHECK(r.kind == want[k].kind);
  }
  const std::vector<Finding> all = table.to_vector();
  REQUIRE(all.size() == want.size());
  for (size_t k = 0; k < all.size(); ++k) check_same(all[k], want[k]);
  const FindingCounts a = count_findings(want), b = count_findings(table);
  CHECK(a.errors == b.errors);
  CHECK(a.warnings == b.warnings);
  CHECK(a.infos == b.infos);
  for (int k = 0; k < kNumFindingKinds; ++k) CHECK(a.per_kind[k] == b.per_kind[k]);
  const auto ga = group_findings(want), gb = group_findings(table);
  REQUIRE(ga.size() == gb.size());
  for (size_t g = 0; g < ga.size(); ++g) {
    CHECK(ga[g].kind == gb[g].kind);
    CHECK(ga[g].severity == gb[g].severity);
    CHECK(ga[g].findings == gb[g].findings);
    CHECK(ga[g].occurrences == gb[g].occurrences);
    CHECK(ga[g].first == gb[g].first);
    CHECK(ga[g].owners == gb[g].owners);
  }
  return want.size();
}

Model record(const std::string& name, trace::DestroyPolicy policy) {
  scenarios::DdpScenarioOptions o;
  o.name = name;
  o.policy = policy;
  o.recoveries = 2;
  o.steps = 9;
  auto data = testing::record_trace([&] { scenarios::run_ddp_scenario(o); });
  data.header.world_size = o.world_size;
  return Model(std::move(data));
}

}  // namespace

TEST_CASE("compact findings are diagnose()'s findings: the shipped samples") {
  const fs::path samples = HOOKSCOPE_SAMPLES_DIR;
  REQUIRE_MESSAGE(fs::exists(samples), "the build records them (assets/CMakeLists.txt)");
  size_t seen = 0, findings = 0;
  for (const auto& entry : fs::directory_iterator(samples)) {
    if (entry.path().extension() != ".hstrace") continue;
    CAPTURE(entry.path().string());
    trace::ReadOptions packed;
    packed.packed = true;  // as the GUI reads them
    findings += check_table(Model(trace::read_trace(entry.path().string(), packed)));
    ++seen;
  }
  CHECK(seen >= 4);
  CHECK(findings > 0);
}

TEST_CASE("compact findings are diagnose()'s findings: recorded runs") {
  using trace::DestroyPolicy;
  for (const auto& run : {std::pair{"recovery", DestroyPolicy::kNone}, {"recovery", DestroyPolicy::kByKey},
                          {"recovery", DestroyPolicy::kByType}, {"shared-module", DestroyPolicy::kByType},
                          {"unused-parameter", DestroyPolicy::kByKey}, {"marked-twice", DestroyPolicy::kByKey}}) {
    // Not a structured binding: clang 14 (the ASan build) cannot capture one in CAPTURE's lambda.
    const char* name = run.first;
    const DestroyPolicy policy = run.second;
    CAPTURE(name);
    CAPTURE(static_cast<int>(policy));
    check_table(record(name, policy));
  }
  // A leaking run: the findings of the leaking policy are there.
  const Model leaky = record("recovery", DestroyPolicy::kNone);
  CHECK(count_findings(diagnose_table(leaky)).per_kind[static_cast<int>(FindingKind::kLeakedHook)] > 0);
}

TEST_CASE("compact findings across many blocks, read from several threads") {
  SyntheticOptions o;
  o.events = 40'000;
  o.parameters = 500;
  o.rebuild_every = 2;
  o.policy = trace::DestroyPolicy::kNone;
  const Model m(make_synthetic_trace(o));
  const size_t n = check_table(m);
  CHECK(n > 4 * FindingTable::kBlockFindings);  // several blocks and a partial one
  const std::vector<Finding> want = diagnose(m);
  const FindingTable table = diagnose_table(m);
  // Far smaller than the Finding objects (Note [Compact findings]).
  CHECK(table.memory_bytes() * 3 < findings_memory_bytes(want));
  CHECK(findings_memory_bytes(table) == table.memory_bytes());
  CHECK(table.memory_bytes() >= table.size() * sizeof(FindingRow));
  // The kept blocks are shared by the panel and a compare job.
  std::vector<std::thread> readers;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (size_t k = static_cast<size_t>(t); k < want.size(); k += 3) {
        const Finding f = table[k];
        wrong[static_cast<size_t>(t)] += f.message != want[k].message || f.events != want[k].events;
      }
    });
  }
  for (auto& r : readers) r.join();
  for (int w : wrong) CHECK(w == 0);
  CHECK_THROWS_AS(table[table.size()], std::out_of_range);
}

TEST_CASE("a FindingTable moved, cleared and filled again") {
  FindingTable a;
  CHECK(a.empty());
  CHECK(a.memory_bytes() == 0);
  Finding f;
  f.kind = FindingKind::kFailedRemoval;
  f.severity = Severity::kWarning;
  f.message = std::string(300, 'x') + " and a message with \0 a zero"s;
  f.detail = "detail";
  f.at = 7;
  f.events = {3, 7, 1ull << 40};
  f.count = 2;
  f.key = UINT64_MAX;
  a.add(f);
  Finding g = f;
  g.at = 5;
  g.message.clear();
  g.events.clear();
  a.add(g);
  CHECK(a[0].message == f.message);  // before finish(): in the order added, in the open block
  CHECK(a[1].events.empty());
  a.finish();
  REQUIRE(a.size() == 2);
  check_same(a[0], g);  // ordered by `at`
  check_same(a[1], f);
  FindingTable b = std::move(a);
  check_same(b[1], f);
  b.clear();
  CHECK(b.empty());
  b.add(f);
  b.finish();
  check_same(b[0], f);
}
