// State at any event and stepping between events (Note [Replay by intervals]).

#include <algorithm>
#include <tuple>

#include "analysis/replay_reducers.h"
#include "analysis/state.h"

namespace hookscope::analysis {

using replay::fill_reducers;
using replay::step_reducers;
using trace::EventKind;

size_t FunctionAt::num_hooks() const {
  size_t n = 0;
  for (const auto& list : hooks) n += list.size();
  return n;
}

const FunctionAt* State::find(FunctionIndex function) const {
  auto it = std::lower_bound(functions.begin(), functions.end(), function,
                             [](const FunctionAt& f, FunctionIndex x) { return f.function < x; });
  return it != functions.end() && it->function == function ? &*it : nullptr;
}

size_t State::num_hooks() const {
  size_t n = tensor_hooks.size();
  for (const FunctionAt& f : functions) n += f.num_hooks();
  return n;
}

namespace {

bool hook_order(const HookAt& a, const HookAt& b) {
  return std::tie(a.since, a.hook) < std::tie(b.since, b.hook);
}

void fill_owners(const Model& m, EventIndex e, const std::vector<uint32_t>& owner_hooks,
                 State& st) {
  st.owners.clear();
  for (OwnerIndex o = 0; o < m.owners().size(); ++o) {
    const OwnerInfo& info = m.owners()[o];
    const bool live = e < info.destroyed_at;
    if (info.created_at > e || (!live && owner_hooks[o] == 0)) continue;
    st.owners.push_back(OwnerAt{o, live, owner_hooks[o]});
  }
}

// O(hooks on no Function): module hooks are few (one per registration).
void fill_module_hooks(const Model& m, EventIndex e, State& st) {
  st.module_hooks.clear();
  for (HookIndex h : m.detached_hooks()) {
    const HookInfo& hook = m.hooks()[h];
    if (hook.added_at > e || hook.ended_at <= e) continue;
    st.module_hooks.push_back(HookAt{h, kNoIndex, m.fires_until(h, e), hook.added_at});
  }
  std::sort(st.module_hooks.begin(), st.module_hooks.end(), hook_order);
}

}  // namespace

State Model::state_at(size_t index) const {
  check_index(index, "state_at");
  const auto e = static_cast<EventIndex>(index);
  State st;
  st.index = index;
  std::vector<uint32_t> ids;
  live_functions_.alive_at(e, block_starts_, ids);
  std::sort(ids.begin(), ids.end());
  st.functions.resize(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) st.functions[k].function = ids[k];

  ids.clear();
  live_segments_.alive_at(e, block_starts_, ids);
  std::vector<std::pair<uint32_t, HookAt>> on_functions;  // (segment, hook)
  on_functions.reserve(ids.size());
  std::vector<uint32_t> owner_hooks(owners_.size(), 0);
  for (uint32_t s : ids) {
    const HookSegment& seg = segments_[s];
    const HookAt at{seg.hook, seg.function, fires_until(seg.hook, e), seg.from};
    if (hooks_[seg.hook].owner != kNoIndex) ++owner_hooks[hooks_[seg.hook].owner];
    if (seg.on_tensor) {
      st.tensor_hooks.push_back(at);
    } else {
      on_functions.emplace_back(s, at);
    }
  }
  std::sort(st.tensor_hooks.begin(), st.tensor_hooks.end(), hook_order);
  std::sort(on_functions.begin(), on_functions.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.function, a.second.since, a.second.hook) <
           std::tie(b.second.function, b.second.since, b.second.hook);
  });
  auto fn = st.functions.begin();
  for (const auto& [s, at] : on_functions) {
    while (fn != st.functions.end() && fn->function < at.function) ++fn;
    // A live segment's Function is live (the load pass ends segments with it).
    if (fn == st.functions.end() || fn->function != at.function) continue;
    fn->hooks[static_cast<size_t>(hooks_[at.hook].kind)].push_back(at);
  }
  for (HookIndex h : detached_hooks_) {  // module hooks count for their owner too
    const HookInfo& hook = hooks_[h];
    if (hook.owner != kNoIndex && hook.added_at <= e && e < hook.ended_at) ++owner_hooks[hook.owner];
  }
  fill_owners(*this, e, owner_hooks, st);
  fill_reducers(*this, e, st);
  fill_module_hooks(*this, e, st);
  return st;
}

// ---- Cursor -------------------------------------------------------------------

Cursor::Cursor(const Model& model, size_t index) : model_(&model) {
  for (HookIndex h : model.detached_hooks()) {
    const HookInfo& hook = model.hooks()[h];
    module_hook_changes_.push_back(hook.added_at);
    if (hook.ended_at != kNever) module_hook_changes_.push_back(hook.ended_at);
  }
  std::sort(module_hook_changes_.begin(), module_hook_changes_.end());
  module_hook_changes_.erase(std::unique(module_hook_changes_.begin(), module_hook_changes_.end()),
                             module_hook_changes_.end());
  if (model.num_events() > 0) {
    state_ = model_->state_at(index);
    recount_owner_hooks();
  }
}

