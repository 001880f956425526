// hookscope-cli lanes / readiness / explain / diff --at --order, as a user runs them.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace fs = std::filesystem;
using hookscope::testing::CommandResult;

namespace {

CommandResult cli(const std::string& args) {
  return hookscope::testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " " + args);
}

struct Traces {
  fs::path dir = fs::temp_directory_path() / ("hookscope-cli-views-" + std::to_string(::getpid()));
  std::string none = (dir / "none.hstrace").string();
  std::string by_key = (dir / "by_key.hstrace").string();
  std::string unused = (dir / "unused.hstrace").string();
  Traces() {
    fs::create_directories(dir);
    REQUIRE(cli("record recovery --policy none --recoveries 2 -o " + none).exit == 0);
    REQUIRE(cli("record recovery --policy by-key --recoveries 2 -o " + by_key).exit == 0);
    REQUIRE(cli("record unused-parameter -o " + unused).exit == 0);
  }
  ~Traces() { fs::remove_all(dir); }
};

// Every line parses as JSON; returns them.
std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    out.push_back(nlohmann::json::parse(line));  // throws (fails the test) when invalid
  }
  return out;
}

}  // namespace

TEST_CASE("cli lanes / readiness / explain / diff --at --order: answers, JSON and errors") {
  Traces t;

  const CommandResult lanes = cli("lanes --format jsonl " + t.none);
  REQUIRE(lanes.exit == 0);
  size_t outliving = 0, stale = 0;
  for (const auto& j : json_lines(lanes.out)) {
    outliving += j["outlives_owner"].get<bool>();
    stale += j["fires_after_owner_death"].get<uint32_t>();
  }
  CHECK(outliving > 0);
  CHECK(stale > 0);
  const CommandResult clean = cli("lanes --leaks " + t.by_key);
  CHECK(clean.exit == 0);
  CHECK(clean.out.find(", 0 outlive their owner") != std::string::npos);

  const CommandResult grid = cli("readiness " + t.unused);
  REQUIRE(grid.exit == 0);
  CHECK(grid.out.find("aux.weight [4, 32]: unused (no gradient) in backwards 0-") != std::string::npos);
  size_t unused = 0;
  for (const auto& j : json_lines(cli("readiness --format jsonl " + t.unused).out)) {
    if (j["status"] == "unused") {
      ++unused;
      CHECK(j["name"].get<std::string>().rfind("aux.", 0) == 0);
    }
  }
  CHECK(unused > 0);

  // explain the first stale fire lanes found: its JSON says stale and cites the add
  const auto first_stale = [&] {
    for (const auto& j : json_lines(cli("events --kind hook_fire --format jsonl " + t.none).out)) {
      const auto x = json_lines(cli("explain --format jsonl --event " + std::to_string(j["index"].get<long>()) +
                                    " " + t.none).out);
      if (!x.empty() && x[0]["verdict"] == "stale") return x[0];
    }
    return nlohmann::json();
  }();
  REQUIRE_FALSE(first_stale.is_null());
  CHECK(first_stale["steps"].size() >= 4);
  CHECK(first_stale["summary"].get<std::string>().rfind("stale fire", 0) == 0);
  const CommandResult not_fire = cli("explain --event 0 " + t.none);
  CHECK(not_fire.exit == 2);
  CHECK(not_fire.out.find("not a hook_fire") != std::string::npos);
  CHECK(cli("explain --event 999999 " + t.none).exit == 2);

  const CommandResult d = cli("diff --at rebuild:1 --order --format json " + t.by_key + " " + t.none);
  CHECK(d.exit == 1);
  const auto j = nlohmann::json::parse(d.out);
  CHECK(j["at"] == "after rebuild 1");
  CHECK(j["only_b"].size() > 0);
  const CommandResult same = cli("diff --at backward:2 --order " + t.none + " " + t.none);
  CHECK(same.exit == 0);
  const CommandResult missing = cli("diff --at rebuild:7 " + t.by_key + " " + t.none);
  CHECK(missing.exit == 2);
  CHECK(missing.out.find("has 2 DDP rebuilds on rank 0, not 7") != std::string::npos);
}
