// Events kept packed (Note [Packed events]): the store gives back exactly the
// events packed, whatever their values; the reader's packed path reads what
// the Event-array path reads (damage included); a Model loaded through it is
// the Model loaded from arrays.
// (Named "trace file: ..." where they make traces, so that scripts/fuzz.sh saves seeds.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "testing/crafted_traces.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"
#include "testing/temp_dir.h"
#include "trace/packed_events.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace hookscope;
using trace::Event;
using trace::PackedEvents;
namespace crafted = hookscope::testing::crafted;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool same(const Event& a, const Event& b) { return std::memcmp(&a, &b, sizeof(Event)) == 0; }

// Checks every way of reading `p` against `events`.
void check_store(const PackedEvents& p, const std::vector<Event>& events) {
  REQUIRE(p.size() == events.size());
  CHECK(p.num_blocks() == (events.size() + PackedEvents::kBlock - 1) / PackedEvents::kBlock);
  size_t bad = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    bad += !same(p.at(i), events[i]);
    bad += p.t_ns(i) != events[i].t_ns;
  }
  CHECK(bad == 0);
  Event buf[PackedEvents::kBlock];
  for (size_t b = 0; b < p.num_blocks(); ++b) {
    const size_t n = p.decode_block(b, buf);
    REQUIRE(n == std::min(PackedEvents::kBlock, events.size() - b * PackedEvents::kBlock));
    for (size_t k = 0; k < n; ++k) bad += !same(buf[k], p.at(b * PackedEvents::kBlock + k));
  }
  CHECK(bad == 0);
  const std::vector<Event> back = p.unpack();
  CHECK((back.size() == events.size() &&
         (events.empty() || std::memcmp(back.data(), events.data(), events.size() * sizeof(Event)) == 0)));
  uint64_t counts[256] = {}, expected[256] = {};
  p.count_kinds(counts);
  for (const Event& e : events) ++expected[static_cast<uint8_t>(e.kind)];
  CHECK(std::equal(counts, counts + 256, expected));
}

Event random_event(std::mt19937_64& rng, int style, size_t i) {
  Event e;
  auto wild = [&] { return rng(); };
  switch (style) {
    case 0:  // all zero
      break;
    case 1:  // all ones
      e.t_ns = e.node = e.key = e.arg = UINT64_MAX;
      e.owner = e.actor = e.thread = UINT32_MAX;
      e.kind = static_cast<trace::EventKind>(255);
      e.sub = 255;
      e.rank = UINT16_MAX;
      break;
    case 2:  // alternating extremes
      if (i % 2) {
        e.t_ns = e.node = e.key = e.arg = UINT64_MAX;
        e.owner = e.actor = e.thread = UINT32_MAX;
        e.rank = UINT16_MAX;
        e.sub = 255;
        e.kind = static_cast<trace::EventKind>(255);
      }
      break;
    case 3:  // wild
      e.t_ns = wild(), e.node = wild(), e.key = wild(), e.arg = wild();
      e.owner = static_cast<uint32_t>(wild()), e.actor = static_cast<uint32_t>(wild());
      e.kind = static_cast<trace::EventKind>(wild()), e.sub = static_cast<uint8_t>(wild());
      e.rank = static_cast<uint16_t>(wild()), e.thread = static_cast<uint32_t>(wild());
      break;
    case 5: {  // few wild values per field (dictionaries), more in later blocks
      const uint64_t distinct = 2 + (i / PackedEvents::kBlock) * 7 % 90;
      auto pick = [&] {
        uint64_t x = (rng() % distinct + 1) * 0x9E3779B97F4A7C15ull;
        return x ^ (x >> 29);
      };
      e.t_ns = 1000 + i;
      e.node = pick(), e.key = pick(), e.arg = rng() % 2 ? 0 : pick();
      e.owner = static_cast<uint32_t>(pick()), e.actor = static_cast<uint32_t>(pick());
      e.kind = static_cast<trace::EventKind>(pick()), e.sub = static_cast<uint8_t>(pick());
      e.rank = static_cast<uint16_t>(pick()), e.thread = static_cast<uint32_t>(pick());
      break;
    }
    default: {  // trace-like: rising time, ids near a base, zeros for some kinds
      e.t_ns = 1'000'000'000 + i * 37 + rng() % 20;
      const bool named = rng() % 3 != 0;
      e.node = named ? 5'000'000 + rng() % 2000 : 0;
      e.key = rng() % 4 == 0 ? (uint64_t{9} << 24 | rng() % 8) : 0;
      e.arg = rng() % 5 == 0 ? UINT64_MAX - rng() % 3 : rng() % 100;
      e.owner = static_cast<uint32_t>(rng() % 7);
      e.kind = static_cast<trace::EventKind>(1 + rng() % 16);
      e.thread = static_cast<uint32_t>(rng() % 3);
      break;
    }
  }
  return e;
}

