// Answers that are true (a user acts on them): explain never calls a fire it cannot
// prove "normal" and names the event's own Function; readiness counts do not
// wrap; a grid too large to hold is refused with a message; event indices,
// points and verbs on the command line are refused saying what was wrong.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <string>

#include "analysis/explain.h"
#include "analysis/model.h"
#include "analysis/readiness.h"
#include "testing/crafted_traces.h"
#include "testing/temp_dir.h"
#include "testing/test_util.h"
#include "trace/reader.h"

using namespace hookscope;
using namespace hookscope::analysis;
namespace crafted = hookscope::testing::crafted;

namespace {

Model load(const crafted::Builder& b) {
  const std::string bytes = crafted::encode(b.spec);
  return Model(trace::read_trace_buffer(bytes.data(), bytes.size(), "crafted"));
}

std::string write(const testing::TempDir& dir, const std::string& name, const crafted::Builder& b) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << crafted::encode(b.spec);
  return path;
}

testing::CommandResult cli(const std::string& args) {
  return testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " " + args);
}

bool any_step(const Explanation& x, const std::string& word) {
  return std::any_of(x.steps.begin(), x.steps.end(),
                     [&](const ExplainStep& s) { return s.text.find(word) != std::string::npos; });
}

// A Reducer (owner 1) that prepares for one backward pass in which parameter
// 0 is marked ready `marks` times.
crafted::Builder marked(uint32_t marks) {
  crafted::Builder b;
  b.ev(crafted::kOwnerCreated, 0, 0, b.intern("Reducer 1"), 1, crafted::kOwnerReducer);
  b.ev(crafted::kReducerConstructed, 0, 0, 1, 1, 0, 1);
  b.ev(crafted::kNodeCreated, 10, 0, b.intern("AccumulateGrad"), 0, 1);
  b.ev(crafted::kPrepareForBackward, 0, 0, 0, 1);
  b.ev(crafted::kBackwardBegin, 0, 0, 1);
  for (uint32_t i = 0; i < marks; ++i) b.ev(crafted::kMarkReady, 10, 0, 0, 1);
  b.ev(crafted::kBackwardEnd, 0, 0, 1);
  return b;
}

}  // namespace

TEST_CASE("explain: a fire of a key never added is unproven, with no invented add") {
  crafted::Builder b;  // Function 62 predates the recording: its hook may too, so nothing is malformed
  b.ev(crafted::kHookFired, 62, 3, 0, 5, crafted::kPost);
  const Model m = load(b);
  REQUIRE(m.malformations().empty());
  const Explanation x = explain_fire(m, 0);
  CHECK(x.verdict == FireVerdict::kUnproven);
  CHECK(to_string(x.verdict) == "unproven");
  CHECK(x.summary.find("normal") == std::string::npos);
  CHECK(x.summary.find("never shows key 3 added") != std::string::npos);
  REQUIRE_FALSE(x.steps.empty());
  CHECK(x.steps[0].at == kNever);  // no link to a made-up "#0 ... added"
  CHECK(x.steps[0].text.find("no hook_add for key 3") != std::string::npos);
  for (const ExplainStep& s : x.steps) CHECK(s.text.find("hook (key 3) added") == std::string::npos);

  // On a Function created while recording the trace calls the fire impossible: said so.
  for (const auto& c : crafted::catalogue(10)) {
    if (c.name != "unknown_hook") continue;
    const Model u(trace::read_trace_buffer(c.bytes.data(), c.bytes.size(), c.name));
    const Explanation y = explain_fire(u, 1);
    CHECK(y.verdict == FireVerdict::kUnproven);
    CHECK(y.summary.find("cannot be true") != std::string::npos);
    CHECK(y.summary.find("unknown_hook") != std::string::npos);
  }
}

