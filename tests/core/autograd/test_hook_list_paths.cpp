// HookList's out-of-line paths (Note [Hook list fast paths]) and key serials
// (Note [Hook key serials]): compaction after many removals with no pass,
// removals that read the owner or destroy a callable, keys from many threads.

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "autograd/hooks.h"
#include "autograd/node.h"

using namespace hookscope;

namespace {

using Fn = HookFn<void(int)>;
using List = HookList<Fn, 2>;

std::vector<int> fire_order(List& list) {
  std::vector<int> out;
  list.fire([&](const auto& e, Fn&) { out.push_back(static_cast<int>(e.input_nr)); });
  return out;
}

}  // namespace

TEST_CASE("HookList: adds after many removals with no pass drop dead slots and reuse them") {
  for (uint32_t seed : {1u, 2u, 3u}) {
    List list;
    std::mt19937 rng(seed);
    std::vector<std::pair<HookKey, int>> live;
    std::vector<std::weak_ptr<int>> holders;
    for (int i = 0; i < 1000; ++i) {
      if (i % 4 == 0) {
        auto t = std::make_shared<int>(i);
        holders.push_back(t);
        live.push_back({list.add([t](int) {}, 1, static_cast<uint32_t>(i)), i});
      } else {
        live.push_back({list.add([](int) {}, 1, static_cast<uint32_t>(i)), i});
      }
    }
    // Remove 900 at random, no pass: 900 > 64 + 100 dead slots in the order.
    std::shuffle(live.begin(), live.end(), rng);
    std::vector<HookKey> gone;
    for (int i = 0; i < 900; ++i) {
      gone.push_back(live.back().first);
      REQUIRE(list.remove(live.back().first));
      live.pop_back();
    }
    std::sort(live.begin(), live.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    // This add compacts; the later ones reuse freed slots (none past the 1000 used).
    for (int i = 1000; i < 1500; ++i) {
      const HookKey k = list.add([](int) {}, 1, static_cast<uint32_t>(i));
      CHECK(slot_of(k) < 1000);
      live.push_back({k, i});
    }
    std::vector<int> expected;
    for (const auto& [k, id] : live) expected.push_back(id);
    CHECK(fire_order(list) == expected);
    CHECK(list.size() == 600);
    for (HookKey k : gone) CHECK_FALSE(list.remove(k));
    for (const auto& [k, id] : live) CHECK(list.contains(k));
    size_t alive = 0;
    for (const auto& h : holders) alive += !h.expired();
    size_t alive_expected = 0;
    for (const auto& [k, id] : live) alive_expected += id < 1000 && id % 4 == 0;
    CHECK(alive == alive_expected);  // removed callables were destroyed at removal
  }
}

TEST_CASE("HookList: removal reports the owner on every path") {
  List list;
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> alive = token;
  const HookKey trivial = list.add([](int) {}, 7);
  const HookKey owning = list.add([t = std::move(token)](int) {}, 8);
  const HookKey in_pass = list.add([](int) {}, 9);
  OwnerId owner = 0;
  CHECK(list.remove(trivial, &owner));
  CHECK(owner == 7);
  CHECK(list.remove(owning, &owner));
  CHECK(owner == 8);
  CHECK(alive.expired());
  list.fire([&](const auto& e, Fn&) {
    if (e.key == in_pass) {
      CHECK(list.remove(in_pass, &owner));
      CHECK(owner == 9);
    }
  });
  CHECK(list.empty());
  owner = 0;
  CHECK_FALSE(list.remove(in_pass, &owner));
  CHECK(owner == 0);
}

TEST_CASE("hook keys from many threads are unique and increase on each thread") {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 3 * static_cast<int>(kHookSerialBatch) + 17;  // several batches
  std::vector<std::vector<HookKey>> keys(kThreads);
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<Node>> nodes;
  for (int t = 0; t < kThreads; ++t) {
    nodes.push_back(std::make_shared<FunctionNode>(
        "KeyThreads", [](const variable_list&) { return variable_list{}; }));
  }
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        keys[t].push_back(nodes[t]->add_post_hook([](variable_list&, const variable_list&) {}));
        // Remove every other one so slots are reused: keys still never repeat.
        if (i % 2 == 1) nodes[t]->del_post_hook(keys[t][i - 1]);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all, serials;
  for (int t = 0; t < kThreads; ++t) {
    for (size_t i = 0; i < keys[t].size(); ++i) {
      all.insert(keys[t][i].value);
      serials.insert(trace::hook_key_serial(keys[t][i].value));
      CHECK(trace::hook_key_serial(keys[t][i].value) != 0);
      if (i > 0) {
        CHECK(trace::hook_key_serial(keys[t][i].value) >
              trace::hook_key_serial(keys[t][i - 1].value));
      }
    }
  }
  CHECK(all.size() == size_t{kThreads} * kPerThread);
  CHECK(serials.size() == size_t{kThreads} * kPerThread);
  for (int t = 0; t < kThreads; ++t) {
    CHECK(nodes[t]->num_post_hooks() == static_cast<size_t>(kPerThread - kPerThread / 2));
    for (int i = 0; i < kPerThread; ++i) {
      CHECK(nodes[t]->del_post_hook(keys[t][i]) == (i % 2 == 1 || i == kPerThread - 1));
    }
    CHECK(nodes[t]->num_post_hooks() == 0);
  }
}

TEST_CASE("HookList: a few hooks (inside the list and in the first block) removed in every order") {
  // kInline is 2: hooks 0 and 1 sit in the list, 2 and 3 in the rest's first block.
  std::vector<int> perm = {0, 1, 2, 3};
  int orders = 0;
  do {
    List list;
    std::vector<HookKey> keys;
    std::vector<std::weak_ptr<int>> holders;
    for (int i = 0; i < 4; ++i) {
      auto t = std::make_shared<int>(i);
      holders.push_back(t);
      if (i % 2 == 0) {
        keys.push_back(list.add([t](int) {}, 1, static_cast<uint32_t>(i)));
      } else {
        keys.push_back(list.add([](int) {}, 1, static_cast<uint32_t>(i)));
      }
    }
    std::vector<int> expected = {0, 1, 2, 3};
    for (int victim : perm) {
      REQUIRE(list.remove(keys[victim]));
      CHECK_FALSE(list.remove(keys[victim]));
      CHECK_FALSE(list.contains(keys[victim]));
      if (victim % 2 == 0) CHECK(holders[victim].expired());
      expected.erase(std::find(expected.begin(), expected.end(), victim));
      CHECK(fire_order(list) == expected);
      CHECK(list.size() == expected.size());
    }
    // Empty: the next add starts again at slot 0; the old keys stay dead.
    const HookKey again = list.add([](int) {}, 1, 9);
    CHECK(slot_of(again) == 0);
    for (HookKey k : keys) CHECK_FALSE(list.remove(k));
    CHECK(fire_order(list) == std::vector<int>{9});
    ++orders;
  } while (std::next_permutation(perm.begin(), perm.end()));
  CHECK(orders == 24);
}

TEST_CASE("HookList: keys of another list remove nothing from a list that never had a hook") {
  List source, empty;
  std::vector<HookKey> keys;
  for (int i = 0; i < 12; ++i) keys.push_back(source.add([](int) {}, 1));  // slots 0..11
  for (HookKey k : keys) {
    CHECK_FALSE(empty.contains(k));
    CHECK_FALSE(empty.remove(k));
  }
  CHECK(empty.empty());
  CHECK(fire_order(empty).empty());
  for (HookKey k : keys) CHECK(source.remove(k));
}

TEST_CASE("HookList: the only hook removes itself while it fires, then the list is reused") {
  List list;
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> alive = token;
  HookKey self;
  int ran = 0;
  self = list.add([&, t = std::move(token)](int) {
    ++ran;
    CHECK(list.remove(self));
    CHECK(!alive.expired());  // the running hook's callable lives until the pass ends
  }, 1);
  list.fire([](const auto&, Fn& fn) { fn(1); });
  CHECK(ran == 1);
  CHECK(alive.expired());
  CHECK(list.empty());
  list.fire([](const auto&, Fn& fn) { fn(1); });
  CHECK(ran == 1);
  const HookKey next = list.add([&](int) { ran += 10; }, 1);
  CHECK(slot_of(next) == 0);
  list.fire([](const auto&, Fn& fn) { fn(1); });
  CHECK(ran == 11);
}
