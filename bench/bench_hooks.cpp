// Hook add / remove / fire costs, with a libtorch-1.13-style reference in the
// same binary (see Note [Linear-scan reference]).
//
// Figures (issue "hook benchmarks"):
//  * BM_AddPostHook                       ns per Node::add_post_hook
//  * BM_DelPostHook/N                     ns per Node::del_post_hook(random key), the
//                                         Node holding N hooks at each removal
//  * BM_DelPostHookLinearScanReference/N  the same on the reference
//  * BM_DelAddPostHookPair/N              one Node kept at N hooks: remove a random
//    (+ ...LinearScanReference/N)         hook and add one back (no paused timing)
//  * BM_DrainPostHooks/N                 like for like with the libtorch measurement
//    (+ ...LinearScanReference/N)         (1.13's linear scan): per repetition, fresh
//                                         Nodes holding 100,000 hooks in all, N per
//                                         Node, each Node's keys shuffled, then every
//                                         hook removed; time per removal (counter
//                                         ns_per_removal), the hook's destruction and
//                                         free included
//  * BM_DrainPostHooksHeapCallable/N      the same with hooks too big to keep inline
//                                         (each a heap block, as every libtorch hook)
//  * ...LinearScanReferenceLibtorchSizedNodes/N  the reference with each Node a heap
//                                         object of libtorch's Node size (392 bytes)
//  * BM_FirePostHook/N                    Node::call_post_hooks with N trivial hooks;
//    (+ ...VectorReference/N)             per-hook time in the `per_hook` counter

#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "autograd/node.h"

namespace hs = hookscope;

namespace {

std::shared_ptr<hs::Node> make_node() {
  return std::make_shared<hs::FunctionNode>(
      "BenchNode", [](const hs::variable_list&) { return hs::variable_list{}; });
}

// Note [Linear-scan reference]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// What libtorch 1.13 does (torch/csrc/autograd/function.h): post hooks are a
// std::vector<std::unique_ptr<FunctionPostHook>>, add_post_hook returns the
// hook's address as the key, and del_post_hook(key) scans the vector for the
// element whose pointer equals the key and erases it (shifting the tail).
// The member functions (and the trivial hook) are kept out of line and opaque
// to the optimiser (noipa), as a library call and a user's hook would be.
struct RefPostHook {
  virtual ~RefPostHook() = default;
  virtual void operator()(hs::variable_list& grad_inputs,
                          const hs::variable_list& grad_outputs) = 0;
};
struct RefTrivialPostHook final : RefPostHook {
  [[gnu::noipa]] void operator()(hs::variable_list&, const hs::variable_list&) override {}
};

class RefNode {
 public:
  [[gnu::noipa]] uintptr_t add_post_hook(std::unique_ptr<RefPostHook>&& hook) {
    post_hooks_.push_back(std::move(hook));
    return reinterpret_cast<uintptr_t>(post_hooks_.back().get());
  }
  [[gnu::noipa]] bool del_post_hook(const uintptr_t& key) {
    for (auto it = post_hooks_.begin(); it != post_hooks_.end(); ++it) {
      if (key == reinterpret_cast<uintptr_t>(it->get())) {
        post_hooks_.erase(it);
        return true;
      }
    }
    return false;
  }
  [[gnu::noipa]] void call_post_hooks(hs::variable_list& grad_inputs,
                                         const hs::variable_list& grad_outputs) {
    for (const auto& hook : post_hooks_) (*hook)(grad_inputs, grad_outputs);
  }
  size_t num_post_hooks() const { return post_hooks_.size(); }

