// The load pass for DDP events: Reducers, their parameters and buckets, and
// collectives (Note [Event record] lists the fields per kind).

#include <algorithm>

#include "analysis/model_builder.h"

namespace hookscope::analysis {

using trace::Event;
using trace::EventKind;
using trace::OwnerKind;

ReducerIndex ModelBuilder::reducer_ref(OwnerIndex owner, uint32_t source, uint16_t rank) {
  if (reducer_of_owner_[owner] != kNoIndex) return reducer_of_owner_[owner];
  // A Reducer constructed before the recording started.
  ReducerInfo info;
  info.owner = owner;
  info.source = source;
  info.rank = rank;
  reducer_of_owner_[owner] = static_cast<ReducerIndex>(m_.reducers_.size());
  if (!m_.owners_[owner].announced) m_.owners_[owner].kind = OwnerKind::kReducer;
  m_.reducers_.push_back(std::move(info));
  return reducer_of_owner_[owner];
}

ParameterInfo& ModelBuilder::parameter(ReducerIndex r, uint64_t index, EventIndex at) {
  static thread_local ParameterInfo ignored;
  auto& params = m_.reducers_[r].parameters;
  if (index >= params.size()) {
    if (index >= (1u << 24) ||
        !take_slots(index + 1 - params.size(), at, "parameter index past what the trace can hold")) {
      return ignored = ParameterInfo{};  // not a parameter index
    }
    params.resize(index + 1);
  }
  return params[index];
}

uint32_t ModelBuilder::collective_ref(uint32_t source, uint16_t rank, uint64_t id) {
  SourceMaps& maps = src_[source];
  if (maps.collective_rank < 0) maps.collective_rank = rank;
  const bool of_rank = rank == maps.collective_rank;
  const CollectiveKey key{id, rank};
  const uint32_t known = of_rank ? maps.collectives_of_rank.find(id) : maps.collectives.find(key);
  if (known != kNoIndex) return known;
  const auto c = static_cast<uint32_t>(m_.collectives_.size());
  CollectiveInfo info;
  info.id = id;
  info.source = source;
  info.rank = rank;
  m_.collectives_.push_back(info);
  if (of_rank) {
    maps.collectives_of_rank.set(id, c);
  } else {
    maps.collectives.set(key, c);
  }
  return c;
}

void ModelBuilder::apply_ddp(EventIndex i, uint32_t source, uint16_t rank, const Event& e) {
  const OwnerIndex o = owner_ref(source, rank, e.owner);
  switch (e.kind) {
    case EventKind::kReducerConstructed: {
      if (o == kNoIndex) return;
      ReducerInfo info;
      info.owner = o;
      info.source = source;
      info.rank = rank;
      info.constructed_at = i;
      const auto constructed = e.as<ev::ReducerConstructed>();
      info.num_parameters = static_cast<uint32_t>(std::min<uint64_t>(constructed.num_params, 1u << 24));
      info.num_buckets = std::min<uint32_t>(constructed.num_buckets, 1u << 24);
      // Note [Model memory bound]: the sizes are claims, room is made within the budget.
      if (take_slots(uint64_t{info.num_parameters} + info.num_buckets, i,
                     "a Reducer with more parameters and buckets than the trace can hold")) {
        info.parameters.resize(info.num_parameters);
        info.bucket_sizes.resize(info.num_buckets);
      }
      info.events.push_back(i);
      reducer_of_owner_[o] = static_cast<ReducerIndex>(m_.reducers_.size());
      if (!m_.owners_[o].announced) m_.owners_[o].kind = OwnerKind::kReducer;
      m_.reducers_.push_back(std::move(info));
      return;
    }
    case EventKind::kCollectiveBegin:
    case EventKind::kCollectiveEnd: {
      CollectiveInfo& c = m_.collectives_[collective_ref(source, rank, e.key)];
      if (e.kind == EventKind::kCollectiveBegin) {
        if (c.begin_at != kNever) {
          malformed(MalformedKind::kUnbalancedCollective, i, "a collective begun twice", c.begin_at);
        }
        c.begin_at = i;
        const uint32_t bucket = e.as<ev::CollectiveBegin>().bucket;
        if (bucket != trace::kNoBucket) c.bucket = bucket;
      } else {
        if (c.end_at != kNever) {
          malformed(MalformedKind::kUnbalancedCollective, i, "a collective ended twice", c.end_at);
        } else if (c.begin_at == kNever) {
          malformed(MalformedKind::kUnbalancedCollective, i, "a collective ended without a begin");
        }
        c.end_at = i;
        c.status = e.as<ev::CollectiveEnd>().status;
      }
      if (o != kNoIndex && reducer_of_owner_[o] != kNoIndex) {
        c.reducer = reducer_of_owner_[o];
        m_.reducers_[c.reducer].events.push_back(i);
      }
      return;
    }
    case EventKind::kReducerDestroyed:
    case EventKind::kPrepareForBackward:
    case EventKind::kAutogradHookNoop:
    case EventKind::kMarkReady:
    case EventKind::kMarkedTwice:
    case EventKind::kUnusedParameter:
    case EventKind::kBucketReady:
    case EventKind::kBucketsFinalized:
      break;
    default:  // failures, recovery, process groups, training steps: events_of_kind()
      return;
  }
  if (o == kNoIndex) return;
  const ReducerIndex r = reducer_ref(o, source, rank);
  m_.reducers_[r].events.push_back(i);
  switch (e.kind) {
    case EventKind::kReducerDestroyed: {
      ReducerInfo& red = m_.reducers_[r];
      red.destroyed_at = std::min(red.destroyed_at, i);
      const auto destroyed = e.as<ev::ReducerDestroyed>();
      red.policy = destroyed.policy;
      red.hooks_removed = destroyed.hooks_removed;
      m_.owners_[o].destroyed_at = std::min(m_.owners_[o].destroyed_at, i);
      break;
    }
    case EventKind::kPrepareForBackward:
      m_.reducers_[r].prepares.push_back(i);
      m_.reducers_[r].prepare_backwards.push_back(e.as<ev::PrepareForBackward>().backward_index);
      break;
    case EventKind::kAutogradHookNoop:
      function_ref(source, rank, e.node);
      break;
    case EventKind::kMarkReady: {
      const auto ready = e.as<ev::MarkReady>();
      const FunctionIndex f = function_ref(source, rank, ready.node);
      ParameterInfo& p = parameter(r, ready.param, i);
      if (f != kNoIndex) p.accumulator = f;
      auto& sizes = m_.reducers_[r].bucket_sizes;
      if (ready.bucket < (1u << 24) && ready.bucket >= sizes.size() &&
          take_slots(ready.bucket + 1 - sizes.size(), i, "bucket index past what the trace can hold")) {
        sizes.resize(ready.bucket + 1);
      }
      p.bucket = ready.bucket < sizes.size() ? ready.bucket : kNoIndex;
      break;
    }
    case EventKind::kMarkedTwice:
    case EventKind::kUnusedParameter: {
      const auto named = trace::parameter_named(e);
      const FunctionIndex f = function_ref(source, rank, named.node);
      ParameterInfo& p = parameter(r, named.param, i);
      if (f != kNoIndex) p.accumulator = f;
      p.name = str(source, named.param_name);
      break;
    }
    case EventKind::kBucketReady: {
      const auto ready = e.as<ev::BucketReady>();
      auto& sizes = m_.reducers_[r].bucket_sizes;
      if (ready.bucket < (1u << 24) && ready.bucket >= sizes.size() &&
          take_slots(ready.bucket + 1 - sizes.size(), i, "bucket index past what the trace can hold")) {
        sizes.resize(ready.bucket + 1);
      }
      if (ready.bucket < sizes.size()) sizes[ready.bucket] = std::max(sizes[ready.bucket], ready.num_params);
      CollectiveInfo& c = m_.collectives_[collective_ref(source, rank, ready.collective_id)];
      c.reducer = r;
      c.bucket = static_cast<uint32_t>(ready.bucket);
      break;
    }
    default:
      break;
  }
}

}  // namespace hookscope::analysis
