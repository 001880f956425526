// Trace files: writer, reader, damage handling (Note [Trace file format]).
// Set HOOKSCOPE_TRACE_CORPUS=dir to also save the files these tests make
// there (scripts/fuzz.sh uses them as the fuzzer's seed corpus).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "scenarios/autograd_demo.h"
#include "testing/spawn_self.h"
#include "testing/test_util.h"
#include "trace/emit.h"
#include "trace/file_format.h"
#include "trace/reader.h"
#include "trace/recorder.h"
#include "trace/strings.h"
#include "trace/writer.h"

using namespace hookscope;
using trace::Event;
using trace::EventKind;

namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("hookscope-trace-test-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using testing::save_seed;

trace::TraceHeader scenario_header(const std::string& scenario) {
  trace::TraceHeader h;
  h.scenario = scenario;
  return h;
}

trace::TraceData read_bytes(const std::string& bytes, const trace::ReadOptions& opts = {}) {
  return trace::read_trace_buffer(bytes.data(), bytes.size(), "test.hstrace", opts);
}

bool same_events(const std::vector<Event>& a, const Event* b, size_t n) {
  return a.size() == n && (n == 0 || std::memcmp(a.data(), b, n * sizeof(Event)) == 0);
}
bool same_events(const std::vector<Event>& a, const std::vector<Event>& b) {
  return same_events(a, b.data(), b.size());
}

std::unique_ptr<trace::Chunk> make_chunk(uint32_t thread, const std::vector<Event>& ev) {
  auto c = std::make_unique<trace::Chunk>();
  c->thread = thread;
  for (Event e : ev) {
    e.thread = thread;
    c->events[c->count++] = e;
  }
  return c;
}

// Writes hand-made chunks straight to a file; returns the merge_chunks order.
std::vector<Event> write_chunks(
    const std::string& path, trace::TraceHeader header,
    const std::vector<std::pair<uint32_t, std::vector<Event>>>& chunks) {
  trace::TraceFileWriter writer(path, std::move(header));
  std::vector<std::unique_ptr<trace::Chunk>> copies;
  std::vector<const trace::Chunk*> view;
  for (const auto& [thread, ev] : chunks) {
    copies.push_back(make_chunk(thread, ev));
    view.push_back(copies.back().get());
    writer.on_chunk(make_chunk(thread, ev));
  }
  writer.close();
  return trace::merge_chunks(view);
}

// Forwards chunks to a file writer and keeps a copy: the expected result.
struct TeeSink : trace::ChunkSink {
  explicit TeeSink(trace::TraceFileWriter& w) : writer(w) {}
  void on_chunk(std::unique_ptr<trace::Chunk> chunk) override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      copies.push_back(std::make_unique<trace::Chunk>(*chunk));
    }
    writer.on_chunk(std::move(chunk));
  }
  void on_finish() override { writer.on_finish(); }
  std::vector<Event> expected() const {
    std::vector<const trace::Chunk*> view;
    for (const auto& c : copies) view.push_back(c.get());
    return trace::merge_chunks(view);
  }
  trace::TraceFileWriter& writer;
  std::mutex mutex;
  std::vector<std::unique_ptr<trace::Chunk>> copies;
};

void check_strings_match_process_table(const trace::TraceData& d) {
  REQUIRE(d.strings.size() <= trace::string_count());
  for (size_t i = 0; i < d.strings.size(); ++i) {
    if (d.strings[i] != trace::lookup(static_cast<uint32_t>(i))) FAIL("string " << i << " differs");
  }
}

// Blocks in a file as a reader sees them, with what a reader has after each.
struct BlockEnd {
  size_t begin, end;
  uint64_t events_after, strings_after;
};
std::vector<BlockEnd> walk_blocks(const std::string& bytes) {
  std::vector<BlockEnd> out;
  size_t at = trace::kPrefixBytes;
  uint64_t events = 0, strings = 1;
  while (bytes.size() - at >= trace::kBlockHeaderBytes + trace::kTrailerBytes) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + at;
    const auto type = static_cast<trace::BlockType>(trace::load_le<uint32_t>(p));
    const uint32_t len = trace::load_le<uint32_t>(p + 4);
    trace::ByteCursor c{p + 12, p + 12 + len};
    uint64_t a = 0, b = 0;
    c.get_varint(a);
    c.get_varint(b);
    if (type == trace::BlockType::kStrings) strings += b;
    if (type == trace::BlockType::kEvents) events += b;
    out.push_back({at, at + 12 + len, events, strings});
    at += 12 + len;
  }
  return out;
}

}  // namespace