// Note [Seeking by steps]
// ~~~~~~~~~~~~~~~~~~~~~~~
// state_at() costs about the size of the state (every live Function and
// hook, ~5 ms of CPU at 20k Functions); a step costs about what its event
// changes (~0.7 µs for a hook fire).
// Playback moves by a few thousand events a frame, so seek() steps when the
// move is short next to the state: it applies each event's Functions, hooks
// and fire counts, and refreshes owners, module hooks and Reducers once at
// the end (they are functions of the index, Note [Replay by intervals]).
// Stepping gives what state_at gives (tests/core/analysis/test_replay.cpp, the
// model fuzzer), so a seek's result does not depend on where it came from.
// Measured: bench_playback BM_PlaybackSeek.
size_t Cursor::step_budget() const {
  return 256 + state_.functions.size() / kLiveFunctionsPerSeekStep;
}

bool Cursor::steps_to(size_t index) const {
  const size_t cur = state_.index;
  return (index > cur ? index - cur : cur - index) <= step_budget();
}

void Cursor::adopt(State&& state) {
  std::swap(state_, state);
  recount_owner_hooks();
}

void Cursor::adopt(State&& state, std::vector<uint32_t>&& owner_hooks) {
  std::swap(state_, state);
  owner_hooks_ = std::move(owner_hooks);
}

void Cursor::seek(size_t index) {
  if (index >= model_->num_events()) {
    (void)model_->state_at(index);  // throws, naming the bad index
    return;
  }
  const size_t cur = state_.index;
  const size_t distance = index > cur ? index - cur : cur - index;
  if (distance > step_budget()) {
    state_ = model_->state_at(index);
    recount_owner_hooks();
    return;
  }
  Changes changes;
  while (state_.index < index) forward_one(changes);
  while (state_.index > index) back_one(changes);
  apply_changes(changes);
}

// Every owner's attached hooks, from the state's hooks: state.owners lists
// only owners created by then, and a hook first seen later may have been
// attached since event 0 (found by fuzz/fuzz_trace_model.cpp).
void Cursor::recount_owner_hooks() { owner_hooks_ = count_owner_hooks(*model_, state_); }

std::vector<uint32_t> Cursor::count_owner_hooks(const Model& model, const State& state) {
  std::vector<uint32_t> owner_hooks(model.owners().size(), 0);
  auto count = [&](const HookAt& h) {
    const OwnerIndex o = model.hooks()[h.hook].owner;
    if (o != kNoIndex) ++owner_hooks[o];
  };
  for (const FunctionAt& f : state.functions) {
    for (const auto& list : f.hooks) {
      for (const HookAt& h : list) count(h);
    }
  }
  for (const HookAt& h : state.tensor_hooks) count(h);
  for (const HookAt& h : state.module_hooks) count(h);
  return owner_hooks;
}

FunctionAt* Cursor::find_mut(FunctionIndex f) {
  return const_cast<FunctionAt*>(state_.find(f));
}

void Cursor::insert_function(FunctionIndex f) {
  auto& fns = state_.functions;
  auto it = std::lower_bound(fns.begin(), fns.end(), f,
                             [](const FunctionAt& a, FunctionIndex x) { return a.function < x; });
  FunctionAt at;
  at.function = f;
  fns.insert(it, std::move(at));
}

void Cursor::erase_function(FunctionIndex f) {
  auto& fns = state_.functions;
  auto it = std::lower_bound(fns.begin(), fns.end(), f,
                             [](const FunctionAt& a, FunctionIndex x) { return a.function < x; });
  if (it != fns.end() && it->function == f) fns.erase(it);
}

void Cursor::insert_hook(uint32_t segment, EventIndex at) {
  const HookSegment& seg = model_->segments()[segment];
  const HookInfo& hook = model_->hooks()[seg.hook];
  const HookAt h{seg.hook, seg.function, model_->fires_until(seg.hook, at), seg.from};
  std::vector<HookAt>* list = &state_.tensor_hooks;
  if (!seg.on_tensor) {
    FunctionAt* f = find_mut(seg.function);
    if (!f) return;
    list = &f->hooks[static_cast<size_t>(hook.kind)];
  }
  list->insert(std::lower_bound(list->begin(), list->end(), h, hook_order), h);
  if (hook.owner != kNoIndex) ++owner_hooks_[hook.owner];
}

void Cursor::erase_hook(uint32_t segment) {
  const HookSegment& seg = model_->segments()[segment];
  const HookInfo& hook = model_->hooks()[seg.hook];
  std::vector<HookAt>* list = &state_.tensor_hooks;
  if (!seg.on_tensor) {
    FunctionAt* f = find_mut(seg.function);
    if (!f) return;
    list = &f->hooks[static_cast<size_t>(hook.kind)];
  }
  auto it = std::find_if(list->begin(), list->end(), [&](const HookAt& h) {
    return h.hook == seg.hook && h.since == seg.from;
  });
  if (it == list->end()) return;
  list->erase(it);
  if (hook.owner != kNoIndex) --owner_hooks_[hook.owner];
}

