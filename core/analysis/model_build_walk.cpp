// The load pass's walk over the timeline (Note [Analysis ids]): per event,
// the checks of Note [Malformed traces], then what the event does to the
// tables. One translation unit so that the per-event path inlines.

#include <algorithm>
#include <array>
#include <future>

#include "analysis/model_builder.h"

namespace hookscope::analysis {

using trace::Event;
using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

namespace {

// Per event kind: defined by this hookscope, listed by events_of_kind(), arg names a string.
constexpr uint8_t kDefined = 1, kListed = 2, kNamesString = 4;
constexpr std::array<uint8_t, 256> kKinds = [] {
  std::array<uint8_t, 256> t{};
  for (int k = 0; k < 256; ++k) {
    const auto kind = static_cast<EventKind>(k);
    const bool defined = trace::event_kind_defined(kind);
    const bool listed = k >= static_cast<int>(EventKind::kHookRemoveFailed) &&
                        kind != EventKind::kApplyBegin && kind != EventKind::kApplyEnd &&
                        k < static_cast<int>(EventKind::kCount);
    t[k] = static_cast<uint8_t>((defined ? kDefined : 0) | (listed ? kListed : 0) |
                                (trace::event_arg_is_string(kind) ? kNamesString : 0));
  }
  return t;
}();

// A hook kind this build knows (a malformed trace's is reported, and read as the first).
HookKind known_hook_kind(HookKind kind) {
  return static_cast<uint8_t>(kind) < trace::kNumHookKinds ? kind : HookKind::kTensorPre;
}

}  // namespace

// Note [Packing beside the walk]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Traces given as Event arrays are packed (Note [Packed events]) and walked
// from their arrays. On one thread they are packed before the walk: one
// pass over the arrays, which also gives reserve_tables() its counts of
// each kind from the packed blocks (a block of one kind is counted at once)
// instead of a pass of its own over 48-byte records; packing each block as
// the walk passed it, in cache then, cost more than that pass saved. With
// two threads allowed (Note [Finishing on two threads]) the second packs
// every array while the walk reads the same arrays (both only read them),
// so a load from arrays takes the walk's time, not the walk's and the
// packing's. Either way the arrays are freed once walked.
void ModelBuilder::pack_arrays() {
  bool any_arrays = false;
  for (const auto& t : m_.traces_) any_arrays = any_arrays || !t.events.empty();
  pack_beside_ = any_arrays && m_.options_.threads >= 2 && m_.num_events_ >= kTwoThreadEvents;
  if (pack_beside_) return;  // walk() starts it
  for (auto& t : m_.traces_) {
    if (!t.events.empty()) t.packed = trace::PackedEvents::pack(t.events);
  }
}

void ModelBuilder::walk() {
  std::vector<SourceChecks> checks;
  for (const auto& t : m_.traces_) {
    const auto& h = t.header;
    SourceChecks sc;
    sc.header_rank = h.rank;
    // Note [Malformed traces]: only a header a recorder wrote (it names the
    // hookscope version) states the world size; in-memory ones keep the default 1.
    const bool recorded = !h.hookscope_version.empty() && h.world_size > 0;
    sc.world_size = h.rank < 0 && recorded ? static_cast<uint32_t>(h.world_size) : 0;
    sc.header_rank_bad = recorded && h.rank >= 0 && h.rank >= h.world_size;
    sc.clock_back = t.clock_went_back;
    sc.rare = sc.world_size || sc.clock_back || sc.header_rank_bad;
    checks.push_back(sc);
  }
  auto step = [&](EventIndex i, uint32_t source, const Event& e) {
    SourceChecks& sc = checks[source];
    const uint16_t rank = sc.header_rank >= 0 ? static_cast<uint16_t>(sc.header_rank) : e.rank;
    check(i, source, rank, e, sc);
    apply(i, source, rank, e);
  };
  // Most events name a Function, and a map of millions of them misses the
  // cache on every lookup (Note [Id maps]): its slot is fetched a few events
  // ahead, and so is every other id the event looks up: an edge's target, a
  // new AccumulateGrad's predecessor, the hook of hook events (a million
  // hooks fired in turn), the collective of collective events.
  constexpr EventIndex kAhead = 16;
  auto prefetch = [&](uint32_t source, const Event& e) {
    SourceMaps& maps = src_[source];
    maps.functions.prefetch(e.node);
    const auto k = static_cast<uint8_t>(e.kind);
    if (k >= static_cast<uint8_t>(EventKind::kHookAdded) &&
        k <= static_cast<uint8_t>(EventKind::kHookRemoveFailed)) {
      maps.hooks.prefetch(e.key);
    } else if (e.kind == EventKind::kNodeEdge) {
      maps.functions.prefetch(e.as<trace::ev::NodeEdge>().next);
    } else if (e.kind == EventKind::kNodeCreated) {
      if (e.key) maps.functions.prefetch(e.key);
    } else if (e.kind == EventKind::kCollectiveBegin || e.kind == EventKind::kCollectiveEnd) {
      const int32_t header_rank = checks[source].header_rank;
      const auto rank = header_rank >= 0 ? static_cast<uint16_t>(header_rank) : e.rank;
      if (rank == maps.collective_rank) {
        maps.collectives_of_rank.prefetch(e.key);
      } else {
        maps.collectives.prefetch(CollectiveKey{e.key, rank});
      }
    }
  };
  const auto n = static_cast<EventIndex>(m_.num_events_);
  std::future<std::vector<trace::PackedEvents>> packed_beside;
  if (pack_beside_) {
    packed_beside = std::async(std::launch::async, [this] {
      std::vector<trace::PackedEvents> out(m_.traces_.size());
      for (size_t s = 0; s < out.size(); ++s) {
        if (!m_.traces_[s].events.empty()) out[s] = trace::PackedEvents::pack(m_.traces_[s].events);
      }
      return out;
    });
  }
  std::vector<EventReader> readers;
  for (const auto& t : m_.traces_) readers.emplace_back(t);
  if (m_.order_.empty()) {
    EventReader& r = readers[0];
    for (EventIndex i = 0; i < n; ++i) {
      if (i + kAhead < n) prefetch(0, r.get(i + kAhead));
      step(i, 0, r.get(i));
    }
  } else {
    auto event_at = [&](EventIndex i, uint32_t& source) -> const Event& {
      const uint64_t o = m_.order_[i];
      source = static_cast<uint32_t>(o >> 40);
      return readers[source].get(o & ((1ull << 40) - 1));
    };
    for (EventIndex i = 0; i < n; ++i) {
      uint32_t source = 0;
      if (i + kAhead < n) {
        prefetch(source, event_at(i + kAhead, source));
      }
      const Event& e = event_at(i, source);
      step(i, source, e);
    }
  }
  // Note [Packed events]: the model keeps events packed, never as arrays.
  std::vector<trace::PackedEvents> beside;
  if (pack_beside_) beside = packed_beside.get();
  for (size_t s = 0; s < readers.size(); ++s) {
    trace::TraceData& t = m_.traces_[s];
    if (t.events.empty()) continue;
    if (pack_beside_) t.packed = std::move(beside[s]);
    std::vector<Event>().swap(t.events);
  }
}

FunctionIndex ModelBuilder::new_function(uint32_t source, uint16_t rank, uint64_t id,
                                         EventIndex at, bool announced) {
  const auto f = static_cast<FunctionIndex>(m_.functions_.size());
  FunctionInfo info;
  info.id = id;
  info.source = source;
  info.rank = rank;
  info.announced = announced;
  info.created_at = at;
  m_.functions_.push_back(info);
  open_.emplace_back();
  latest_hint_.push_back(f);
  if (const FunctionIndex old = src_[source].functions.set(id, f); old != kNoIndex) {
    superseded_functions_.push_back(old);
  }
  return f;
}

FunctionIndex ModelBuilder::function_lookup(uint32_t source, uint64_t id) {
  return src_[source].functions.find(id);
}

FunctionIndex ModelBuilder::function_ref(uint32_t source, uint16_t rank, uint64_t id) {
  if (id == 0) return kNoIndex;
  const FunctionIndex f = function_lookup(source, id);
  return f != kNoIndex ? f : new_function(source, rank, id, 0, false);
}

OwnerIndex ModelBuilder::new_owner(uint32_t source, uint16_t rank, uint32_t id) {
  const auto o = static_cast<OwnerIndex>(m_.owners_.size());
  OwnerInfo info;
  info.id = id;
  info.source = source;
  info.rank = rank;
  info.announced = false;
  m_.owners_.push_back(info);
  reducer_of_owner_.push_back(kNoIndex);
  owner_snapshot_.push_back(0);
  if (const OwnerIndex old = src_[source].owners.set(id, o); old != kNoIndex) {
    superseded_owners_.push_back(old);
  }
  return o;
}

OwnerIndex ModelBuilder::owner_ref(uint32_t source, uint16_t rank, uint32_t id) {
  if (id == 0) return kNoIndex;
  const OwnerIndex o = src_[source].owners.find(id);
  return o != kNoIndex ? o : new_owner(source, rank, id);
}

HookIndex ModelBuilder::hook_ref(uint32_t source, uint16_t rank, const Event& e, EventIndex at) {
  if (const HookIndex known = src_[source].hooks.find(e.key); known != kNoIndex) return known;
  // A hook added before the recording started: it has been there as long as
  // its Function, or (for a Function we never saw created) since event 0.
  const FunctionIndex f = function_ref(source, rank, e.node);
  const OwnerIndex o = owner_ref(source, rank, e.owner);
  // It may predate the recording only if its Function and owner do.
  const bool fn_new = f != kNoIndex && m_.functions_[f].announced;
  const bool owner_new = o != kNoIndex && m_.owners_[o].announced && !owner_snapshot_[o];
  if ((fn_new || owner_new) && m_.traces_[source].dropped_events == 0) {
    malformed(MalformedKind::kUnknownHook, at,
              fn_new ? "no hook with this key was ever added to this Function"
                     : "no hook with this key was ever added by this owner",
              fn_new ? m_.functions_[f].created_at : m_.owners_[o].created_at);
  }
  const auto h = static_cast<HookIndex>(m_.hooks_.size());
  HookInfo info;
  info.key = e.key;
  info.source = source;
  info.rank = rank;
  info.kind = known_hook_kind(trace::hook_kind_of(e));
  info.announced = false;  // Note [Analysis ids]: no kHookAdded says when or by whom
  info.owner = o;
  info.function = f;
  m_.hooks_.push_back(info);
  open_of_hook_.push_back(kNoIndex);
  src_[source].hooks.set(e.key, h);
  if (f == kNoIndex) return h;
  const FunctionInfo& fi = m_.functions_[latest(f)];
  const EventIndex from = fi.released_at == kNever ? fi.created_at : at;
  m_.hooks_[h].added_at = from;
  attach(h, f, from);
  return h;
}

// The checks that concern a few events of a trace at most (its header, a
// clock the reader saw go back); SourceChecks::rare is off when none can fire.
void ModelBuilder::rare_checks(EventIndex i, uint32_t source, uint16_t rank, const Event& e,
                               SourceChecks& sc) {
  const auto& t = m_.traces_[source];
  if (sc.world_size && rank >= sc.world_size) {
    malformed(MalformedKind::kRankOutOfRange, i, "the event's rank is not below the world size");
  }
  if (sc.clock_back && e.thread == t.clock_back_thread && e.t_ns == t.clock_back_t_ns) {
    // The reader merged it by time (trace/reader.h).
    malformed(MalformedKind::kTimeBackwards, i, "earlier than the thread's previous event in the file");
    sc.clock_back = false;
  }
  if (sc.header_rank_bad) {  // reported at the trace's first event
    malformed(MalformedKind::kRankOutOfRange, i, "the header's rank is not below its world size");
    sc.header_rank_bad = false;
  }
  sc.rare = sc.world_size || sc.clock_back;
}

// Fields the runtime never writes out of range, and orders it never breaks.
inline void ModelBuilder::check(EventIndex i, uint32_t source, uint16_t rank, const Event& e,
                                SourceChecks& sc) {
  if (!(kKinds[static_cast<uint8_t>(e.kind)] & kDefined)) {
    malformed(MalformedKind::kUnknownEventKind, i, "an event kind this hookscope does not define");
  }
  if (sc.rare) rare_checks(i, source, rank, e, sc);
  const uint64_t thread_key = static_cast<uint64_t>(source) << 32 | e.thread;
  if (thread_key != last_thread_key_) {
    last_thread_ = &threads_[thread_key];
    last_thread_key_ = thread_key;
  }
  ThreadState& th = *last_thread_;
  if (th.last_at != kNever && e.t_ns < th.last_t) {
    malformed(MalformedKind::kTimeBackwards, i, "earlier than the thread's previous event", th.last_at);
  }
  th.last_t = e.t_ns;
  th.last_at = i;
  auto bad = [&](bool is_bad, const char* what) {
    if (is_bad) malformed(MalformedKind::kBadValue, i, what);
  };
  // An end closes the thread's open begin of its kind, or proves a malformation.
  auto close_pair = [&](uint32_t& open, const char* what) {
    if (open == 0) {
      malformed(MalformedKind::kUnbalancedBackward, i, what);
    } else {
      --open;
    }
  };
  switch (e.kind) {
    case EventKind::kBackwardBegin: ++th.backwards; break;
    case EventKind::kApplyBegin: ++th.applies; break;
    case EventKind::kBackwardEnd: close_pair(th.backwards, "backward_end without a backward_begin"); break;
    case EventKind::kApplyEnd: close_pair(th.applies, "apply_end without an apply_begin"); break;
    case EventKind::kHookAdded:
    case EventKind::kHookFired:
    case EventKind::kHookRemoved:
    case EventKind::kHookRemoveFailed:
      bad(static_cast<uint8_t>(trace::hook_kind_of(e)) >= trace::kNumHookKinds, "hook kind out of range");
      bad(e.kind == EventKind::kHookRemoved &&
              e.as<ev::HookRemoved>().cause > RemoveCause::kTensorReleased,
          "removal cause out of range");
      break;
    case EventKind::kOwnerCreated:
      bad(e.as<ev::OwnerCreated>().owner_kind > OwnerKind::kCallSite, "owner kind out of range");
      break;
    case EventKind::kCollectiveBegin:
      bad(e.as<ev::CollectiveBegin>().op > trace::CollectiveOp::kAllgather, "collective op out of range");
      break;
    case EventKind::kCollectiveEnd:
      bad(e.as<ev::CollectiveEnd>().status > trace::CollectiveStatus::kAborted,
          "collective status out of range");
      break;
    case EventKind::kFailure:
      bad(e.as<ev::Failure>().mode > trace::FailureMode::kTimeout, "failure mode out of range");
      break;
    case EventKind::kRecoveryStep:
      bad(e.as<ev::RecoveryStep>().step > trace::RecoveryStep::kResumed, "recovery step out of range");
      break;
    case EventKind::kReducerDestroyed:
      bad(e.as<ev::ReducerDestroyed>().policy > trace::DestroyPolicy::kByType, "destroy policy out of range");
      break;
    default: break;
  }
}

inline void ModelBuilder::apply(EventIndex i, uint32_t source, uint16_t rank, const Event& e) {
  const uint8_t traits = kKinds[static_cast<uint8_t>(e.kind)];
  if (traits & kListed) m_.kind_events_[static_cast<size_t>(e.kind)].push_back(i);
  if (traits & kNamesString) str(source, trace::string_arg(e));
  switch (e.kind) {
    case EventKind::kNodeCreated: {
      const FunctionIndex previous = e.key ? function_lookup(source, e.key) : kNoIndex;
      FunctionIndex f = function_lookup(source, e.node);
      if (f != kNoIndex && m_.functions_[f].announced && m_.functions_[f].released_at == kNever) {
        malformed(MalformedKind::kDuplicateCreation, i, "a Function created again while alive",
                  m_.functions_[f].created_at);
      }
      if (f == kNoIndex || m_.functions_[f].announced ||
          m_.functions_[f].released_at != kNever) {
        f = new_function(source, rank, e.node, i, true);
      }
      const auto created = e.as<ev::NodeCreated>();
      FunctionInfo& fi = m_.functions_[f];
      fi.announced = true;
      fi.rank = rank;
      fi.flags = created.flags;
      fi.name = str(source, created.name);
      if (previous == kNoIndex || previous == f) break;
      if (!link(previous, f, i)) break;
      // The leaf's hooks move to its new AccumulateGrad.
      const std::vector<uint32_t> open = open_[previous];
      for (uint32_t s : open) {
        const HookIndex h = m_.segments_[s].hook;
        if (!m_.segments_[s].on_tensor && !survives_release(h, previous)) continue;
        close_segment(h, i);
        open_segment(h, f, i, false);
      }
      break;
    }
    case EventKind::kNodeEdge: {
      const FunctionIndex from = function_ref(source, rank, e.node);
      const auto edge = e.as<ev::NodeEdge>();
      const FunctionIndex to = function_ref(source, rank, edge.next);
      if (from != kNoIndex && to != kNoIndex) m_.edges_.push_back(EdgeInfo{from, to, edge.input_nr, i});
      break;
    }
    case EventKind::kNodeLabel: {
      const FunctionIndex f = function_ref(source, rank, e.node);
      if (f != kNoIndex) m_.functions_[f].label = str(source, e.as<ev::NodeLabel>().label);
      break;
    }
    case EventKind::kNodeReleased: {
      const FunctionIndex f = function_ref(source, rank, e.node);
      if (f == kNoIndex || m_.functions_[f].released_at != kNever) break;
      m_.functions_[f].released_at = i;
      functions_ended_.push_back(f);
      const std::vector<uint32_t> open = open_[f];
      for (uint32_t s : open) {
        const HookIndex h = m_.segments_[s].hook;
        if (m_.segments_[s].on_tensor) continue;
        close_segment(h, i);
        if (survives_release(h, f)) {
          open_segment(h, f, i, true);
        } else {
          end_hook(h, i, RemoveCause::kNodeReleased, kNoIndex, true);
        }
      }
      break;
    }
    case EventKind::kOwnerCreated: {
      if (e.owner == 0) break;
      const OwnerIndex known = src_[source].owners.find(e.owner);
      const bool fresh = known == kNoIndex || m_.owners_[known].destroyed_at != kNever;
      const auto created = e.as<ev::OwnerCreated>();
      const bool snapshot = created.from_snapshot;
      if (!fresh && m_.owners_[known].announced && !snapshot && !owner_snapshot_[known]) {
        malformed(MalformedKind::kDuplicateCreation, i, "an owner created again while alive",
                  m_.owners_[known].created_at);
      }
      // An id used again names a new owner.
      const OwnerIndex o = fresh ? new_owner(source, rank, e.owner) : known;
      OwnerInfo& info = m_.owners_[o];
      if (fresh) info.created_at = i;  // else announced again, or referenced first
      info.announced = true;
      owner_snapshot_[o] = snapshot;
      info.kind = created.owner_kind <= OwnerKind::kCallSite ? created.owner_kind : OwnerKind::kUser;
      info.label = str(source, created.label);
      break;
    }
    case EventKind::kOwnerDestroyed: {
      const OwnerIndex o = owner_ref(source, rank, e.owner);
      if (o != kNoIndex) m_.owners_[o].destroyed_at = std::min(m_.owners_[o].destroyed_at, i);
      break;
    }
    case EventKind::kHookAdded: {
      const FunctionIndex f = function_ref(source, rank, e.node);
      const HookIndex known = src_[source].hooks.find(e.key);
      if (known != kNoIndex && m_.hooks_[known].ended_at == kNever) {
        malformed(MalformedKind::kDuplicateCreation, i, "a hook key added again while attached",
                  m_.hooks_[known].added_at);
        end_hook(known, i, RemoveCause::kByKey, kNoIndex, true);  // a key added twice
      }
      const auto added = e.as<ev::HookAdded>();
      const auto h = static_cast<HookIndex>(m_.hooks_.size());
      HookInfo info;
      info.key = e.key;
      info.source = source;
      info.rank = rank;
      info.kind = known_hook_kind(added.hook_kind);
      info.owner = owner_ref(source, rank, e.owner);
      info.input_nr = added.input_nr;
      info.function = f;
      info.added_at = i;
      m_.hooks_.push_back(info);
      open_of_hook_.push_back(kNoIndex);
      if (known != kNoIndex) superseded_hooks_.push_back(known);
      src_[source].hooks.set(e.key, h);
      if (f != kNoIndex) attach(h, f, i);
      break;
    }
    case EventKind::kHookFired:
      m_.fire_hook_.push_back(hook_ref(source, rank, e, i));
      m_.fire_bits_[i / 64] |= uint64_t{1} << (i % 64);
      break;
    case EventKind::kHookRemoved: {
      const HookIndex h = hook_ref(source, rank, e, i);
      if (m_.hooks_[h].ended_at != kNever) {
        if (!m_.hooks_[h].implicit_end) {
          malformed(MalformedKind::kRemovedTwice, i, "a hook removed again", m_.hooks_[h].ended_at);
        }
        break;
      }
      const auto removed = e.as<ev::HookRemoved>();
      const auto cause = std::min(removed.cause, RemoveCause::kTensorReleased);
      end_hook(h, i, cause, owner_ref(source, rank, removed.remover), false);
      break;
    }
    case EventKind::kHookRemoveFailed:
      function_ref(source, rank, e.node);
      owner_ref(source, rank, e.as<ev::HookRemoveFailed>().remover);
      break;
    case EventKind::kApplyBegin:
      function_ref(source, rank, e.node);
      break;
    default:
      if (static_cast<uint8_t>(e.kind) >= static_cast<uint8_t>(EventKind::kReducerConstructed)) {
        apply_ddp(i, source, rank, e);
      }
      break;
  }
}

}  // namespace hookscope::analysis