TEST_CASE("trace file: every event kind and header field round-trip") {
  TempDir dir;
  trace::TraceHeader h;
  h.hookscope_version = "9.8.7-test";
  h.rank = 3;
  h.world_size = 8;
  h.host = "node-17.cluster";
  h.pid = 123456;
  h.start_wall_ns = 1700000000123456789;
  h.start_mono_ns = 987654321;
  h.clock = "steady_clock";
  h.scenario = "recovery --policy none";
  const uint32_t s1 = trace::intern("tf-roundtrip-a"), s2 = trace::intern("tf-roundtrip-b");

  std::mt19937_64 rng(42);
  std::vector<std::pair<uint32_t, std::vector<Event>>> chunks;
  uint64_t t = 1000;
  int kinds = 0;
  for (int round = 0; round < 6; ++round) {
    std::vector<Event> ev;
    for (int k = 1; k < static_cast<int>(EventKind::kCount); ++k) {
      auto kind = static_cast<EventKind>(k);
      if (trace::to_string(kind) == "unknown") continue;
      kinds += round == 0;
      Event e;
      t += round == 3 ? rng() >> 8 : rng() % 5000;  // widths from 2 to 8 bytes
      e.t_ns = t;
      e.kind = kind;
      const bool small = round % 2 == 0;
      e.node = small ? rng() % 300 : rng();
      e.key = small ? rng() % 10 : rng();
      e.arg = small ? rng() % 3 : rng();
      e.owner = static_cast<uint32_t>(rng());
      e.actor = small ? 0 : static_cast<uint32_t>(rng());
      e.sub = static_cast<uint8_t>(rng());
      e.rank = static_cast<uint16_t>(small ? 0 : rng());
      if (trace::event_arg_is_string(kind)) e.arg = rng() % 2 ? s1 : s2;
      ev.push_back(e);
    }
    chunks.push_back({static_cast<uint32_t>(round % 2), ev});
  }
  CHECK(kinds >= 30);
  const std::string path = dir.file("roundtrip.hstrace");
  auto expected = write_chunks(path, h, chunks);
  save_seed("roundtrip", slurp(path));

  trace::TraceData d = trace::read_trace(path);
  CHECK(d.truncation == "");
  CHECK(d.source == path);
  CHECK(d.header.version_major == 1);
  CHECK(d.header.version_minor == trace::kFormatMinor);
  CHECK(d.header.hookscope_version == h.hookscope_version);
  CHECK(d.header.rank == h.rank);
  CHECK(d.header.world_size == h.world_size);
  CHECK(d.header.host == h.host);
  CHECK(d.header.pid == h.pid);
  CHECK(d.header.start_wall_ns == h.start_wall_ns);
  CHECK(d.header.start_mono_ns == h.start_mono_ns);
  CHECK(d.header.clock == h.clock);
  CHECK(d.header.scenario == h.scenario);
  CHECK(d.dropped_events == 0);
  REQUIRE(d.events.size() == expected.size());
  CHECK(same_events(d.events, expected));
  CHECK(d.str(s1) == "tf-roundtrip-a");
  check_strings_match_process_table(d);

  auto index = trace::read_trace_index(path);
  REQUIRE(index.has_value());
  CHECK(index->total_events == expected.size());
  CHECK(index->chunks.size() == chunks.size());
  CHECK(index->header.scenario == h.scenario);
}

