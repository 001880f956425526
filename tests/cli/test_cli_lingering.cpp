// `hookscope-cli check / lanes / explain` on the kept-alive run (Note
// [Lingering owners]): all three name the replaced, still alive Reducers in
// the same words, and a no_sync fire is explained as intended.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "analysis/model.h"
#include "analysis/owner_status.h"
#include "testing/test_util.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using namespace hookscope;
using testing::CommandResult;

namespace {

CommandResult cli(const std::string& args) {
  return testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " " + args);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The hook_fire a no-op fire follows: the same key, just before it (ranks as
// threads interleave their events).
analysis::EventIndex fire_of(const analysis::Model& m, analysis::EventIndex noop) {
  const uint64_t key = m.event(noop).key;
  for (analysis::EventIndex j = noop; j-- > 0 && noop - j < 64;) {
    if (m.event(j).kind == trace::EventKind::kHookFired && m.event(j).key == key) return j;
  }
  return analysis::kNever;
}

}  // namespace

TEST_CASE("cli check / lanes / explain: a kept-alive DDP's old Reducers linger, in the same words everywhere") {
  const fs::path dir = fs::temp_directory_path() / ("hookscope-cli-lingering-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = (dir / "kept_alive.hstrace").string();
  const CommandResult rec = cli("record kept-alive -o " + trace);
  REQUIRE_MESSAGE(rec.exit == 0, rec.out);
  CHECK(has(rec.out, "3 post hook(s) per AccumulateGrad"));  // three Reducers' hooks on every parameter

  const analysis::Model m(trace::read_trace(trace));
  analysis::OwnerIndex r1 = analysis::kNoIndex;
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
    if (m.owner_name(o) == "Reducer 1" && m.owners()[o].rank == 0) r1 = o;
  }
  REQUIRE(r1 != analysis::kNoIndex);
  const analysis::OwnerInfo& o1 = m.owners()[r1];
  REQUIRE(o1.replaced_at != analysis::kNever);
  const std::string replaced = "Reducer 1 was replaced by Reducer 2 at #" + std::to_string(o1.replaced_at);

  // check: hook_growth tells the run as it was.
  const CommandResult check = cli("check --all " + trace);
  CHECK(check.exit != 0);  // findings
  CHECK(has(check.out, "hook_growth"));
  CHECK(has(check.out, replaced + " and stayed alive until it was destroyed at #" + std::to_string(o1.destroyed_at)));
  CHECK_FALSE(has(check.out, "hooks of destroyed owners stay attached"));

  // lanes: the hooks outlive their use, not their owner.
  const CommandResult lanes = cli("lanes " + trace);
  REQUIRE(lanes.exit == 0);
  CHECK(has(lanes.out, "OUTLIVES ITS USE (" + replaced));
  CHECK(has(lanes.out, ", 0 outlive their owner, "));
  CHECK_FALSE(has(lanes.out, " 0 outlive their use"));
  const CommandResult leaks = cli("lanes --leaks --format jsonl " + trace);
  REQUIRE(leaks.exit == 0);
  size_t unused = 0;
  std::istringstream in(leaks.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    unused += j["outlives_use"].get<bool>();
    if (j["outlives_use"].get<bool>()) CHECK(j["fires_while_owner_lingered"].get<uint32_t>() > 0);
  }
  CHECK(unused > 0);

  // explain: Reducer 1's fire while it lingers, and a no_sync fire.
  analysis::EventIndex lingering_fire = analysis::kNever, no_sync_noop = analysis::kNever;
  for (analysis::EventIndex i : m.events_of_kind(trace::EventKind::kAutogradHookNoop)) {
    const auto cause = analysis::noop_cause(m, i);
    if (cause == analysis::NoopCause::kLingering && m.find_owner(m.source(i), m.event(i).owner) == r1 &&
        lingering_fire == analysis::kNever) {
      lingering_fire = fire_of(m, i);
    }
    if (cause == analysis::NoopCause::kNoSync && no_sync_noop == analysis::kNever) no_sync_noop = i;
  }
  REQUIRE(lingering_fire != analysis::kNever);
  REQUIRE(m.event(lingering_fire).kind == trace::EventKind::kHookFired);
  const CommandResult why = cli("explain --event " + std::to_string(lingering_fire) + " " + trace);
  REQUIRE_MESSAGE(why.exit == 0, why.out);
  CHECK(has(why.out, "lingering: " + replaced + " and is still alive - a reference the program kept; its hook did nothing"));
  CHECK(has(why.out, "Reducer 2 prepared its first backward: Reducer 1 is no longer used"));
  CHECK_FALSE(has(why.out, "normal fire"));
  const CommandResult why_json = cli("explain --format jsonl --event " + std::to_string(lingering_fire) + " " + trace);
  CHECK(nlohmann::json::parse(why_json.out)["verdict"] == "lingering");

  REQUIRE(no_sync_noop != analysis::kNever);
  const analysis::EventIndex no_sync_fire = fire_of(m, no_sync_noop);
  REQUIRE(no_sync_fire != analysis::kNever);
  const CommandResult ns = cli("explain --event " + std::to_string(no_sync_fire) + " " + trace);
  REQUIRE(ns.exit == 0);
  CHECK(has(ns.out, "normal fire"));
  CHECK(has(ns.out, "ran forward inside no_sync(): its hook did nothing, as intended"));
  fs::remove_all(dir);
}