 private:
  std::vector<std::unique_ptr<RefPostHook>> post_hooks_;
};

// Uniform interface over hookscope's Node and the reference.
struct Ours {
  using Key = hs::HookKey;
  std::shared_ptr<hs::Node> node = make_node();
  Key add() {
    return node->add_post_hook([](hs::variable_list&, const hs::variable_list&) {});
  }
  bool del(Key key) { return node->del_post_hook(key); }
  void fire(hs::variable_list& in, const hs::variable_list& out) {
    node->call_post_hooks(in, out);
  }
  size_t size() const { return node->num_post_hooks(); }
};

struct Reference {
  using Key = uintptr_t;
  RefNode node;
  Key add() { return node.add_post_hook(std::make_unique<RefTrivialPostHook>()); }
  bool del(Key key) { return node.del_post_hook(key); }
  void fire(hs::variable_list& in, const hs::variable_list& out) {
    node.call_post_hooks(in, out);
  }
  size_t size() const { return node.num_post_hooks(); }
};

// The reference with each Node where libtorch keeps it: its own heap object
// (make_shared) of libtorch 1.13's sizeof(torch::autograd::Node), 392 bytes,
// rather than 24 bytes in a contiguous vector. Same linear-scan removal.
struct ReferenceLibtorchSizedNodes {
  using Key = uintptr_t;
  struct alignas(8) SizedNode {
    RefNode node;
    unsigned char rest_of_node[392 - sizeof(RefNode)];
  };
  std::shared_ptr<SizedNode> node = std::make_shared<SizedNode>();
  Key add() { return node->node.add_post_hook(std::make_unique<RefTrivialPostHook>()); }
  bool del(Key key) { return node->node.del_post_hook(key); }
};

// ---- add --------------------------------------------------------------------

// Adds hooks to one Node; every kBatch adds the hooks are removed with the
// timer paused, so the Node holds 0..kBatch hooks while adding.
template <class Impl>
void add_bench(benchmark::State& state) {
  constexpr size_t kBatch = 1024;
  Impl impl;
  std::vector<typename Impl::Key> keys(kBatch);
  size_t i = 0;
  for (auto _ : state) {
    keys[i] = impl.add();
    if (++i == kBatch) {
      state.PauseTiming();
      for (auto k : keys) impl.del(k);
      i = 0;
      state.ResumeTiming();
    }
  }
  benchmark::DoNotOptimize(keys.data());
  state.SetItemsProcessed(state.iterations());
}

// Note [Hook add cost]
// ~~~~~~~~~~~~~~~~~~~~
// The O(1) removal work (Note [Hook list storage]) had made adding slower
// than before it (BM_AddPostHook 12.1 -> 15.2 ns, DelAddPostHookPair/1000
// 17.7 -> 25.8). Profiled (perf, cpu-clock): the key's atomic fetch_add was
// 40% of an add, and at N = 1000 compaction of the firing order a third of
// a remove+add pair (a branch on each slot's liveness, mispredicted half the
// time). Now keys come from a per-thread batch (Note [Hook key serials]),
// compaction has no data-dependent branch, the callable is moved once, and
// rare paths are out of line (Note [Hook list fast paths]). Interleaved
// medians of 3 rounds, load average 10-16 on 2 shared cores, ns (before =
// c406433^, main = b37eeb8, after = the add-cost commits):
//                                   before   main   after
//   BM_AddPostHook                    12.0   15.4    8.5
//   BM_DelAddPostHookPair/1           16.9   17.0    7.7
//   BM_DelAddPostHookPair/10          23.6   20.8   13.0
//   BM_DelAddPostHookPair/100         17.9   24.3   11.2
//   BM_DelAddPostHookPair/1000        18.0   27.3   11.4
//   BM_DrainPostHooks/1000 (ns/removal) -   6.34   4.35  (reference 211)
void BM_AddPostHook(benchmark::State& state) { add_bench<Ours>(state); }
void BM_AddPostHookLinearScanReference(benchmark::State& state) {
  add_bench<Reference>(state);
}
BENCHMARK(BM_AddPostHook);
BENCHMARK(BM_AddPostHookLinearScanReference);

// ---- delete alone -----------------------------------------------------------

// kNodes Nodes each hold N hooks. A batch removes one random live hook from
// each Node, so every removal sees exactly N hooks on its Node; then each Node
// gets one hook back and the next victims are drawn. One iteration is one
// removal; only the removals are timed (manual time around each batch of
// kNodes removals: two clock reads per batch, no PauseTiming). kNodes is small
// so that the hooks of all Nodes stay in cache even at N = 1000.
template <class Impl>
void del_bench(benchmark::State& state) {
  constexpr size_t kNodes = 16;
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<Impl> nodes(kNodes);
  std::vector<std::vector<typename Impl::Key>> live(kNodes);
  for (size_t j = 0; j < kNodes; ++j) {
    live[j].reserve(n);
    for (size_t h = 0; h < n; ++h) live[j].push_back(nodes[j].add());
  }
  std::mt19937_64 rng(0x5eed);
  std::vector<typename Impl::Key> victims(kNodes);
  auto draw = [&] {
    for (size_t j = 0; j < kNodes; ++j) {
      auto& v = live[j];
      size_t pick = static_cast<size_t>(rng() % v.size());
      victims[j] = v[pick];
      v[pick] = v.back();
      v.pop_back();
    }
  };
  draw();
  size_t i = 0;
  size_t failed = 0;
  std::chrono::steady_clock::time_point t0;
  for (auto _ : state) {
    if (i == 0) t0 = std::chrono::steady_clock::now();
    bool ok = nodes[i].del(victims[i]);
    benchmark::DoNotOptimize(ok);
    failed += !ok;
    if (++i == kNodes) {
      auto t1 = std::chrono::steady_clock::now();
      state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
      for (size_t j = 0; j < kNodes; ++j) live[j].push_back(nodes[j].add());
      draw();
      i = 0;
    }
  }
  if (failed != 0) state.SkipWithError("a removal did not find its hook");
  state.SetItemsProcessed(state.iterations());
  state.counters["hooks_on_node"] = static_cast<double>(n);
}

void BM_DelPostHook(benchmark::State& state) { del_bench<Ours>(state); }
void BM_DelPostHookLinearScanReference(benchmark::State& state) {
  del_bench<Reference>(state);
}
BENCHMARK(BM_DelPostHook)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->UseManualTime();
BENCHMARK(BM_DelPostHookLinearScanReference)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->UseManualTime();

// ---- delete + add on one Node -----------------------------------------------

// One Node kept at N hooks: each iteration removes a random hook and adds one
// in its place. No paused timing; compare with BM_AddPostHook for the add share.
template <class Impl>
void del_add_bench(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Impl impl;
  std::vector<typename Impl::Key> live;
  for (size_t h = 0; h < n; ++h) live.push_back(impl.add());
  constexpr size_t kPicks = 1 << 16;
  std::vector<uint32_t> picks(kPicks);
  std::mt19937_64 rng(0x5eed);
  for (auto& p : picks) p = static_cast<uint32_t>(rng() % n);
  size_t i = 0;
  size_t failed = 0;
  for (auto _ : state) {
    uint32_t pick = picks[i++ & (kPicks - 1)];
    bool ok = impl.del(live[pick]);
    benchmark::DoNotOptimize(ok);
    failed += !ok;
    live[pick] = impl.add();
  }
  if (failed != 0 || impl.size() != n) state.SkipWithError("hook count drifted");
  state.SetItemsProcessed(state.iterations());
  state.counters["hooks_on_node"] = static_cast<double>(n);
}

void BM_DelAddPostHookPair(benchmark::State& state) { del_add_bench<Ours>(state); }
void BM_DelAddPostHookPairLinearScanReference(benchmark::State& state) {
  del_add_bench<Reference>(state);
}
BENCHMARK(BM_DelAddPostHookPair)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_DelAddPostHookPairLinearScanReference)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);