TEST_CASE("trace file: a recorded autograd demo reads back exactly, compactly") {
  TempDir dir;
  const std::string path = dir.file("demo.hstrace");
  trace::TraceFileWriter writer(path, scenario_header("autograd-demo --steps 40"));
  TeeSink tee(writer);
  trace::Recorder rec(tee);
  rec.start();
  scenarios::run_autograd_demo({.steps = 40});
  rec.finish();
  writer.close();
  const std::vector<Event> expected = tee.expected();
  save_seed("autograd-demo", slurp(path));

  trace::TraceData d = trace::read_trace(path);
  CHECK(d.truncation == "");
  CHECK(d.header.scenario == "autograd-demo --steps 40");
  CHECK(d.header.pid == ::getpid());
  CHECK(!d.header.host.empty());
  REQUIRE(d.events.size() == expected.size());
  CHECK(same_events(d.events, expected));
  check_strings_match_process_table(d);
  CHECK(writer.stats().events_written == expected.size());

  // Bytes per event, counted as what 40 more steps add: a writer ships the
  // whole process-wide string table, which in a one-process run of this
  // binary holds every earlier test's strings (79.9 bytes/event then).
  const std::string longer = dir.file("demo80.hstrace");
  {
    trace::FileRecorder rec80(longer, scenario_header("autograd-demo --steps 80"));
    rec80.start();
    scenarios::run_autograd_demo({.steps = 80});
    rec80.finish();
  }
  const size_t n80 = trace::read_trace(longer).events.size();
  REQUIRE(n80 > d.events.size());
  const double bytes_per_event =
      static_cast<double>(fs::file_size(longer) - fs::file_size(path)) / (n80 - d.events.size());
  MESSAGE((n80 - d.events.size()) << " more events, " << bytes_per_event << " bytes/event on disk");
  CHECK(bytes_per_event <= 16.0);
}

TEST_CASE("trace file: cut at any block boundary or byte, the complete-block prefix is recovered") {
  TempDir dir;
  trace::TraceHeader h;
  h.rank = -1;
  const std::string path = dir.file("cut.hstrace");
  std::vector<Event> all;
  {
    // A string block before each chunk: the string interned just before it.
    trace::TraceFileWriter writer(path, h);
    for (int c = 0; c < 6; ++c) {
      const uint32_t name = trace::intern("tf-cut-" + std::to_string(c));
      std::vector<Event> ev(50 + 30 * c);
      for (size_t i = 0; i < ev.size(); ++i) {
        ev[i].t_ns = 1000000 * c + 100 * i;
        ev[i].kind = i % 2 ? EventKind::kHookFired : EventKind::kNodeCreated;
        ev[i].node = c * 1000 + i;
        ev[i].arg = i % 2 ? i : name;
        ev[i].thread = 7;
        all.push_back(ev[i]);
      }
      writer.on_chunk(make_chunk(7, ev));
      while (writer.stats().chunks_written < static_cast<uint64_t>(c + 1))
        std::this_thread::yield();
    }
    writer.close();
  }
  const std::string bytes = slurp(path);
  save_seed("cut", bytes);
  const trace::TraceData full = read_bytes(bytes);
  REQUIRE(full.truncation == "");
  REQUIRE(same_events(full.events, all));
  const auto blocks = walk_blocks(bytes);
  REQUIRE(blocks.size() >= 14);  // header, 6 x (strings, chunk), footer
  const size_t header_end = blocks[0].end;

  std::vector<size_t> cuts;
  for (const BlockEnd& b : blocks) cuts.insert(cuts.end(), {b.begin, b.end - 1, b.end, b.end + 1});
  std::mt19937 rng(7);
  for (int i = 0; i < 150; ++i) cuts.push_back(rng() % bytes.size());
  for (size_t cut : {size_t{0}, size_t{5}, size_t{11}, bytes.size() - 1, bytes.size() - 16}) {
    cuts.push_back(cut);
  }
  for (size_t cut : cuts) {
    CAPTURE(cut);
    if (cut >= bytes.size()) continue;
    const std::string part = bytes.substr(0, cut);
    if (cut < header_end) {
      CHECK_THROWS_AS(read_bytes(part), trace::TraceFormatError);
      continue;
    }
    trace::TraceData d = read_bytes(part);
    const BlockEnd* last = nullptr;
    for (const BlockEnd& b : blocks) {
      if (b.end <= cut) last = &b;
    }
    REQUIRE(last != nullptr);
    CHECK(d.truncation.find("truncated at byte " + std::to_string(last->end) + ":") == 0);
    CHECK(d.truncation.find("; " + std::to_string(last->events_after) + " events recovered") !=
          std::string::npos);
    CHECK(same_events(d.events, all.data(), last->events_after));
    CHECK(d.strings.size() == last->strings_after);
    check_strings_match_process_table(d);
  }
  save_seed("cut-no-footer", bytes.substr(0, blocks[blocks.size() - 2].end));
}