std::vector<Event> random_events(size_t n, int style, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Event> out;
  for (size_t i = 0; i < n; ++i) out.push_back(random_event(rng, style, i));
  return out;
}

}  // namespace

TEST_CASE("packed events: every event back exactly, extremes and block boundaries included") {
  const size_t sizes[] = {0, 1, 2, 255, 256, 257, 511, 512, 513, 1000, 4097};
  for (int style = 0; style <= 5; ++style) {
    for (size_t n : sizes) {
      CAPTURE(style);
      CAPTURE(n);
      const std::vector<Event> events = random_events(n, style, 7 * n + style);
      check_store(PackedEvents::pack(events), events);
    }
  }
  SUBCASE("mixed styles within one block, each field alone wild") {
    std::mt19937_64 rng(3);
    std::vector<Event> events;
    for (size_t i = 0; i < 3000; ++i) events.push_back(random_event(rng, static_cast<int>(rng() % 6), i));
    check_store(PackedEvents::pack(events), events);
    for (int f = 0; f < 10; ++f) {
      std::vector<Event> one(700);
      for (size_t i = 0; i < one.size(); ++i) {
        const uint64_t v = i % 3 == 0 ? 0 : (i % 3 == 1 ? UINT64_MAX : rng());
        Event& e = one[i];
        switch (f) {
          case 0: e.t_ns = v; break;
          case 1: e.node = v; break;
          case 2: e.key = v; break;
          case 3: e.arg = v; break;
          case 4: e.owner = static_cast<uint32_t>(v); break;
          case 5: e.actor = static_cast<uint32_t>(v); break;
          case 6: e.kind = static_cast<trace::EventKind>(v); break;
          case 7: e.sub = static_cast<uint8_t>(v); break;
          case 8: e.rank = static_cast<uint16_t>(v); break;
          default: e.thread = static_cast<uint32_t>(v); break;
        }
      }
      CAPTURE(f);
      check_store(PackedEvents::pack(one), one);
    }
  }
}

// Note [Packing by records]: records of one word, of two with a field
// across the words, and wider ones (packed field after field).
TEST_CASE("packed events: records of every width around one and two words") {
  std::mt19937_64 rng(5);
  for (unsigned bits : {1u, 40u, 63u, 64u, 65u, 70u, 100u, 127u, 128u, 129u, 150u, 168u}) {
    CAPTURE(bits);
    // t_ns takes min(bits, 40) bits, node the rest up to 64, key the rest.
    const unsigned t_bits = std::min(bits, 40u);
    const unsigned node_bits = std::min(bits - t_bits, 64u);
    const unsigned key_bits = bits - t_bits - node_bits;
    auto top = [](unsigned w) {
      return w == 0 ? 0 : w == 64 ? UINT64_MAX : (uint64_t{1} << w) - 1;
    };
    std::vector<Event> events(600);
    for (size_t i = 0; i < events.size(); ++i) {
      Event& e = events[i];
      const bool low = i % 256 == 0, high = i % 256 == 1;  // each block's full range
      auto value = [&](unsigned w) { return low ? 0 : high ? top(w) : rng() & top(w); };
      e.t_ns = 1'000 + value(t_bits);
      e.node = 7 + value(node_bits);  // never 0: no zero escape
      e.key = 9 + value(key_bits);
      if (key_bits == 0) e.key = 9;
      if (node_bits == 0) e.node = 7;
      e.kind = trace::EventKind::kHookFired;
    }
    check_store(PackedEvents::pack(events), events);
  }
}

