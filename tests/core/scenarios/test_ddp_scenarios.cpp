// DDP scenarios end to end: record, analyse, and the findings each policy must produce.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "analysis/diagnostics.h"
#include "analysis/model.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/reader.h"
#include "trace/recorder.h"
#include "trace/strings.h"
#include "testing/test_util.h"

using namespace hookscope;

namespace {

analysis::Model record(const scenarios::DdpScenarioOptions& o) {
  return analysis::Model(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
}

std::set<std::string> kinds(const std::vector<analysis::Finding>& findings, bool errors_and_warnings = true) {
  std::set<std::string> out;
  for (const auto& f : findings) {
    if (errors_and_warnings && f.severity == analysis::Severity::kInfo) continue;
    out.insert(std::string(analysis::to_string(f.kind)));
  }
  return out;
}

// Output with the exit status appended, so one CAPTURE shows both.
std::string run(const std::string& cmd) {
  auto r = testing::run_command(cmd);
  return r.out + "\nexit=" + std::to_string(r.exit);
}

}  // namespace

TEST_CASE("recovery --policy by-key: check is clean") {
  scenarios::DdpScenarioOptions o;
  o.recoveries = 2;
  o.steps = 9;
  auto findings = analysis::diagnose(record(o));
  CHECK(kinds(findings).empty());
}

TEST_CASE("recovery --policy none: leaked_hook, stale_fire and hook_growth") {
  scenarios::DdpScenarioOptions o;
  o.policy = trace::DestroyPolicy::kNone;
  o.recoveries = 2;
  o.steps = 9;
  auto k = kinds(analysis::diagnose(record(o)));
  CHECK(k.count("leaked_hook"));
  CHECK(k.count("stale_fire"));
  CHECK(k.count("hook_growth"));
}

TEST_CASE("shared-module --policy by-type: collateral_removal - by-key: none of it") {
  scenarios::DdpScenarioOptions o;
  o.name = "shared-module";
  o.steps = 6;
  o.policy = trace::DestroyPolicy::kByType;
  CHECK(kinds(analysis::diagnose(record(o))).count("collateral_removal"));
  o.policy = trace::DestroyPolicy::kByKey;
  CHECK_FALSE(kinds(analysis::diagnose(record(o))).count("collateral_removal"));
}

TEST_CASE("marked-twice and unused-parameter produce their findings") {
  scenarios::DdpScenarioOptions o;
  o.name = "marked-twice";
  CHECK(kinds(analysis::diagnose(record(o)), false).count("marked_twice"));
  o.name = "unused-parameter";
  CHECK(kinds(analysis::diagnose(record(o)), false).count("unused_parameter"));
}

TEST_CASE("process mode: a rank killed with SIGKILL - survivors recover - every trace loads and check runs") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hookscope-launch-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cli = HOOKSCOPE_CLI_PATH;
  const std::string prefix = (dir / "run").string();
  std::string out = run(cli + " launch --nproc 3 recovery --fail-mode kill --steps 400 --fail-step 300 -o " + prefix);
  CAPTURE(out);
  CHECK(out.find("killed by signal 9") != std::string::npos);
  CHECK(out.find("exit=0") != std::string::npos);
  std::vector<std::string> files;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".hstrace") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  // ranks 0, 1, 2, rank 1's replacement and the launcher's record of the kill
  REQUIRE(files.size() == 5);
  CHECK(std::count_if(files.begin(), files.end(), [](const std::string& f) {
          return f.find(".launch.hstrace") != std::string::npos;
        }) == 1);
  size_t killed_events = 0;
  size_t killed_failures = 0;
  for (const auto& f : files) {
    auto t = trace::read_trace(f);  // the killed rank's file reads up to its last block
    if (f.find("rank1.hstrace") != std::string::npos) {
      killed_events = t.events.size();
      for (const auto& e : t.events) {
        if (e.kind == trace::EventKind::kFailure &&
            e.as<trace::ev::Failure>().mode == trace::FailureMode::kKill) {
          ++killed_failures;
        }
      }
    }
  }
  CHECK(killed_events > 0);
  // Its own record of the kill it injected reached the file before the kill.
  CHECK(killed_failures == 1);
  std::string all;
  for (const auto& f : files) all += " " + f;
  std::string check = run(cli + " check" + all);
  CAPTURE(check);
  // The killed rank's Reducer never ran its destructor, but its owner was
  // never destroyed either: hooks of a dead process are not leaks, and with
  // policy by-key everything else is clean.
  CHECK(check.find("clean") != std::string::npos);
  CHECK(check.find("exit=0") != std::string::npos);
  fs::remove_all(dir);
}