TEST_CASE("trace file: a flipped byte anywhere is detected, never read as data") {
  TempDir dir;
  std::vector<std::pair<uint32_t, std::vector<Event>>> chunks;
  const uint32_t name = trace::intern("tf-flip");
  for (int c = 0; c < 3; ++c) {
    std::vector<Event> ev(20);
    for (size_t i = 0; i < ev.size(); ++i) {
      ev[i].t_ns = 5000 * c + 37 * i;
      ev[i].kind = i == 0 ? EventKind::kOwnerCreated : EventKind::kHookAdded;
      ev[i].node = i;
      ev[i].key = 100 + i;
      ev[i].owner = 1;
      ev[i].arg = i == 0 ? name : 0;
    }
    chunks.push_back({0, ev});
  }
  const std::string path = dir.file("flip.hstrace");
  const std::vector<Event> all = write_chunks(path, scenario_header("flip"), chunks);
  const std::string bytes = slurp(path);
  save_seed("flip", bytes);
  const auto blocks = walk_blocks(bytes);
  int errors = 0, truncations = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      CAPTURE(i);
      CAPTURE(int(mask));
      trace::TraceData d;
      try {
        d = read_bytes(bad);
      } catch (const trace::TraceFormatError& e) {
        CHECK(i < blocks[0].end);  // only the prefix and header make the file unreadable
        ++errors;
        continue;
      }
      ++truncations;
      // The damaged block (or the trailer) is where reading stopped.
      size_t stop = blocks.back().end;
      uint64_t events = blocks.back().events_after;
      for (size_t b = 1; b < blocks.size(); ++b) {
        if (i >= blocks[b].begin && i < blocks[b].end) {
          stop = blocks[b].begin;
          events = blocks[b - 1].events_after;
        }
      }
      REQUIRE(d.truncation.find("truncated at byte " + std::to_string(stop) + ":") == 0);
      CHECK(same_events(d.events, all.data(), events));
      CHECK(d.header.scenario == "flip");
    }
  }
  MESSAGE(bytes.size() << " bytes x 3 flips: " << errors << " errors, " << truncations
                       << " truncations");
  CHECK(errors > 0);
  CHECK(truncations > 0);
}

TEST_CASE("trace file: versions: newer major refused, older named legacy, newer minor read") {
  TempDir dir;
  const std::string path = dir.file("v.hstrace");
  write_chunks(path, {}, {{0, {Event{.t_ns = 5, .kind = EventKind::kBackwardBegin}}}});
  const std::string bytes = slurp(path);
  auto with_version = [&](uint16_t major, uint16_t minor) {
    std::string b = bytes;
    std::memcpy(b.data() + 8, &major, 2);
    std::memcpy(b.data() + 10, &minor, 2);
    // Re-seal the header, whose checksum covers the version.
    const auto* p = reinterpret_cast<const uint8_t*>(b.data());
    const uint32_t len = trace::load_le<uint32_t>(p + 16);
    uint32_t crc = trace::crc32(p, 20);
    crc = trace::crc32(p + 24, len, crc);
    std::memcpy(b.data() + 20, &crc, 4);
    return b;
  };
  CHECK_THROWS_WITH_AS(read_bytes(with_version(2, 0)),
                       "test.hstrace: made by a newer hookscope (v2.0), this one reads up to "
                       "v1.x; open it with a newer hookscope at byte 8",
                       trace::TraceFormatError);
  CHECK_THROWS_WITH_AS(read_bytes(with_version(0, 9)),
                       doctest::Contains("made by an older hookscope (v0.9), a legacy format"),
                       trace::TraceFormatError);
  trace::TraceData d = read_bytes(with_version(1, 7));
  CHECK(d.truncation == "");
  CHECK(d.header.version_minor == 7);
  CHECK(d.events.size() == 1);
  std::string unsealed = bytes;
  unsealed[10] = 3;  // minor 3 without re-sealing
  CHECK_THROWS_WITH_AS(read_bytes(unsealed), "test.hstrace: bad checksum in header at byte 12",
                       trace::TraceFormatError);
  CHECK_THROWS_WITH_AS(read_bytes("GIF89a..."), doctest::Contains("not a hookscope trace"),
                       trace::TraceFormatError);
  CHECK_THROWS_WITH_AS(read_bytes(""), doctest::Contains("empty file"), trace::TraceFormatError);

  // Blocks a newer minor version adds are skipped when marked skippable;
  // any other unknown block type is damage.
  const size_t footer = walk_blocks(bytes).back().begin;
  std::string extended = bytes.substr(0, footer);
  trace::append_block(extended, 77 | trace::kBlockSkippable, "future data");
  d = read_bytes(extended);
  CHECK(d.events.size() == 1);
  CHECK(d.truncation.find("the recording ended without its footer: the process was killed or crashed") != std::string::npos);
  trace::append_block(extended, 77, "future data");
  d = read_bytes(extended);
  CHECK(d.events.size() == 1);
  CHECK(d.truncation.find("unknown block type 77") != std::string::npos);
}