TEST_CASE("explain: a hook of an owner never declared, or of none, is not a normal fire") {
  crafted::Builder b;
  b.ev(crafted::kNodeCreated, 1, 0, b.intern("MulBackward0"));
  b.ev(crafted::kHookAdded, 1, 5, 0, 44, crafted::kPost);  // owner 44 never created
  b.ev(crafted::kHookAdded, 1, 6, 0, 0, crafted::kPost);   // no owner at all
  b.ev(crafted::kHookFired, 1, 5, 0, 44, crafted::kPost);
  b.ev(crafted::kHookFired, 1, 6, 0, 0, crafted::kPost);
  const Model m = load(b);
  const Explanation undeclared = explain_fire(m, 3);
  CHECK(undeclared.verdict == FireVerdict::kUnproven);
  CHECK(undeclared.summary.find("owner #44 was never declared") != std::string::npos);
  CHECK(undeclared.steps[0].at == 1);  // the add is in the trace: linked
  const Explanation none = explain_fire(m, 4);
  CHECK(none.verdict == FireVerdict::kUnproven);
  CHECK(none.summary.find("names no owner") != std::string::npos);
  CHECK(none.summary.find("normal") == std::string::npos);
}

TEST_CASE("explain: the fire names its own Function, not the one the hook was added to") {
  crafted::Builder b;
  b.ev(crafted::kOwnerCreated, 0, 0, b.intern("grad clipper"), 3, crafted::kOwnerUser);
  b.ev(crafted::kNodeCreated, 1, 0, b.intern("AddBackward0"));
  b.ev(crafted::kHookAdded, 1, 5, 0, 3, crafted::kPost);
  b.ev(crafted::kHookFired, 1, 5, 0, 3, crafted::kPost);
  b.ev(crafted::kHookFired, 77777, 5, 0, 3, crafted::kPost);
  const Model m = load(b);
  const Explanation own = explain_fire(m, 3);
  CHECK(own.verdict == FireVerdict::kNormal);  // all of it proven: still "normal"
  CHECK(any_step(own, "fired on AddBackward0"));
  const Explanation other = explain_fire(m, 4);
  CHECK(any_step(other, "fired on unknown Function #77777"));
  CHECK_FALSE(any_step(other, "fired on AddBackward0"));
  CHECK(any_step(other, "added to AddBackward0"));  // where it was added stays true
}

