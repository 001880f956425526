// The model's accessors: events on the merged timeline, lookups, names.

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <stdexcept>
#include <tuple>

#include "analysis/model.h"
#include "analysis/state.h"

namespace hookscope::analysis {

using trace::EventKind;

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

void Model::check_index(size_t index, const char* what) const {
  if (index >= num_events_) {
    throw std::out_of_range(fmt::format("{}: event index {} is past the end of the trace ({} "
                                        "events); use an index in [0, {})",
                                        what, index, num_events_, num_events_));
  }
}

uint32_t Model::source(size_t index) const {
  return order_.empty() ? 0 : static_cast<uint32_t>(order_[index] >> 40);
}

trace::Event Model::event(size_t index) const {
  check_index(index, "event");
  const uint32_t s = source(index);
  const trace::TraceData& t = traces_[s];
  trace::Event e = t.packed.at(order_.empty() ? index : order_[index] & ((1ull << 40) - 1));
  if (t.header.rank >= 0) e.rank = static_cast<uint16_t>(t.header.rank);
  if (event_arg_is_string(e.kind)) {
    const auto& map = string_map_[s];
    // The load pass interned every string an event names; out of range: "?".
    const uint64_t named = trace::string_arg(e);
    const uint32_t id = named < map.size() ? map[named] : kNoIndex;
    trace::set_string_arg(e, id != kNoIndex ? id : unknown_string_);
  }
  return e;
}

void Model::events(size_t begin, size_t end, trace::Event* out, int64_t* times, uint32_t fields) const {
  if (begin >= end) return;
  check_index(end - 1, "events");
  // An argument is a string id or not by its kind; a time is the event's
  // own plus its trace's offset: ask for what those need too.
  if (fields & trace::PackedEvents::kArg) fields |= trace::PackedEvents::kKind;
  if (times) fields |= trace::PackedEvents::kTime;
  if (order_.empty()) {
    traces_[0].packed.decode(begin, end, out, fields);
  } else {
    for (size_t i = begin; i < end; ++i) {
      const uint64_t o = order_[i];
      out[i - begin] = traces_[o >> 40].packed.at(o & ((1ull << 40) - 1));
    }
  }
  for (size_t i = begin; i < end; ++i) {
    trace::Event& e = out[i - begin];
    const uint32_t s = source(i);
    if (times) times[i - begin] = static_cast<int64_t>(e.t_ns + static_cast<uint64_t>(clock_offset_[s]));
    if (traces_[s].header.rank >= 0) e.rank = static_cast<uint16_t>(traces_[s].header.rank);
    if (event_arg_is_string(e.kind)) {
      const auto& map = string_map_[s];
      const uint64_t named = trace::string_arg(e);
      const uint32_t id = named < map.size() ? map[named] : kNoIndex;
      trace::set_string_arg(e, id != kNoIndex ? id : unknown_string_);
    }
  }
}

const std::string& Model::str(uint32_t id) const {
  static const std::string unknown = "?";
  return id < strings_.size() ? strings_[id] : unknown;
}

int64_t Model::time_ns(size_t index) const {
  check_index(index, "time_ns");
  const uint32_t s = source(index);
  const uint64_t t_ns =
      traces_[s].packed.t_ns(order_.empty() ? index : order_[index] & ((1ull << 40) - 1));
  // Modulo 2^64 (Note [Merging traces]): hostile times must not overflow.
  return static_cast<int64_t>(t_ns + static_cast<uint64_t>(clock_offset_[s]));
}

const std::vector<EventIndex>& Model::events_of_kind(EventKind kind) const {
  static const std::vector<EventIndex> none;
  const auto k = static_cast<size_t>(kind);
  return k < kind_events_.size() ? kind_events_[k] : none;
}

std::span<const EventIndex> Model::fires(HookIndex hook) const {
  const HookInfo& h = hooks_.at(hook);
  return {fires_.data() + h.fires_begin, fires_.data() + h.fires_end};
}

HookIndex Model::hook_fired_at(size_t index) const {
  // Note [Fires by event]
  const size_t w = index / 64;
  if (w >= fire_bits_.size()) return kNoIndex;
  const uint64_t below = (uint64_t{1} << (index % 64)) - 1;
  if (!(fire_bits_[w] >> (index % 64) & 1)) return kNoIndex;
  size_t k = fire_rank_[w / kFireRankWords];
  for (size_t j = w - w % kFireRankWords; j < w; ++j) k += std::popcount(fire_bits_[j]);
  return fire_hook_[k + static_cast<size_t>(std::popcount(fire_bits_[w] & below))];
}

uint32_t Model::fires_until(HookIndex hook, size_t index) const {
  const HookInfo& h = hooks_[hook];
  auto first = fires_.begin() + h.fires_begin;
  auto last = fires_.begin() + h.fires_end;
  return static_cast<uint32_t>(std::upper_bound(first, last, index) - first);
}

std::span<const uint32_t> Model::segments_of(FunctionIndex function) const {
  const auto& b = segments_by_function_begin_;
  if (function + 1 >= b.size()) return {};
  return {segments_by_function_.data() + b[function],
          segments_by_function_.data() + b[function + 1]};
}

namespace {
// table: indices into `records`, sorted by key(record) (model_build.cpp).
template <typename Record, typename Key>
uint32_t find_in(const std::vector<uint32_t>& table, const std::vector<Record>& records, Key key,
                 std::pair<uint32_t, uint64_t> want) {
  auto it = std::lower_bound(table.begin(), table.end(), want, [&](uint32_t index, const auto& w) {
    return key(records[index]) < w;
  });
  return it != table.end() && key(records[*it]) == want ? *it : kNoIndex;
}
}  // namespace

FunctionIndex Model::find_function(uint32_t source, uint64_t id) const {
  return find_in(function_lookup_, functions_,
                 [](const FunctionInfo& f) { return std::make_pair(f.source, f.id); },
                 {source, id});
}
HookIndex Model::find_hook(uint32_t source, uint64_t key) const {
  return find_in(hook_lookup_, hooks_,
                 [](const HookInfo& h) { return std::make_pair(h.source, h.key); }, {source, key});
}
OwnerIndex Model::find_owner(uint32_t source, uint32_t id) const {
  return find_in(owner_lookup_, owners_,
                 [](const OwnerInfo& o) { return std::make_pair(o.source, uint64_t{o.id}); },
                 {source, id});
}
uint32_t Model::find_collective(uint32_t source, uint16_t rank, uint64_t id) const {
  return find_in(collective_lookup_, collectives_,
                 [](const CollectiveInfo& c) { return std::make_pair(c.source << 16 | c.rank, c.id); },
                 {source << 16 | rank, id});
}
ReducerIndex Model::reducer_of(OwnerIndex owner) const {
  return owner < reducer_of_owner_.size() ? reducer_of_owner_[owner] : kNoIndex;
}

std::string Model::function_name(FunctionIndex function) const {
  if (function >= functions_.size()) return "no Function";
  const FunctionInfo& f = functions_[function];
  if (!f.announced && f.name == 0) return fmt::format("unknown Function #{}", f.id);
  const std::string& name = str(f.name);
  if (f.label == 0) return name;
  return fmt::format("{} ({})", name, str(f.label));
}

std::string Model::owner_name(OwnerIndex owner) const {
  if (owner >= owners_.size()) return "no owner";
  const OwnerInfo& o = owners_[owner];
  if (o.label == 0) return fmt::format("owner #{}", o.id);
  return str(o.label);
}

std::string Model::describe(size_t index) const {
  const trace::Event e = event(index);
  const uint32_t s = source(index);
  std::string out = fmt::format("#{} r{} {}", index, e.rank, trace::to_string(e.kind));
  auto fn = [&](uint64_t id) {
    const FunctionIndex f = find_function(s, id);
    return f == kNoIndex ? fmt::format("Function #{}", id) : function_name(f);
  };
  auto owner = [&](uint32_t id) {
    const OwnerIndex o = find_owner(s, id);
    return o == kNoIndex ? fmt::format("owner #{}", id) : owner_name(o);
  };
  switch (e.kind) {
    case EventKind::kHookAdded:
    case EventKind::kHookFired:
    case EventKind::kHookRemoved:
    case EventKind::kHookRemoveFailed: {
      out += fmt::format(" {} key {}", trace::to_string(trace::shown_hook_kind(e)), trace::format_hook_key(e.key));
      // Module hooks are added, removed and forward-fired with node 0 (Note
      // [Module hooks in traces]); full backward ones fire on a BackwardHookFunction.
      if (e.node) out += " on " + fn(e.node);
      if (e.owner) out += fmt::format(" of {}", owner(e.owner));
      if (e.kind == EventKind::kHookFired && trace::hook_kind_of(e) == trace::HookKind::kCommHook) {
        const auto fire = e.as<ev::HookFired>();  // Note [Comm hooks in traces]
        out += fmt::format(" for bucket {} ({} bytes)", fire.bucket, fire.bytes);
      }
      if (e.kind == EventKind::kHookRemoved) {
        out += fmt::format(" ({})", trace::to_string(e.as<ev::HookRemoved>().cause));
      }
      if (const uint32_t remover = trace::remover_of(e)) out += fmt::format(" by {}", owner(remover));
      break;
    }
    case EventKind::kNodeCreated:
    case EventKind::kNodeLabel:
    case EventKind::kNodeReleased:
    case EventKind::kApplyBegin:
    case EventKind::kApplyEnd:
      out += " " + fn(e.node);
      break;
    case EventKind::kSavedTensorPacked:
      out += fmt::format(" {} slot {}", fn(e.node), e.as<ev::SavedTensorPacked>().slot);
      if (e.owner) out += fmt::format(" of {}", owner(e.owner));
      break;
    case EventKind::kSavedTensorUnpacked:
      out += fmt::format(" {} slot {}", fn(e.node), e.as<ev::SavedTensorUnpacked>().slot);
      if (e.owner) out += fmt::format(" of {}", owner(e.owner));
      break;
    case EventKind::kNodeEdge:
      out += fmt::format(" {} -> {}", fn(e.node), fn(e.as<ev::NodeEdge>().next));
      break;
    case EventKind::kOwnerCreated:
    case EventKind::kOwnerDestroyed:
      out += " " + owner(e.owner);
      break;
    case EventKind::kCollectiveEnd: {
      const auto end = e.as<ev::CollectiveEnd>();
      if (end.owner) out += fmt::format(" {}", owner(end.owner));
      out += fmt::format(" collective {} {} after {:.3f} ms", end.collective_id, trace::to_string(end.status),
                         static_cast<double>(end.duration_ns) / 1e6);
      if (end.placement != trace::kPlacementHost) {  // Note [Collective placement]
        out += fmt::format(" on cuda:{} stream {}", trace::placement_device(end.placement),
                           trace::placement_stream(end.placement));
      }
      break;
    }
    case EventKind::kFailure: {
      const auto failure = e.as<ev::Failure>();
      out += fmt::format(" of rank {} ({})", failure.failed_rank, trace::to_string(failure.mode));
      if (failure.description) out += ": " + str(failure.description);
      break;
    }
    case EventKind::kRecoveryStep: {
      const auto step = e.as<ev::RecoveryStep>();
      out += fmt::format(" {}", trace::to_string(step.step));
      if (step.description) out += ": " + str(step.description);
      break;
    }
    case EventKind::kProcessGroupCreated: {
      const auto created = e.as<ev::ProcessGroupCreated>();
      out += fmt::format(" generation {}, world size {}", created.generation, created.world_size);
      break;
    }
    case EventKind::kProcessGroupDestroyed:
      if (e.as<ev::ProcessGroupDestroyed>().aborted) out += " (aborted)";
      break;
    default:
      if (static_cast<uint8_t>(e.kind) >= static_cast<uint8_t>(EventKind::kReducerConstructed)) {
        if (e.owner) out += " " + owner(e.owner);
        if (e.node) out += " " + fn(e.node);
      }
      break;
  }
  return out;
}

size_t Model::checkpoint_bytes() const {
  return live_functions_.checkpoint_bytes() + live_segments_.checkpoint_bytes() +
         block_starts_.capacity() * sizeof(EventIndex);
}

size_t Model::event_bytes() const {
  size_t n = 0;
  for (const auto& t : traces_) n += t.packed.memory_bytes();
  return n;
}

size_t Model::memory_bytes() const {
  size_t n = order_.capacity() * sizeof(uint64_t) + fires_.capacity() * sizeof(EventIndex);
  n += functions_.capacity() * sizeof(FunctionInfo) + edges_.capacity() * sizeof(EdgeInfo);
  n += fire_bits_.capacity() * sizeof(uint64_t) + fire_rank_.capacity() * sizeof(uint32_t);
  n += fire_hook_.capacity() * sizeof(HookIndex);
  n += malformations_.capacity() * sizeof(Malformation) + detached_hooks_.capacity() * sizeof(HookIndex);
  n += hooks_.capacity() * sizeof(HookInfo) + segments_.capacity() * sizeof(HookSegment);
  n += owners_.capacity() * sizeof(OwnerInfo) + collectives_.capacity() * sizeof(CollectiveInfo);
  n += (segments_by_function_.capacity() + segments_by_function_begin_.capacity()) * 4;
  n += (function_lookup_.capacity() + hook_lookup_.capacity() + owner_lookup_.capacity() +
        collective_lookup_.capacity()) * sizeof(uint32_t);
  for (const auto& r : reducers_) {
    n += sizeof(ReducerInfo) + r.parameters.capacity() * sizeof(ParameterInfo) +
         (r.bucket_sizes.capacity() + r.prepares.capacity() + r.events.capacity()) * 4 +
         r.prepare_backwards.capacity() * sizeof(uint64_t);
  }
  for (const auto& k : kind_events_) n += k.capacity() * sizeof(EventIndex);
  for (const auto& m : string_map_) n += m.capacity() * sizeof(uint32_t);
  for (const auto& s : strings_) n += sizeof(std::string) + s.capacity();
  return n + live_functions_.memory_bytes() + live_segments_.memory_bytes() +
         block_starts_.capacity() * sizeof(EventIndex);
}

}  // namespace hookscope::analysis