TEST_CASE("trace file: two threads recording at once, merged as merge_chunks merges") {
  TempDir dir;
  const std::string path = dir.file("threads.hstrace");
  trace::TraceFileWriter writer(path, {}, {.queue_chunks = 2});
  TeeSink tee(writer);
  trace::Recorder rec(tee);
  rec.start();
  constexpr uint64_t kPerThread = 3 * trace::kChunkEvents + 17;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (uint16_t t = 0; t < 2; ++t) {
    threads.emplace_back([t, &ready] {
      trace::set_thread_rank(t);
      ++ready;
      while (ready.load() < 2) std::this_thread::yield();  // start together: events interleave
      for (uint64_t i = 0; i < kPerThread; ++i) trace::emit(EventKind::kHookFired, 0, t + 1, i);
    });
  }
  for (auto& th : threads) th.join();
  rec.finish();
  writer.close();
  trace::TraceData d = trace::read_trace(path);
  CHECK(d.truncation == "");
  CHECK(same_events(d.events, tee.expected()));
  uint64_t next[3] = {0, 0, 0};
  for (const Event& e : d.events) {
    if (e.kind != EventKind::kHookFired) continue;
    REQUIRE(e.node >= 1);
    REQUIRE(e.node <= 2);
    CHECK(e.key == next[e.node]++);
    CHECK(e.rank == e.node - 1);
  }
  CHECK(next[1] == kPerThread);
  CHECK(next[2] == kPerThread);
}

TEST_CASE("trace file: merge order equals merge_chunks with tied and out-of-order clocks") {
  TempDir dir;
  auto ev = [](std::initializer_list<uint64_t> ts) {
    std::vector<Event> v;
    for (uint64_t t : ts)
      v.push_back({.t_ns = t, .node = v.size(), .kind = EventKind::kApplyBegin});
    return v;
  };
  // Ties across threads and within a thread; then a thread whose clock goes back.
  auto sorted =
      write_chunks(dir.file("a.hstrace"), {},
                   {{2, ev({1, 5, 5, 9})}, {1, ev({5, 5, 6})}, {2, ev({9, 12})}, {0, ev({0, 12})}});
  CHECK(same_events(trace::read_trace(dir.file("a.hstrace")).events, sorted));
  auto unsorted = write_chunks(dir.file("b.hstrace"), {},
                               {{1, ev({4, 2, 2, 8})}, {0, ev({3, 1})}, {1, ev({1, 9})}});
  CHECK(same_events(trace::read_trace(dir.file("b.hstrace")).events, unsorted));
  save_seed("threads-sorted", slurp(dir.file("a.hstrace")));
  save_seed("threads-unsorted", slurp(dir.file("b.hstrace")));
}

namespace {
// Holds the writer thread in on_chunk_written until opened.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  void pass() {
    std::unique_lock<std::mutex> lock(m);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return entered > 0; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
};

std::vector<Event> numbered(uint64_t chunk, size_t n) {
  std::vector<Event> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = {.t_ns = chunk * 1000 + i, .node = chunk, .key = i, .kind = EventKind::kHookFired};
  return v;
}
}  // namespace

TEST_CASE("trace file: back-pressure: a full queue blocks the emitting thread, nothing is lost") {
  TempDir dir;
  Gate gate;
  const std::string path = dir.file("bp.hstrace");
  trace::TraceFileWriter writer(
      path, {},
      {.queue_chunks = 1, .on_chunk_written = [&](const trace::WriterStats&) { gate.pass(); }});
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    for (uint64_t c = 0; c < 8; ++c) {
      writer.on_chunk(make_chunk(0, numbered(c, 100)));
      ++pushed;
    }
  });
  gate.wait_entered();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(pushed.load() <= 2);  // one written (held at the gate), one queued, the rest wait
  gate.release();
  producer.join();
  writer.close();
  trace::TraceData d = trace::read_trace(path);
  CHECK(d.truncation == "");
  CHECK(d.dropped_events == 0);
  REQUIRE(d.events.size() == 800);
  for (size_t i = 0; i < d.events.size(); ++i) CHECK(d.events[i].node == i / 100);
}

