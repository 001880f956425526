// The tests' own helpers (tests/support/testing/): a TempDir is unique and
// goes with its contents; a trace made in memory and written by
// write_trace_file reads back with the same events and names.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "testing/temp_dir.h"
#include "testing/write_trace.h"
#include "trace/reader.h"

using namespace hookscope;
namespace fs = std::filesystem;

TEST_CASE("test support: two TempDirs of one name differ, and each is removed with its files") {
  fs::path kept;
  {
    testing::TempDir a("hookscope-support"), b("hookscope-support");
    CHECK(a.path != b.path);
    CHECK(fs::is_directory(a.path));
    std::ofstream(a.file("x.txt")) << "x";
    CHECK(fs::exists(a.path / "x.txt"));
    kept = a.path;
  }
  CHECK_FALSE(fs::exists(kept));
}

TEST_CASE("test support: write_trace_file writes a built trace that reads back with its names") {
  analysis::TraceBuilder b;
  const uint32_t owner = b.owner(trace::OwnerKind::kUser, "probe 7");
  const uint64_t node = b.accumulator("fc.weight [4]");
  const uint64_t key = b.add_hook(node, trace::HookKind::kPost, owner);
  b.fire(node, key, trace::HookKind::kPost, owner);
  trace::TraceData data = b.take();
  const size_t events = data.events.size();
  testing::TempDir dir("hookscope-support");
  const trace::WriterStats stats = testing::write_trace_file(std::move(data), dir.file("t.hstrace"), "made here");
  CHECK(stats.bytes_written > 0);
  trace::TraceData back = trace::read_trace(dir.file("t.hstrace"));
  CHECK(back.header.scenario == "made here");
  REQUIRE(back.events.size() == events);
  const analysis::Model m(std::move(back));
  REQUIRE(m.owners().size() >= 1);
  bool named = false;
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) named |= m.owner_name(o) == "probe 7";
  CHECK(named);
  REQUIRE(m.functions().size() == 1);
  CHECK(m.function_name(0).find("fc.weight") != std::string::npos);
}