// Event `event` is a fire: the count of that hook becomes its count at `at`.
void Cursor::refresh_fires(EventIndex event, EventIndex at) {
  const trace::Event e = model_->event(event);
  if (e.kind != EventKind::kHookFired) return;
  const uint32_t source = model_->source(event);
  const HookIndex h = model_->hook_fired_at(event);
  if (h == kNoIndex) return;
  const uint32_t fires = model_->fires_until(h, at);
  auto update = [&](std::vector<HookAt>& list) {
    for (HookAt& x : list) {
      if (x.hook == h) {
        x.fires = fires;
        return true;
      }
    }
    return false;
  };
  // A hook fires on the Function the event names (Note [Leaf hooks live on the tensor]).
  if (FunctionAt* f = find_mut(model_->find_function(source, e.node))) {
    for (auto& list : f->hooks) {
      if (update(list)) return;
    }
  }
  if (update(state_.tensor_hooks)) return;
  for (FunctionAt& f : state_.functions) {
    for (auto& list : f.hooks) {
      if (update(list)) return;
    }
  }
}

// Owners change with owner events and with the hooks they hold; Reducers
// only with DDP events.
void Cursor::note_changes(EventIndex event, bool hooks_changed, Changes& changes) const {
  const EventKind kind = model_->event(event).kind;
  // Which module hooks come or go at `event` is the model's word (their
  // intervals), not the event's key: find_hook() names the latest hook with
  // that key, and a module hook can end at another hook's kHookAdded (its
  // key added again, found by fuzz/fuzz_trace_model.cpp).
  const HookIndex fired = model_->hook_fired_at(event);
  if (std::binary_search(module_hook_changes_.begin(), module_hook_changes_.end(), event) ||
      (fired != kNoIndex && model_->hooks()[fired].function == kNoIndex)) {
    // A module hook came, went or fired: recount them (and their owners' hooks).
    changes.module_hooks = true;
    hooks_changed = true;
  }
  if (hooks_changed || kind == EventKind::kOwnerCreated || kind == EventKind::kOwnerDestroyed ||
      kind == EventKind::kReducerDestroyed) {
    changes.owners = true;
  }
  if (static_cast<uint8_t>(kind) >= static_cast<uint8_t>(EventKind::kReducerConstructed)) {
    changes.reducers = true;
  }
}

// Owners, module hooks and Reducers at the current index, where the events
// stepped over changed them.
void Cursor::apply_changes(const Changes& changes) {
  const auto e = static_cast<EventIndex>(state_.index);
  if (changes.module_hooks) {
    fill_module_hooks(*model_, e, state_);
    recount_owner_hooks();
  }
  if (changes.owners) fill_owners(*model_, e, owner_hooks_, state_);
  if (changes.reducers) fill_reducers(*model_, e, state_);
}

bool Cursor::forward_one(Changes& changes) {
  if (state_.index + 1 >= model_->num_events()) return false;
  const auto n = static_cast<EventIndex>(state_.index + 1);
  const auto ended = model_->live_segments_.ending_at(n);
  const auto started = model_->live_segments_.starting_at(n);
  for (uint32_t f : model_->live_functions_.starting_at(n)) insert_function(f);
  for (uint32_t s : ended) erase_hook(s);
  for (uint32_t s : started) insert_hook(s, n);
  for (uint32_t f : model_->live_functions_.ending_at(n)) erase_function(f);
  refresh_fires(n, n);
  state_.index = n;
  note_changes(n, !ended.empty() || !started.empty(), changes);
  return true;
}

bool Cursor::back_one(Changes& changes) {
  if (state_.index == 0 || model_->num_events() == 0) return false;
  const auto p = static_cast<EventIndex>(state_.index);
  const EventIndex q = p - 1;
  const auto ended = model_->live_segments_.ending_at(p);
  const auto started = model_->live_segments_.starting_at(p);
  for (uint32_t f : model_->live_functions_.ending_at(p)) insert_function(f);
  for (uint32_t s : started) erase_hook(s);
  for (uint32_t s : ended) insert_hook(s, q);
  for (uint32_t f : model_->live_functions_.starting_at(p)) erase_function(f);
  refresh_fires(p, q);
  state_.index = q;
  // Undoing event p changes what p changed.
  note_changes(p, !ended.empty() || !started.empty(), changes);
  return true;
}

bool Cursor::next() {
  Changes changes;
  if (!forward_one(changes)) return false;
  const auto x = static_cast<EventIndex>(state_.index);
  if (changes.reducers && step_reducers(*model_, state_, x, true)) changes.reducers = false;
  apply_changes(changes);
  return true;
}

bool Cursor::prev() {
  Changes changes;
  if (!back_one(changes)) return false;
  const auto x = static_cast<EventIndex>(state_.index + 1);
  if (changes.reducers && step_reducers(*model_, state_, x, false)) changes.reducers = false;
  apply_changes(changes);
  return true;
}

}  // namespace hookscope::analysis