TEST_CASE("trace file: ring-buffer mode drops the oldest waiting chunks and counts them") {
  TempDir dir;
  Gate gate;
  const std::string path = dir.file("ring.hstrace");
  trace::TraceFileWriter writer(
      path, {},
      {.queue_chunks = 2, .ring_buffer = true, .on_chunk_written = [&](const trace::WriterStats&) {
         gate.pass();
       }});
  writer.on_chunk(make_chunk(0, numbered(0, 100)));
  gate.wait_entered();  // chunk 0 is written; chunks 1..9 pile up in a queue of 2
  for (uint64_t c = 1; c < 10; ++c) writer.on_chunk(make_chunk(0, numbered(c, 100)));
  CHECK(writer.stats().dropped_events == 700);
  gate.release();
  writer.close();
  const std::string bytes = slurp(path);
  save_seed("ring", bytes);
  trace::TraceData d = read_bytes(bytes);
  CHECK(d.truncation == "");
  CHECK(d.dropped_events == 700);
  REQUIRE(d.events.size() == 300);
  CHECK(d.events[0].node == 0);
  CHECK(d.events[100].node == 8);
  CHECK(d.events[299].node == 9);
  // A ring-buffer file cut before its footer still knows what was dropped.
  trace::TraceData cut = read_bytes(bytes.substr(0, walk_blocks(bytes).back().begin));
  CHECK(cut.dropped_events == 700);
  CHECK(cut.events.size() == 300);
}

TEST_CASE("trace file: pause and resume - progress - errors name the file") {
  TempDir dir;
  const std::string path = dir.file("pause.hstrace");
  trace::FileRecorder rec(path);
  rec.start();
  trace::emit(EventKind::kBackwardBegin, 0, 1);
  rec.pause();
  trace::emit(EventKind::kBackwardBegin, 0, 2);
  rec.resume();
  trace::emit(EventKind::kBackwardBegin, 0, 3);
  rec.finish();
  std::vector<uint64_t> progress;
  trace::ReadOptions opts;
  opts.progress = [&](uint64_t done, uint64_t total) {
    CHECK(done <= total);
    progress.push_back(done);
  };
  trace::TraceData d = trace::read_trace(path, opts);
  std::vector<uint64_t> nodes;
  for (const Event& e : d.events) {
    if (e.kind == EventKind::kBackwardBegin) nodes.push_back(e.node);
  }
  CHECK(nodes == std::vector<uint64_t>{1, 3});
  REQUIRE(!progress.empty());
  CHECK(progress.back() == fs::file_size(path));

  CHECK_THROWS_WITH_AS(trace::read_trace(dir.file("missing.hstrace")),
                       doctest::Contains("missing.hstrace"), std::runtime_error);
  CHECK_THROWS_WITH_AS(trace::FileRecorder(dir.file("no/such/dir/x.hstrace")),
                       doctest::Contains("cannot create trace file"), std::runtime_error);
  CHECK(!trace::read_trace_index_buffer(slurp(path).data(), slurp(path).size() - 1).has_value());
}

TEST_CASE("trace file: parallel decoding reads the same events and stops at the same bad chunk") {
  TempDir dir;
  std::vector<std::pair<uint32_t, std::vector<Event>>> chunks;
  for (uint64_t c = 0; c < 40; ++c)
    chunks.push_back({static_cast<uint32_t>(c % 3), numbered(c, 100)});
  const std::vector<Event> all = write_chunks(dir.file("par.hstrace"), {}, chunks);
  chunks[25].second[7].kind = EventKind::kNone;  // caught only when the chunk is decoded
  write_chunks(dir.file("bad.hstrace"), {}, chunks);
  std::vector<Event> prefix;
  {
    std::vector<std::unique_ptr<trace::Chunk>> copies;
    std::vector<const trace::Chunk*> view;
    for (size_t c = 0; c < 25; ++c) {
      copies.push_back(make_chunk(chunks[c].first, chunks[c].second));
      view.push_back(copies.back().get());
    }
    prefix = trace::merge_chunks(view);
  }
  for (unsigned threads : {1u, 2u, 3u}) {
    CAPTURE(threads);
    trace::ReadOptions opts;
    opts.threads = threads;
    trace::TraceData d = trace::read_trace(dir.file("par.hstrace"), opts);
    CHECK(d.truncation == "");
    CHECK(same_events(d.events, all));
    trace::TraceData bad = trace::read_trace(dir.file("bad.hstrace"), opts);
    CHECK(bad.truncation.find("impossible event kind in event chunk; 2500 events recovered") !=
          std::string::npos);
    CHECK(same_events(bad.events, prefix));
  }
}

