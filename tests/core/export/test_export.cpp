// The exporters (Chrome trace JSON, JSON Lines) on a recorded run: what
// Perfetto and a line-by-line reader need. The CLI's own checks:
// tests/cli/test_cli_main.cpp.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "analysis/model.h"
#include "export/export.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/recorder.h"
#include "trace/strings.h"
#include "testing/test_util.h"

using namespace hookscope;
namespace fs = std::filesystem;

namespace {

analysis::Model recovery_model() {
  scenarios::DdpScenarioOptions o;
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 6;
  return analysis::Model(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
}

}  // namespace

TEST_CASE("chrome export parses, has the required fields, complete events and matched flows") {
  analysis::Model m = recovery_model();
  std::string path = fs::temp_directory_path() / ("hookscope-chrome-" + std::to_string(::getpid()) + ".json");
  std::FILE* f = std::fopen(path.c_str(), "w");
  exporters::write_chrome_trace(m, f);
  std::fclose(f);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  fs::remove(path);
  const auto& ev = j.at("traceEvents");
  REQUIRE(ev.size() > 100);
  std::map<std::string, int> by_ph;
  std::set<std::string> cats;
  std::map<uint64_t, std::string> flows;  // id -> phases seen
  bool process_names = false;
  for (const auto& e : ev) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const std::string ph = e["ph"];
    ++by_ph[ph];
    if (ph == "M") {
      process_names = process_names || e["name"] == "process_name";
      continue;
    }
    CHECK(e.contains("tid"));
    CHECK(e.contains("ts"));
    CHECK(e.contains("name"));
    if (ph == "X") {
      CHECK(e["dur"].get<double>() >= 0);
      cats.insert(e["cat"]);
    }
    if (ph == "s" || ph == "t" || ph == "f") flows[e["id"].get<uint64_t>()] += ph;
  }
  CHECK(process_names);
  CHECK(cats.count("backward"));
  CHECK(cats.count("apply"));
  CHECK(cats.count("collective"));
  CHECK(by_ph["i"] > 0);
  REQUIRE_FALSE(flows.empty());
  for (const auto& flow : flows) {
    const auto& id = flow.first;  // not a binding: clang 14 cannot CAPTURE one
    const auto& phases = flow.second;
    CAPTURE(id);
    CHECK(phases == "stf");  // hook fire -> bucket ready -> collective
  }
}

TEST_CASE("jsonl export: one parseable, self-describing object per event") {
  analysis::Model m = recovery_model();
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  exporters::write_jsonl(m, f);
  std::fclose(f);
  std::istringstream in(std::string(buf, len));
  std::free(buf);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    CHECK(j.contains("kind"));
    CHECK(j.contains("t_ns"));
    if (j["kind"] == "hook_fire") CHECK(j.contains("owner_label"));
    ++n;
  }
  CHECK(n == m.num_events());
}