// ---- drain whole Nodes, like for like ---------------------------------------

// Note [Like-for-like removal]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The pattern the libtorch figure was measured with: fresh Nodes, enough for
// kDrainHooks hooks per repetition; N hooks added to each; each Node's keys
// shuffled; then all removed, Node after Node, each in its shuffled order.
// Only the removals are timed (manual time around the whole drain, divided
// by the number of removals: two clock reads per repetition, so the clock
// costs nothing per removal); making and destroying the Nodes is not. The
// clock is the thread's CPU time: on a loaded machine wall time mostly
// measures the other processes.
//
// Figures (2 shared cores under load, Release, medians of 5 repetitions in
// one run, ns per removal; before = 64-byte entries in blocks, after =
// Note [Hook list storage] and Note [Hook callables]):
//    N    before: ours / reference   ratio    after: ours / reference   ratio
//    1            49.3 / 11.1        0.23x           26.9 / 10.7        0.40x
//   10            29.5 / 17.4        0.59x           11.3 / 16.7        1.5x
//  100            17.2 / 53.1        3.1x             7.9 / 43.0        5.5x
// 1000            15.7 / 220         14x              3.8 / 242         64x
// At N = 1 a removal is one cache miss on the Node, where the hook's slot
// lives; the reference keeps its 24-byte Nodes in one array, so its removals
// stream from memory. With its Nodes where libtorch keeps them (heap objects
// of 392 bytes, ...LibtorchSizedNodes) the reference takes 22.1 ns at N = 1
// and 17.6 at N = 10. A hook too big to keep inline (...HeapCallable) is a
// heap block to free: 40.4 ns at N = 1, 112 at N = 1000.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <class Impl>
void drain_bench(benchmark::State& state) {
  constexpr size_t kDrainHooks = 100000;
  const size_t n = static_cast<size_t>(state.range(0));
  const size_t num_nodes = kDrainHooks / n;
  std::mt19937_64 rng(0x5eed);
  size_t failed = 0, removed = 0;
  double seconds = 0;
  for (auto _ : state) {
    auto nodes = std::make_unique<std::vector<Impl>>(num_nodes);
    std::vector<std::vector<typename Impl::Key>> keys(num_nodes);
    for (size_t j = 0; j < num_nodes; ++j) {
      keys[j].reserve(n);
      for (size_t h = 0; h < n; ++h) keys[j].push_back((*nodes)[j].add());
      std::shuffle(keys[j].begin(), keys[j].end(), rng);
    }
    const double t0 = thread_seconds();
    for (size_t j = 0; j < num_nodes; ++j) {
      Impl& node = (*nodes)[j];
      for (const auto& k : keys[j]) {
        bool ok = node.del(k);
        benchmark::DoNotOptimize(ok);
        failed += !ok;
      }
    }
    const double dt = thread_seconds() - t0;
    state.SetIterationTime(dt);
    seconds += dt;
    removed += num_nodes * n;
    nodes.reset();
  }
  if (failed != 0) state.SkipWithError("a removal did not find its hook");
  state.SetItemsProcessed(static_cast<int64_t>(removed));
  state.counters["hooks_on_node"] = static_cast<double>(n);
  state.counters["ns_per_removal"] = seconds * 1e9 / static_cast<double>(removed);
}