TEST_CASE("readiness: 65,536 marks of one parameter count 65,536, not 0 (\"unused\")") {
  const Model m = load(marked(65'536));
  const auto grids = readiness_grids(m);
  REQUIRE(grids.size() == 1);
  REQUIRE(grids[0].parameters.size() == 1);
  REQUIRE(grids[0].backwards.size() == 1);
  const ReadinessCell& c = grids[0].cell(0, 0);
  CHECK(c.marks == 65'536);
  CHECK(c.status == Readiness::kOk);

  testing::TempDir dir("hookscope_answers");
  const auto r = cli("readiness " + write(dir, "marks.hstrace", marked(65'536)) + " --format jsonl");
  REQUIRE(r.exit == 0);
  const auto j = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  CHECK(j["marks"] == 65'536);
  CHECK(j["status"] == "ok");
}

TEST_CASE("readiness: a map past the cell budget is refused before allocating, with a message") {
  // 5,000 parameter indices x 5,000 passes = 25M cells from 20k events (Note [Readiness map size])
  const crafted::Builder b = crafted::readiness_passes(5000, 5000, [](uint32_t k) { return k; });
  const Model m = load(b);
  CHECK_THROWS_WITH_AS(readiness_grids(m), doctest::Contains("5000 parameters x 5000 backward passes"),
                       ReadinessTooLarge);
  testing::TempDir dir("hookscope_answers");
  const auto r = cli("readiness " + write(dir, "wide.hstrace", b));
  CHECK(r.exit == 2);
  CHECK(r.out.find("too large to show") != std::string::npos);
  CHECK(r.out.find("out of memory") == std::string::npos);
}

TEST_CASE("cli: event indices say what was wrong - not a number, below 0, the last event is #N") {
  testing::TempDir dir("hookscope_answers");
  const std::string file = write(dir, "marks.hstrace", marked(4));  // 10 events: #0 to #9
  const std::regex long_number("[0-9]{20,}");
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"state " + file + " --at abc", "'abc' is not a number"},
           {"state " + file + " --at -5", "'-5' is below 0"},
           {"state " + file + " --at 10", "the last event is #9"},
           {"state " + file + " --at 99999999999999999999999", "--at 99999999999999999999999: no such event; the last event is #9"},
           {"export " + file + " --format dot --at 1e3 -o -", "'1e3' is not a number"},
           {"explain " + file + " --event -1", "'-1' is below 0"},
           {"explain " + file + " --event 18446744073709551616", "the last event is #9"},
           {"events " + file + " --from x", "'x' is not a number"},
           {"events " + file + " --from 12", "--from 12: no such event"},
       }) {
    CAPTURE(c.args);
    const auto r = cli(c.args);
    CAPTURE(r.out);
    CHECK(r.exit == 2);
    CHECK(r.out.find(c.says) != std::string::npos);
    CHECK(r.out.find("9223372036854775807") == std::string::npos);  // never clamped
    if (c.args.find("9999999") == std::string::npos && c.args.find("18446744073709551616") == std::string::npos) {
      CHECK_FALSE(std::regex_search(r.out, long_number));  // no 309-digit "range"
    }
  }
  const auto ok = cli("events " + file + " --from 8 --to 99999999999999999999999");
  CHECK(ok.exit == 0);  // --to is a bound: past the end means to the end
  CHECK(std::count(ok.out.begin(), ok.out.end(), '\n') == 2);
}

TEST_CASE("cli: an unknown verb is named, with the verbs there are") {
  const auto r = cli("frobnicate x.hstrace");
  CHECK(r.exit == 2);
  CHECK(r.out.find("'frobnicate' is not a verb") != std::string::npos);
  CHECK(r.out.find("explain") != std::string::npos);
  CHECK(r.out.find("A subcommand is required") == std::string::npos);
  CHECK(cli("info --help").exit == 0);  // options and real verbs still parse
}

TEST_CASE("cli: diff --at names the trace that lacks the point, never 'rank 65535'") {
  testing::TempDir dir("hookscope_answers");
  const std::string with = write(dir, "with.hstrace", marked(1));
  crafted::Builder none;
  none.ev(crafted::kNodeCreated, 1, 0, none.intern("MulBackward0"));
  const std::string without = write(dir, "without.hstrace", none);
  auto r = cli("diff " + with + " " + without + " --at backward:1");
  CHECK(r.exit == 2);
  CHECK(r.out.find("B (" + without + ") lacks it: the trace has no backward passes") != std::string::npos);
  CHECK(r.out.find("A (") == std::string::npos);
  CHECK(r.out.find("65535") == std::string::npos);
  r = cli("diff " + with + " " + with + " --at backward:2");
  CHECK(r.out.find("A (") != std::string::npos);
  CHECK(r.out.find("B (") != std::string::npos);
  // a point wrong in itself is said once, plainly
  for (const auto& wrong : std::vector<std::pair<std::string, std::string>>{
           {"backward:abc", "'abc' is not a number"},
           {"backward:-2", "'-2' is below 1"},
           {"backward:0", "counts start at 1"},
           {"backward:99999999999999999999999", "more than any trace holds"}}) {
    const std::string& point = wrong.first;  // not a binding: clang 14 cannot CAPTURE one
    const std::string& says = wrong.second;
    CAPTURE(point);
    r = cli("diff " + with + " " + with + " --at " + point);
    CHECK(r.exit == 2);
    CHECK(r.out.find(says) != std::string::npos);
    CHECK(r.out.find("lacks it") == std::string::npos);
  }
}
