#pragma once
// Crafted .hstrace files for the hostile-trace tests: an encoder written from
// docs/trace-format.md alone (not the project's writer, so the tests do not
// trust the code they test), and a catalogue of traces whose checksums are
// valid but whose content is hostile: loops, quadratic shapes, huge ids,
// extreme times, invalid UTF-8 and escape sequences, and every kind of
// impossible sequence of Note [Malformed traces].

#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace hookscope::testing::crafted {

struct Ev {
  uint64_t t = 0, node = 0, key = 0, arg = 0;
  uint32_t owner = 0, actor = 0;
  uint8_t kind = 0, sub = 0;
  uint16_t rank = 0;
  uint32_t thread = 0;
};

struct Spec {
  int64_t rank = -1, world_size = 1, pid = 4242;
  int64_t start_wall_ns = 0;
  uint64_t start_mono_ns = 0;
  std::string version = "crafted", host = "crafted-host", clock = "steady_clock",
              scenario = "crafted";
  std::vector<std::string> strings;  // ids 1, 2, ... (id 0 is the empty string)
  std::vector<Ev> events;            // in the order each thread emitted them
  bool footer = true;
  size_t chunk_events = 65536;       // events per chunk, at most 65536
  // When set, chunks store t as deltas (zigzag, 8 bytes) from the start
  // t_start(thread, chunk of that thread) gives, which need not be the
  // chunk's first time; otherwise t is stored raw.
  std::function<uint64_t(uint32_t thread, size_t chunk)> t_start;
};

// ---- the encoder (docs/trace-format.md) ---------------------------------------