// Note [Decoding straight into merged order]: the one-thread reader merges
// while it decodes, and falls back to decode-then-merge on anything unusual.
TEST_CASE("trace file: merging while decoding equals decode-then-merge, clocks going back too") {
  TempDir dir;
  std::vector<std::pair<uint32_t, std::vector<Event>>> chunks;
  for (uint64_t c = 0; c < 30; ++c) chunks.push_back({static_cast<uint32_t>(c % 4), numbered(c / 2, 50)});
  const std::vector<Event> all = write_chunks(dir.file("ok.hstrace"), {}, chunks);
  // Thread 1's clock goes back between two of its chunks (each sorted alone).
  chunks[13].second = numbered(0, 50);
  const std::vector<Event> back = write_chunks(dir.file("back.hstrace"), {}, chunks);
  for (unsigned threads : {1u, 2u}) {
    CAPTURE(threads);
    trace::ReadOptions opts;
    opts.threads = threads;
    std::vector<uint64_t> progress;
    opts.progress = [&](uint64_t done, uint64_t total) {
      CHECK(done <= total);
      if (!progress.empty()) CHECK(done >= progress.back());
      progress.push_back(done);
    };
    trace::TraceData d = trace::read_trace(dir.file("ok.hstrace"), opts);
    CHECK(d.truncation == "");
    CHECK(!d.clock_went_back);
    CHECK(same_events(d.events, all));
    REQUIRE(!progress.empty());
    CHECK(progress.back() == fs::file_size(dir.file("ok.hstrace")));
    progress.clear();
    trace::TraceData b = trace::read_trace(dir.file("back.hstrace"), opts);
    CHECK(b.truncation == "");
    CHECK(b.clock_went_back);
    CHECK(b.clock_back_thread == 1);
    CHECK(b.clock_back_t_ns == 0);
    CHECK(same_events(b.events, back));
  }
}

namespace {
// The child half of the next test: records until it is killed.
[[noreturn]] void record_until_killed(const std::string& path) {
  trace::FileRecorder rec(path, scenario_header("killed"));
  rec.start();
  for (uint64_t i = 0;; ++i) {
    if (i % 1000 == 0) trace::intern("tf-killed-" + std::to_string(i));
    trace::emit(EventKind::kHookFired, 0, 1, i);
  }
}
}  // namespace

TEST_CASE("trace file: a process killed while recording leaves a readable trace") {
  if (const char* path = std::getenv("HOOKSCOPE_TRACE_KILL_CHILD")) record_until_killed(path);
  TempDir dir;
  const std::string path = dir.file("killed.hstrace");
  const pid_t child =
      testing::spawn_self("trace file: a process killed*", "HOOKSCOPE_TRACE_KILL_CHILD=" + path);
  REQUIRE(child > 0);
  // Kill it once it has written a good part of a megabyte, mid-run.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::error_code ec;
  while (std::chrono::steady_clock::now() < deadline &&
         (!fs::exists(path, ec) || fs::file_size(path, ec) < 200'000)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));

  trace::TraceData d = trace::read_trace(path);
  MESSAGE(d.truncation);
  CHECK(d.truncation.rfind("truncated at byte ", 0) == 0);
  CHECK(d.header.scenario == "killed");
  uint64_t next = 0;
  bool in_order = true;  // a prefix of the emitted events: none lost in between
  for (const Event& e : d.events) {
    if (e.kind == EventKind::kHookFired && e.node == 1) in_order &= e.key == next++;
  }
  CHECK(in_order);
  CHECK(next > 10'000);  // at least the events of the first ~200 KB
}