TEST_CASE("packed events: small values take few bytes, wild ones at most 82 bytes an event") {
  const std::vector<Event> zeros = random_events(25600, 0, 1);
  CHECK(PackedEvents::pack(zeros).memory_bytes() <= zeros.size() * 1);  // headers only
  const std::vector<Event> like = random_events(25600, 4, 1);
  CHECK(PackedEvents::pack(like).memory_bytes() <= like.size() * 16);
  // Few distinct values (hook keys, string ids) take a dictionary.
  const std::vector<Event> few = random_events(256 * 3, 5, 1);  // 2, 9, 16 values a field
  CHECK(PackedEvents::pack(few).memory_bytes() <= few.size() * 10);
  const std::vector<Event> wild = random_events(25600, 3, 1);
  CHECK(PackedEvents::pack(wild).memory_bytes() <= wild.size() * 82);
}

TEST_CASE("packed events: builders of consecutive parts join into the store of the whole") {
  const std::vector<Event> events = random_events(5000, 4, 11);
  const std::vector<std::vector<size_t>> cuts = {
      {}, {256}, {1}, {255, 257}, {100, 101, 102, 4999}, {0, 0, 5000}, {1000, 2000, 3000, 4000}};
  for (const auto& c : cuts) {
    std::vector<size_t> at = c;
    at.insert(at.begin(), 0);
    at.push_back(events.size());
    std::vector<trace::PackedEventsBuilder> parts;
    for (size_t k = 0; k + 1 < at.size(); ++k) {
      parts.emplace_back(at[k]);
      // In runs of uneven length, as the merge passes them.
      for (size_t i = at[k]; i < at[k + 1];) {
        const size_t n = std::min<size_t>(1 + (i * 7) % 300, at[k + 1] - i);
        parts.back().append(events.data() + i, n);
        i += n;
      }
    }
    check_store(trace::join_packed(parts), events);
  }
  SUBCASE("a part that claims the wrong start is still joined in order") {
    std::vector<trace::PackedEventsBuilder> parts;
    parts.emplace_back(0);
    parts.back().append(events.data(), 1000);
    parts.emplace_back(0);  // really starts at 1000
    parts.back().append(events.data() + 1000, 4000);
    check_store(trace::join_packed(parts), events);
  }
}

namespace {

// A recovery run with several steps (ranks as threads: several writers), recorded to `path`.
void record_recovery(const std::string& path, int steps) {
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = steps;
  trace::FileRecorder rec(path);
  rec.start();
  scenarios::run_ddp_scenario(o);
  rec.finish();
}

trace::TraceData read(const std::string& bytes, bool packed, unsigned threads) {
  trace::ReadOptions options;
  options.packed = packed;
  options.threads = threads;
  return trace::read_trace_buffer(bytes.data(), bytes.size(), "packed.hstrace", options);
}

// The packed read is the array read, packed: same events, strings and notes.
void check_same_read(const std::string& bytes, unsigned threads) {
  const trace::TraceData a = read(bytes, false, threads);
  const trace::TraceData b = read(bytes, true, threads);
  CHECK(b.events.empty());
  CHECK(b.truncation == a.truncation);
  CHECK(b.strings == a.strings);
  CHECK(b.dropped_events == a.dropped_events);
  CHECK(b.clock_went_back == a.clock_went_back);
  CHECK(b.clock_back_thread == a.clock_back_thread);
  CHECK(b.clock_back_t_ns == a.clock_back_t_ns);
  check_store(b.packed, a.events);
}

// Two models of the same traces agree on every event and table.
void check_same_model(const analysis::Model& a, const analysis::Model& b) {
  REQUIRE(a.num_events() == b.num_events());
  size_t bad = 0;
  for (size_t i = 0; i < a.num_events(); ++i) {
    bad += !same(a.event(i), b.event(i));
    bad += a.time_ns(i) != b.time_ns(i);
    bad += a.source(i) != b.source(i);
    bad += a.describe(i) != b.describe(i);
  }
  CHECK(bad == 0);
  // The batch accessor, over ranges that start and end inside blocks.
  std::vector<Event> batch(b.num_events());
  std::vector<int64_t> times(b.num_events());
  for (size_t begin = 0; begin < b.num_events(); begin += 300) {
    const size_t end = std::min(b.num_events(), begin + 1 + begin % 700);
    b.events(begin, end, batch.data() + begin, times.data() + begin);
    for (size_t i = begin; i < end; ++i) {
      bad += !same(batch[i], a.event(i));
      bad += times[i] != a.time_ns(i);
    }
  }
  CHECK(bad == 0);
  CHECK(a.functions().size() == b.functions().size());
  CHECK(a.edges().size() == b.edges().size());
  CHECK(a.hooks().size() == b.hooks().size());
  CHECK(a.segments().size() == b.segments().size());
  CHECK(a.owners().size() == b.owners().size());
  CHECK(a.reducers().size() == b.reducers().size());
  CHECK(a.collectives().size() == b.collectives().size());
  REQUIRE(a.malformations().size() == b.malformations().size());
  for (size_t k = 0; k < a.malformations().size(); ++k) {
    CHECK(a.malformations()[k].at == b.malformations()[k].at);
    CHECK(a.malformations()[k].kind == b.malformations()[k].kind);
  }
  CHECK(a.memory_bytes() == b.memory_bytes());
  CHECK(b.event_bytes() > 0);
  if (a.num_events() > 0) {
    const analysis::State sa = a.state_at(a.num_events() - 1), sb = b.state_at(b.num_events() - 1);
    CHECK(sa.functions.size() == sb.functions.size());
    CHECK(sa.owners.size() == sb.owners.size());
    CHECK(sa.tensor_hooks.size() == sb.tensor_hooks.size());
  }
}

}  // namespace

