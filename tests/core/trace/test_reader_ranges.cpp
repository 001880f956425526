// Reading traces of several writer threads with several decoding threads,
// each merging one time range (Note [Decoding straight into merged order]):
// the result must be the one-thread result whatever the chunk headers claim
// about their first times, and damage must read the same.
// (Named "trace file: ..." so that scripts/fuzz.sh saves their traces as seeds.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "testing/crafted_traces.h"
#include "testing/test_util.h"
#include "trace/event.h"
#include "trace/reader.h"

using namespace hookscope;
namespace crafted = hookscope::testing::crafted;

namespace {

constexpr size_t kChunk = 16;  // events per chunk: many chunks, cuts inside them
const unsigned kThreadCounts[] = {1, 2, 3, 4, 7, 64};

// Three writer threads (ids out of order) with ties within and across
// threads, and one that starts after the others have finished.
crafted::Spec three_writers() {
  crafted::Spec s;
  s.chunk_events = kChunk;
  const uint32_t ids[] = {5, 1, 9};
  for (int k = 0; k < 3; ++k) {
    for (uint64_t i = 0; i < 300; ++i) {
      crafted::Ev e;
      e.thread = ids[k];
      e.t = k == 2 ? 5000 + i : 1000 + i * (2 + k) / 3;
      e.kind = crafted::kApplyBegin;
      e.node = 1 + i;
      e.key = (uint64_t{ids[k]} << 32) | i;  // unique: says which event it is
      e.owner = static_cast<uint32_t>(k);
      s.events.push_back(e);
    }
  }
  return s;
}

// The first time of each writer's chunk c (events are grouped by thread).
uint64_t first_time(const crafted::Spec& s, uint32_t thread, size_t chunk) {
  size_t seen = 0;
  for (const crafted::Ev& e : s.events) {
    if (e.thread == thread && seen++ == chunk * kChunk) return e.t;
  }
  return 0;
}

// merge_chunks' order: by time, ties by thread, each thread's order kept.
std::vector<trace::Event> merged(const crafted::Spec& s) {
  std::vector<trace::Event> out;
  for (const crafted::Ev& e : s.events) {
    trace::Event ev;
    ev.t_ns = e.t;
    ev.node = e.node;
    ev.key = e.key;
    ev.arg = e.arg;
    ev.owner = e.owner;
    ev.actor = e.actor;
    ev.kind = static_cast<trace::EventKind>(e.kind);
    ev.sub = e.sub;
    ev.rank = e.rank;
    ev.thread = e.thread;
    out.push_back(ev);
  }
  std::stable_sort(out.begin(), out.end(), [](const trace::Event& a, const trace::Event& b) {
    return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.thread < b.thread;
  });
  return out;
}

bool same_events(const std::vector<trace::Event>& a, const std::vector<trace::Event>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(trace::Event)) == 0);
}

trace::TraceData read(const std::string& bytes, unsigned threads) {
  trace::ReadOptions options;
  options.threads = threads;
  return trace::read_trace_buffer(bytes.data(), bytes.size(), "ranges.hstrace", options);
}

// Chunk headers whose start is not their first time: 0, the largest time,
// far after, just before.
uint64_t lying_start(const crafted::Spec& s, uint32_t thread, size_t chunk) {
  switch ((thread * 7 + chunk * 3) % 4) {
    case 0: return 0;
    case 1: return UINT64_MAX;
    case 2: return first_time(s, thread, chunk) + 1'000'000;
    default: return first_time(s, thread, chunk) - 3;
  }
}

}  // namespace

TEST_CASE("trace file: several decoding threads read what one reads, whatever chunks claim") {
  crafted::Spec s = three_writers();
  const std::vector<trace::Event> expected = merged(s);
  struct Variant {
    const char* name;
    std::function<uint64_t(uint32_t, size_t)> t_start;
  };
  const Variant variants[] = {
      {"honest", [&](uint32_t th, size_t c) { return first_time(s, th, c); }},
      {"lying", [&](uint32_t th, size_t c) { return lying_start(s, th, c); }},
      {"raw", nullptr},  // t stored raw: every header says 0
  };
  for (const Variant& v : variants) {
    CAPTURE(v.name);
    s.t_start = v.t_start;
    const std::string bytes = crafted::encode(s);
    testing::save_seed(std::string("ranges-") + v.name, bytes);
    for (unsigned threads : kThreadCounts) {
      CAPTURE(threads);
      const trace::TraceData d = read(bytes, threads);
      CHECK(d.truncation == "");
      CHECK(!d.clock_went_back);
      CHECK(same_events(d.events, expected));
    }
  }
}

TEST_CASE("trace file: a clock going back or a bad chunk reads the same on any threads") {
  crafted::Spec s = three_writers();
  s.t_start = [&](uint32_t th, size_t c) { return lying_start(s, th, c); };
  SUBCASE("thread 1's clock goes back at its sixth chunk") {
    for (crafted::Ev& e : s.events) {
      if (e.thread == 1 && e.node > 5 * kChunk && e.node <= 6 * kChunk) e.t -= 500;
    }
    const std::string bytes = crafted::encode(s);
    testing::save_seed("ranges-clock-back", bytes);
    const std::vector<trace::Event> expected = merged(s);
    for (unsigned threads : kThreadCounts) {
      CAPTURE(threads);
      const trace::TraceData d = read(bytes, threads);
      CHECK(d.truncation == "");
      CHECK(d.clock_went_back);
      CHECK(d.clock_back_thread == 1);
      CHECK(d.clock_back_t_ns == 1000 + 80 - 500);  // its event 80, moved back
      CHECK(same_events(d.events, expected));
    }
  }
  SUBCASE("thread 9's fourth chunk holds an impossible kind") {
    s.events[2 * 300 + 3 * kChunk + 5].kind = 0;
    const std::string bytes = crafted::encode(s);
    testing::save_seed("ranges-bad-chunk", bytes);
    const trace::TraceData one = read(bytes, 1);
    // Chunks are in file order thread by thread: 5's, 1's, then 9's first three.
    const uint64_t kept = 2 * 300 + 3 * kChunk;
    CHECK(one.truncation.find("impossible event kind in event chunk; " + std::to_string(kept) +
                              " events recovered") != std::string::npos);
    REQUIRE(one.events.size() == kept);
    for (unsigned threads : kThreadCounts) {
      CAPTURE(threads);
      const trace::TraceData d = read(bytes, threads);
      CHECK(d.truncation == one.truncation);
      CHECK(same_events(d.events, one.events));
    }
  }
}

TEST_CASE("trace file: progress of a parallel read is reported on the reading thread, in order") {
  crafted::Spec s = three_writers();
  s.t_start = [&](uint32_t th, size_t c) { return first_time(s, th, c); };
  const std::string bytes = crafted::encode(s);
  for (unsigned threads : {2u, 3u}) {
    CAPTURE(threads);
    trace::ReadOptions options;
    options.threads = threads;
    std::vector<uint64_t> done;
    bool other_thread = false;
    const std::thread::id me = std::this_thread::get_id();
    options.progress = [&](uint64_t d, uint64_t total) {
      other_thread |= std::this_thread::get_id() != me;
      CHECK(d <= total);
      if (!done.empty()) CHECK(d >= done.back());
      done.push_back(d);
    };
    const trace::TraceData d =
        trace::read_trace_buffer(bytes.data(), bytes.size(), "ranges.hstrace", options);
    CHECK(d.events.size() == s.events.size());
    CHECK(!other_thread);
    REQUIRE(!done.empty());
    CHECK(done.back() == bytes.size());
  }
}