inline uint32_t crc32_update(uint32_t crc, const void* data, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

inline void u16(std::string& o, uint16_t v) { o.append(reinterpret_cast<const char*>(&v), 2); }
inline void u32(std::string& o, uint32_t v) { o.append(reinterpret_cast<const char*>(&v), 4); }
inline void u64(std::string& o, uint64_t v) { o.append(reinterpret_cast<const char*>(&v), 8); }
inline void varint(std::string& o, uint64_t v) {
  for (; v >= 0x80; v >>= 7) o.push_back(static_cast<char>(v | 0x80));
  o.push_back(static_cast<char>(v));
}
inline void svarint(std::string& o, int64_t v) {
  varint(o, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
inline void str(std::string& o, const std::string& s) {
  varint(o, s.size());
  o += s;
}

inline void block(std::string& out, uint32_t type, const std::string& payload,
                  const std::string& crc_prefix = {}) {
  std::string head;
  u32(head, type);
  u32(head, static_cast<uint32_t>(payload.size()));
  uint32_t crc = crc32_update(0, crc_prefix.data(), crc_prefix.size());
  crc = crc32_update(crc, head.data(), head.size());
  crc = crc32_update(crc, payload.data(), payload.size());
  out += head;
  u32(out, crc);
  out += payload;
}

// One event chunk: every column stored raw (no delta), base 0, full width;
// with `t_start`, t as zigzag deltas from *t_start.
inline std::string chunk_payload(uint32_t thread, const std::vector<Ev>& evs,
                                 const uint64_t* t_start = nullptr) {
  constexpr int kWidths[9] = {8, 1, 1, 2, 8, 8, 8, 4, 4};  // t kind sub rank node key arg owner actor
  std::string p;
  varint(p, thread);
  varint(p, evs.size());
  int row = 0;
  for (int w : kWidths) {
    const bool delta = row == 0 && t_start != nullptr;  // t is the first column
    p.push_back(static_cast<char>(w | (delta ? 0x10 : 0)));  // code: width, delta flag
    varint(p, 0);                                            // base
    if (delta) varint(p, *t_start);
    row += w;
  }
  const size_t n = evs.size();
  std::string raw(n * static_cast<size_t>(row), '\0');
  size_t at = 0;
  auto column = [&](int width, auto get) {
    for (int plane = 0; plane < width; ++plane) {
      for (size_t i = 0; i < n; ++i) {
        raw[at + static_cast<size_t>(plane) * n + i] = static_cast<char>(get(evs[i]) >> (8 * plane));
      }
    }
    at += static_cast<size_t>(width) * n;
  };
  std::vector<uint64_t> t(n);  // as stored
  for (size_t i = 0; i < n; ++i) {
    const uint64_t d = evs[i].t - (i ? evs[i - 1].t : t_start ? *t_start : 0);
    t[i] = t_start ? (d << 1) ^ (0 - (d >> 63)) : evs[i].t;
  }
  column(8, [&](const Ev& e) { return t[static_cast<size_t>(&e - evs.data())]; });
  column(1, [](const Ev& e) { return uint64_t{e.kind}; });
  column(1, [](const Ev& e) { return uint64_t{e.sub}; });
  column(2, [](const Ev& e) { return uint64_t{e.rank}; });
  column(8, [](const Ev& e) { return e.node; });
  column(8, [](const Ev& e) { return e.key; });
  column(8, [](const Ev& e) { return e.arg; });
  column(4, [](const Ev& e) { return uint64_t{e.owner}; });
  column(4, [](const Ev& e) { return uint64_t{e.actor}; });
  varint(p, raw.size());
  std::string z(ZSTD_compressBound(raw.size()), '\0');
  const size_t zn = ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 1);
  z.resize(zn);
  p += z;
  return p;
}

inline std::string encode(const Spec& s) {
  std::string out("\x89HSTRACE", 8);
  u16(out, 1);
  u16(out, 1);
  std::string h;
  str(h, s.version);
  svarint(h, s.rank);
  svarint(h, s.world_size);
  str(h, s.host);
  svarint(h, s.pid);
  svarint(h, s.start_wall_ns);
  varint(h, s.start_mono_ns);
  str(h, s.clock);
  str(h, s.scenario);
  block(out, 1, h, out.substr(0, 12));
  if (!s.strings.empty()) {
    std::string t;
    varint(t, 1);
    varint(t, s.strings.size());
    for (const auto& x : s.strings) str(t, x);
    block(out, 2, t);
  }
  struct Entry {
    uint64_t offset;
    uint32_t thread, count;
    uint64_t t_min, t_max;
  };
  std::vector<Entry> index;
  // Chunks per thread, in each thread's order, at most 65536 events each.
  std::vector<uint32_t> threads;
  for (const Ev& e : s.events) {
    if (std::find(threads.begin(), threads.end(), e.thread) == threads.end()) threads.push_back(e.thread);
  }
  for (uint32_t th : threads) {
    std::vector<Ev> mine;
    for (const Ev& e : s.events) {
      if (e.thread == th) mine.push_back(e);
    }
    const size_t per_chunk = std::clamp<size_t>(s.chunk_events, 1, 65536);
    for (size_t b = 0; b < mine.size(); b += per_chunk) {
      const size_t end = std::min(mine.size(), b + per_chunk);
      std::vector<Ev> part(mine.begin() + static_cast<std::ptrdiff_t>(b),
                           mine.begin() + static_cast<std::ptrdiff_t>(end));
      Entry en{out.size(), th, static_cast<uint32_t>(part.size()), UINT64_MAX, 0};
      for (const Ev& e : part) en.t_min = std::min(en.t_min, e.t), en.t_max = std::max(en.t_max, e.t);
      const uint64_t start = s.t_start ? s.t_start(th, b / per_chunk) : 0;
      block(out, 3, chunk_payload(th, part, s.t_start ? &start : nullptr));
      index.push_back(en);
    }
  }
  if (!s.footer) return out;
  std::string f;
  varint(f, s.events.size());
  varint(f, 0);
  varint(f, s.strings.size() + 1);
  varint(f, index.size());
  uint64_t prev = 0;
  for (const Entry& e : index) {
    varint(f, e.offset - prev);
    prev = e.offset;
    varint(f, e.thread);
    varint(f, e.count);
    varint(f, e.t_min);
    varint(f, e.t_max - e.t_min);
  }
  const uint64_t footer_at = out.size();
  block(out, 5, f);
  u64(out, footer_at);
  out.append("HSINDEX\x1a", 8);
  return out;
}

// ---- the catalogue --------------------------------------------------------------

// Event kinds and values as docs/trace-format.md and core/trace/event.h define them.
enum K : uint8_t {
  kNodeCreated = 1, kNodeEdge = 2, kNodeLabel = 3, kNodeReleased = 4, kOwnerCreated = 5,
  kOwnerDestroyed = 6, kHookAdded = 7, kHookFired = 8, kHookRemoved = 9, kHookRemoveFailed = 10,
  kBackwardBegin = 11, kBackwardEnd = 12, kApplyBegin = 13, kApplyEnd = 14, kSavedPacked = 15,
  kSavedUnpacked = 16, kReducerConstructed = 32, kReducerDestroyed = 33, kPrepareForBackward = 34, kMarkReady = 36,
  kBucketReady = 39, kCollectiveBegin = 40, kCollectiveEnd = 41,
};
constexpr uint8_t kPost = 3, kModuleForwardPre = 5, kModuleForward = 6, kModuleBackward = 8;
constexpr uint8_t kOwnerUser = 0, kOwnerReducer = 2, kOwnerModule = 4;

struct Crafted {
  std::string name;
  std::string what;                   // the class it stands for
  std::string bytes;
  std::vector<std::string> malformed;  // malformed_trace kinds it must raise (sorted)
  bool stale_after_removal = false;    // a stale_fire (info) for a fire after removal
};

class Builder {
 public:
  Spec spec;
  uint64_t t = 1000;
  Builder& ev(uint8_t kind, uint64_t node = 0, uint64_t key = 0, uint64_t arg = 0, uint32_t owner = 0,
              uint8_t sub = 0, uint32_t actor = 0) {
    Ev e;
    e.t = t += 10;
    e.kind = kind, e.node = node, e.key = key, e.arg = arg, e.owner = owner, e.sub = sub, e.actor = actor;
    spec.events.push_back(e);
    return *this;
  }
  uint64_t intern(const std::string& s) {
    spec.strings.push_back(s);
    return spec.strings.size();
  }
  Crafted done(std::string name, std::string what, std::vector<std::string> malformed = {},
               bool stale = false) {
    std::sort(malformed.begin(), malformed.end());
    return {std::move(name), std::move(what), encode(spec), std::move(malformed), stale};
  }
};

// Reducer 1 with `parameters` parameters and `passes` backward passes it
// prepared for; pass k marks parameter `parameter(k)` ready once. Its
// readiness map is (distinct parameters marked) x passes cells from 4 events
// a pass (Note [Readiness map size]).
template <class Parameter>
Builder readiness_passes(uint32_t parameters, uint32_t passes, Parameter parameter) {
  Builder b;
  b.ev(kOwnerCreated, 0, 0, b.intern("Reducer 1"), 1, kOwnerReducer);
  b.ev(kReducerConstructed, 0, 0, parameters, 1, 0, 1);
  for (uint32_t k = 0; k < passes; ++k) {
    b.ev(kPrepareForBackward, 0, 0, k, 1);
    b.ev(kBackwardBegin, 0, 0, 1);
    b.ev(kMarkReady, 0, 0, parameter(k), 1);
    b.ev(kBackwardEnd, 0, 0, 1);
  }
  return b;
}

// `scale` sizes the quadratic cases (hooks on one Function).
inline std::vector<Crafted> catalogue(uint32_t scale = 20000) {
  std::vector<Crafted> out;
  {  // the 216-byte hang: two AccumulateGrads, each naming the other as its previous
    Builder b;
    const uint64_t name = b.intern("AccumulateGrad");
    b.ev(kNodeEdge, 7, 0, 8);                        // both referenced before being created
    b.ev(kNodeCreated, 7, 8, name, 0, 1);
    b.ev(kNodeCreated, 8, 7, name, 0, 1);
    b.ev(kHookAdded, 7, 1, 0, 0, kPost);
    b.ev(kHookFired, 8, 1, 0, 0, kPost);
    b.ev(kNodeReleased, 8);
    out.push_back(b.done("link_loop", "leaf links pointing at each other", {"leaf_link"}));
  }
  {  // hooks released in the order they were added: one Function, `scale` hooks
    Builder b;
    b.ev(kNodeCreated, 1, 0, b.intern("MulBackward0"));
    for (uint32_t k = 1; k <= scale; ++k) b.ev(kHookAdded, 1, k, 0, 0, kPost);
    for (uint32_t k = 1; k <= scale; ++k) b.ev(kHookRemoved, 1, k, 0, 0, kPost);
    out.push_back(b.done("fifo_hooks", "many hooks removed in the order added (quadratic erase)"));
  }
  {  // hooks added and removed last-in first-out on one Function, by many owners
    Builder b;
    b.ev(kNodeCreated, 1, 0, b.intern("AccumulateGrad"), 0, 1);
    for (uint32_t k = 1; k <= scale; ++k) b.ev(kHookAdded, 1, k, 0, k, kPost);
    for (uint32_t k = scale; k >= 1; --k) b.ev(kHookRemoved, 1, k, 0, k, kPost, k);
    out.push_back(b.done("lifo_hooks", "many hooks added then removed LIFO (quadratic sweep)"));
  }
  {  // ids near 2^24: Reducers claiming 2^24 parameters and buckets
    Builder b;
    for (uint32_t o = 1; o <= 40; ++o) {
      b.ev(kOwnerCreated, 0, 0, b.intern("Reducer " + std::to_string(o)), o, kOwnerReducer);
      b.ev(kReducerConstructed, 0, 0, (1u << 24) - 1, o, 0, (1u << 24) - 1);
      b.ev(kMarkReady, 9, 0, (1u << 24) - 2, o, 0, (1u << 24) - 3);
      b.ev(kBucketReady, 0, o, (1u << 24) - 4, o, 0, 3);
    }
    out.push_back(b.done("huge_ids", "parameter and bucket indices near 2^24", {"bad_value"}));
  }
  {  // many live Functions, each with an edge and a hook
    Builder b;
    const uint64_t name = b.intern("AddBackward0");
    for (uint32_t k = 1; k <= scale * 5; ++k) {
      b.ev(kNodeCreated, k, 0, name);
      if (k > 1) b.ev(kNodeEdge, k, 0, k - 1);
    }
    out.push_back(b.done("many_functions", "many live Functions in one graph"));
  }
  {  // extreme times: near 2^63 and 2^64, on two threads, and a huge wall-clock offset
    Builder b;
    b.spec.start_wall_ns = INT64_MAX - 5;
    b.spec.start_mono_ns = 1;
    b.ev(kNodeCreated, 1, 0, b.intern("MulBackward0"));
    b.spec.events.back().t = 0;
    b.ev(kBackwardBegin);
    b.spec.events.back().t = (1ull << 63) - 10;
    b.ev(kApplyBegin, 1);
    b.spec.events.back().t = (1ull << 63) + 10;
    b.ev(kApplyEnd, 1);
    b.spec.events.back().t = UINT64_MAX - 1;
    b.ev(kBackwardEnd);
    b.spec.events.back().t = UINT64_MAX;
    b.ev(kNodeCreated, 2, 0, 1);
    b.spec.events.back().t = 5;
    b.spec.events.back().thread = 1;
    out.push_back(b.done("extreme_times", "timestamps near 2^63 and 2^64"));
  }
  {  // invalid UTF-8 and terminal escape sequences in every kind of string
    Builder b;
    const uint64_t evil = b.intern("Evil\xff\xfe\x1b[2J\x1b]0;pwned\x07\xc3\x28\xed\xa0\x80\"\\\n");
    const uint64_t csi = b.intern("\xc2\x9b" "31mred\x7f");
    b.ev(kNodeCreated, 1, 0, evil);
    b.ev(kNodeLabel, 1, 0, csi);
    b.ev(kOwnerCreated, 0, 0, evil, 3, kOwnerUser);
    b.ev(kHookAdded, 1, 5, 0, 3, kPost);
    b.ev(kHookFired, 1, 5, 0, 3, kPost);
    b.ev(kHookRemoved, 1, 5, 0, 3, kPost, 3);
    out.push_back(b.done("bad_text", "invalid UTF-8 and escape sequences in strings"));
  }
  {  // fires and removals of keys never added, on a Function created while recording
    Builder b;
    b.ev(kNodeCreated, 1, 0, b.intern("MulBackward0"));
    b.ev(kHookFired, 1, 77, 0, 0, kPost);
    b.ev(kHookRemoved, 1, 78, 0, 0, kPost);
    out.push_back(b.done("unknown_hook", "fires/removals of keys never added", {"unknown_hook"}));
  }
  {  // the same Function, hook key and owner created twice
    Builder b;
    const uint64_t name = b.intern("MulBackward0");
    b.ev(kNodeCreated, 1, 0, name);
    b.ev(kNodeCreated, 1, 0, name);
    b.ev(kHookAdded, 1, 5, 0, 0, kPost);
    b.ev(kHookAdded, 1, 5, 0, 0, kPost);
    b.ev(kOwnerCreated, 0, 0, name, 2);
    b.ev(kOwnerCreated, 0, 0, name, 2);
    b.ev(kHookRemoved, 1, 5, 0, 0, kPost);
    b.ev(kHookRemoved, 1, 5, 0, 0, kPost);
    out.push_back(b.done("duplicates", "duplicate creation, removal twice",
                         {"duplicate_creation", "removed_twice"}));
  }
  {  // time going backwards within one thread
    Builder b;
    b.ev(kNodeCreated, 1, 0, b.intern("MulBackward0"));
    b.ev(kNodeReleased, 1);
    b.spec.events.back().t = 3;
    out.push_back(b.done("time_backwards", "time going backwards in a thread", {"time_backwards"}));
  }
  {  // ranks at or past the world size
    Builder b;
    b.spec.world_size = 2;
    b.ev(kNodeCreated, 1, 0, b.intern("MulBackward0"));
    b.spec.events.back().rank = 5;
    out.push_back(b.done("rank_range", "rank >= world size", {"rank_out_of_range"}));
  }
  {  // a cycle of next-edges
    Builder b;
    const uint64_t name = b.intern("AddBackward0");
    for (uint64_t k = 1; k <= 3; ++k) b.ev(kNodeCreated, k, 0, name);
    b.ev(kNodeEdge, 1, 0, 2);
    b.ev(kNodeEdge, 2, 0, 3);
    b.ev(kNodeEdge, 3, 0, 1);
    out.push_back(b.done("edge_cycle", "next-edges forming a cycle", {"edge_cycle"}));
  }
  {  // event kinds nobody defined, and values out of range
    Builder b;
    b.ev(20);
    b.ev(63, 1, 2, 3);
    b.ev(kHookAdded, 0, 9, 0, 0, 200);
    b.ev(kHookRemoved, 0, 9, 99, 0, kPost);
    out.push_back(b.done("unknown_kinds", "unknown event kinds and out-of-range values",
                         {"bad_value", "unknown_event_kind"}));
  }
  {  // ends without begins: backward, apply, collective; a collective begun twice
    Builder b;
    b.ev(kBackwardEnd);
    b.ev(kApplyEnd, 4);
    b.ev(kCollectiveEnd, 0, 11);
    b.ev(kCollectiveBegin, 0, 12);
    b.ev(kCollectiveBegin, 0, 12);
    out.push_back(b.done("unbalanced", "unbalanced collectives and backwards",
                         {"unbalanced_backward", "unbalanced_collective"}));
  }
  {  // a key used again after its removal (address keys from the torch bridge
     // can be), the first hook predating the recording: stepping must follow
     // the hook that fired, not the newest one with that key
    Builder b;
    b.ev(kHookFired, 62, 3, 0, 0, kPost);
    b.ev(kHookFired, 62, 3, 0, 0, kPost);
    b.ev(kHookRemoved, 62, 3, 0, 0, kPost);
    b.ev(kHookAdded, 63, 3, 0, 0, kPost);
    b.ev(kHookFired, 63, 3, 0, 0, kPost);
    out.push_back(b.done("key_reused", "a hook key added again after its removal"));
  }
  {  // module hooks (format 1.1), well formed: node 0 when added, removed and
     // forward-fired; a full backward hook fires on its BackwardHookFunction;
     // one fires after its removal (snapshot semantics): stale_fire, info
    Builder b;
    const uint64_t path = b.intern("encoder.layers.3");
    b.ev(kOwnerCreated, 0, 0, path, 9, kOwnerModule);
    b.ev(kHookAdded, 0, 100, 0, 9, kModuleForwardPre);
    b.ev(kHookAdded, 0, 101, 0, 9, kModuleForward);
    b.ev(kHookAdded, 0, 102, 0, 9, kModuleBackward);
    b.ev(kHookFired, 0, 100, 0, 9, kModuleForwardPre);
    b.ev(kHookFired, 0, 101, 0, 9, kModuleForward);
    b.ev(kNodeCreated, 30, 0, b.intern("BackwardHookFunctionBackward"));
    b.ev(kSavedPacked, 30, 0, 1, 9);
    b.ev(kBackwardBegin, 0, 0, 1);
    b.ev(kHookRemoved, 0, 102, 0, 9, kModuleBackward, 9);
    b.ev(kSavedUnpacked, 30, 0, 1, 9);
    b.ev(kHookFired, 30, 102, 0, 9, kModuleBackward);
    b.ev(kBackwardEnd, 0, 0, 1);
    out.push_back(b.done("module_hooks", "module hooks, saved tensors, a fire after removal", {}, true));
  }
  return out;
}

}  // namespace hookscope::testing::crafted