// Ours with a hook too big to keep inline (Note [Hook callables]): every hook
// is a heap block that its removal destroys and frees, as in libtorch.
struct OursHeapCallable : Ours {
  Key add() {
    std::array<uint64_t, 6> payload{};  // 48 bytes of captures: over HookFn's inline room
    return node->add_post_hook(
        [payload](hs::variable_list&, const hs::variable_list&) { benchmark::DoNotOptimize(payload); });
  }
};

void BM_DrainPostHooks(benchmark::State& state) { drain_bench<Ours>(state); }
void BM_DrainPostHooksHeapCallable(benchmark::State& state) {
  drain_bench<OursHeapCallable>(state);
}
void BM_DrainPostHooksLinearScanReference(benchmark::State& state) {
  drain_bench<Reference>(state);
}
// A repetition's setup (100,000 adds, fresh Nodes) costs far more than its
// timed drain, so each repetition runs only a few drains (MinTime).
BENCHMARK(BM_DrainPostHooks)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->UseManualTime()
    ->MinTime(0.05)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DrainPostHooksHeapCallable)
    ->Arg(1)
    ->Arg(1000)
    ->UseManualTime()
    ->MinTime(0.05)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DrainPostHooksLinearScanReference)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->UseManualTime()
    ->MinTime(0.05)
    ->Unit(benchmark::kMillisecond);
void BM_DrainPostHooksLinearScanReferenceLibtorchSizedNodes(benchmark::State& state) {
  drain_bench<ReferenceLibtorchSizedNodes>(state);
}
BENCHMARK(BM_DrainPostHooksLinearScanReferenceLibtorchSizedNodes)
    ->Arg(1)
    ->Arg(10)
    ->UseManualTime()
    ->MinTime(0.05)
    ->Unit(benchmark::kMillisecond);

// ---- fire -------------------------------------------------------------------

// call_post_hooks on a Node with N trivial hooks (no recorder attached).
// Time is per call; `per_hook` is per hook fired.
template <class Impl>
void fire_bench(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Impl impl;
  for (size_t h = 0; h < n; ++h) impl.add();
  hs::variable_list grad_inputs;
  const hs::variable_list grad_outputs;
  for (auto _ : state) {
    impl.fire(grad_inputs, grad_outputs);
    benchmark::ClobberMemory();
  }
  const double fired = static_cast<double>(state.iterations()) * static_cast<double>(n);
  state.SetItemsProcessed(static_cast<int64_t>(fired));
  state.counters["per_hook"] =
      benchmark::Counter(fired, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_FirePostHook(benchmark::State& state) { fire_bench<Ours>(state); }
void BM_FirePostHookVectorReference(benchmark::State& state) {
  fire_bench<Reference>(state);
}
BENCHMARK(BM_FirePostHook)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_FirePostHookVectorReference)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace

BENCHMARK_MAIN();