TEST_CASE("trace file: the packed read reads what the array read reads, cut anywhere") {
  testing::TempDir dir("hookscope-packed");
  const std::string path = dir.file("recovery.hstrace");
  record_recovery(path, 12);
  const std::string bytes = slurp(path);
  for (unsigned threads : {1u, 2u, 5u}) check_same_read(bytes, threads);
  // Cut short and damaged: the same truncation message and the same prefix.
  for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 97) {
    CAPTURE(cut);
    const std::string part = bytes.substr(0, cut);
    bool threw_a = false, threw_b = false;
    std::string what_a, what_b;
    try {
      (void)read(part, false, 2);
    } catch (const std::exception& e) {
      threw_a = true;
      what_a = e.what();
    }
    try {
      (void)read(part, true, 2);
    } catch (const std::exception& e) {
      threw_b = true;
      what_b = e.what();
    }
    CHECK(threw_a == threw_b);
    CHECK(what_a == what_b);
    if (!threw_a) check_same_read(part, 2);
  }
  for (size_t at = bytes.size() / 3; at < bytes.size(); at += bytes.size() / 11) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
    CAPTURE(at);
    check_same_read(flipped, 3);
  }
}

TEST_CASE("trace file: crafted traces read and analyse the same packed") {
  for (const crafted::Crafted& c : crafted::catalogue(300)) {
    CAPTURE(c.name);
    for (unsigned threads : {1u, 3u}) check_same_read(c.bytes, threads);
    analysis::Model from_array(read(c.bytes, false, 1));
    analysis::Model packed(read(c.bytes, true, 2));
    check_same_model(from_array, packed);
  }
}

TEST_CASE("trace file: a model loaded packed is the model loaded from arrays") {
  SUBCASE("a recorded recovery run, one trace and two traces merged") {
    testing::TempDir dir("hookscope-packed");
    const std::string path = dir.file("recovery.hstrace");
    record_recovery(path, 8);
    const std::string bytes = slurp(path);
    check_same_model(analysis::Model(read(bytes, false, 1)), analysis::Model(read(bytes, true, 2)));
    std::vector<trace::TraceData> arrays, packed;
    for (int k = 0; k < 2; ++k) {
      arrays.push_back(read(bytes, false, 1));
      packed.push_back(read(bytes, true, 2));
    }
    check_same_model(analysis::Model(std::move(arrays)), analysis::Model(std::move(packed)));
  }
  SUBCASE("the shipped samples") {
    const fs::path samples = HOOKSCOPE_SAMPLES_DIR;
    REQUIRE_MESSAGE(fs::exists(samples), "the build records them (assets/CMakeLists.txt)");
    size_t seen = 0;
    for (const auto& entry : fs::directory_iterator(samples)) {
      if (entry.path().extension() != ".hstrace") continue;
      CAPTURE(entry.path().string());
      trace::ReadOptions packed;
      packed.packed = true;
      check_same_model(analysis::Model(trace::read_trace(entry.path().string())),
                       analysis::Model(trace::read_trace(entry.path().string(), packed)));
      ++seen;
    }
    CHECK(seen >= 4);
  }
}
