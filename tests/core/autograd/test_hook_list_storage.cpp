// HookList's two-level storage (Note [Hook list storage]) and HookFn (Note
// [Hook callables]): hooks inside the list, then in the overflow blocks;
// trivially destructible callables; the inline → overflow transition while
// hooks are removed and added during a pass; a random run against a model.

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "autograd/hooks.h"

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

TEST_CASE("HookFn knows whether its callable needs a destructor") {
  int hits = 0;
  Fn plain = [&hits](int x) { hits += x; };  // captures a pointer: nothing to destroy
  CHECK(plain.trivially_destructible());
  plain(3);
  CHECK(hits == 3);

  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> alive = token;
  Fn owning = [t = std::move(token), &hits](int x) { hits += x + *t; };
  CHECK_FALSE(owning.trivially_destructible());
  Fn moved = std::move(owning);
  CHECK_FALSE(static_cast<bool>(owning));
  moved(1);
  CHECK(hits == 4);
  CHECK_FALSE(alive.expired());
  moved = nullptr;
  CHECK(alive.expired());

  struct Big {
    int* out;
    long pad[8];
    void operator()(int x) const { *out += x + static_cast<int>(pad[7]); }
  };
  Fn big = Big{&hits, {0, 0, 0, 0, 0, 0, 0, 5}};  // on the heap: its block must be freed
  CHECK_FALSE(big.trivially_destructible());
  big(1);
  CHECK(hits == 10);

  Fn wrapped = std::function<void(int)>([&hits](int x) { hits -= x; });
  CHECK_FALSE(wrapped.trivially_destructible());
  wrapped(10);
  CHECK(hits == 0);
  Fn from_empty = std::function<void(int)>();
  CHECK_FALSE(static_cast<bool>(from_empty));
  CHECK_THROWS_AS(from_empty(1), std::bad_function_call);

  auto unique = std::make_unique<int>(7);  // move-only captures work
  Fn move_only = [u = std::move(unique), &hits](int) { hits = *u; };
  move_only(0);
  CHECK(hits == 7);
}

TEST_CASE("HookList: hooks inside the list and in overflow blocks keep order, keys and owners") {
  List list;
  std::vector<HookKey> keys;
  for (uint32_t i = 0; i < 40; ++i) keys.push_back(list.add([](int) {}, 100 + i, i));
  OwnerId owner = 0;
  REQUIRE(list.remove(keys[1], &owner));  // inside the list
  CHECK(owner == 101);
  REQUIRE(list.remove(keys[2], &owner));  // first overflow block
  CHECK(owner == 102);
  REQUIRE(list.remove(keys[39], &owner));  // a later block
  CHECK(owner == 139);
  CHECK_FALSE(list.remove(keys[1]));
  CHECK_FALSE(list.contains(keys[2]));
  std::vector<int> expected;
  for (int i = 0; i < 40; ++i) {
    if (i != 1 && i != 2 && i != 39) expected.push_back(i);
  }
  CHECK(fire_order(list) == expected);  // compacts: slots 1, 2, 39 are free again
  keys.push_back(list.add([](int) {}, 1, 40));
  keys.push_back(list.add([](int) {}, 1, 41));
  keys.push_back(list.add([](int) {}, 1, 42));
  expected.insert(expected.end(), {40, 41, 42});
  CHECK(fire_order(list) == expected);
  CHECK(list.size() == expected.size());
  for (const auto* e : list.live_entries()) CHECK(list.contains(e->key));
}

TEST_CASE("HookList: inline to overflow while hooks are removed and added during a pass") {
  List list;
  std::vector<int> ran;
  std::vector<HookKey> added;
  HookKey second{}, first{};
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> alive = token;
  first = list.add([&](int) {
    ran.push_back(0);
    list.remove(first);   // itself, while running
    list.remove(second);  // a later inline hook: still runs in this pass
    // Past the two inline slots: allocates the overflow record and blocks.
    for (int i = 0; i < 30; ++i) added.push_back(list.add([&ran, i](int) { ran.push_back(10 + i); }, 1));
    list.remove(added[3]);  // added and removed in the same pass: never runs
  }, 1);
  second = list.add([&, t = std::move(token)](int) {
    ran.push_back(1);
    CHECK_FALSE(alive.expired());  // removed earlier in this pass, not yet destroyed
  }, 1);
  token = nullptr;
  list.fire([](const auto&, Fn& fn) { fn(0); });
  CHECK(ran == std::vector<int>{0, 1});
  CHECK(alive.expired());  // destroyed when the pass ended
  CHECK(list.size() == 29);
  ran.clear();
  list.fire([](const auto&, Fn& fn) { fn(0); });
  std::vector<int> expected;
  for (int i = 0; i < 30; ++i) {
    if (i != 3) expected.push_back(10 + i);
  }
  CHECK(ran == expected);
  for (HookKey k : added) list.remove(k);
  CHECK(list.empty());
  const HookKey again = list.add([](int) {}, 1, 5);  // starts again at slot 0
  CHECK(slot_of(again) == 0);
  CHECK_FALSE(list.contains(first));
  CHECK(fire_order(list) == std::vector<int>{5});
}

TEST_CASE("HookList: a hook removed during a nested pass runs in the outer pass only") {
  List list;
  std::vector<int> ran;
  HookKey victim{};
  int depth = 0;
  list.add([&](int) {
    ran.push_back(0);
    if (depth++ == 0) {
      list.remove(victim);  // the outer pass began before: it still runs there
      list.fire([](const auto&, Fn& fn) { fn(0); });  // began after: it does not
    }
  }, 1);
  victim = list.add([&](int) { ran.push_back(1); }, 1);
  list.fire([](const auto&, Fn& fn) { fn(0); });
  CHECK(ran == std::vector<int>{0, 0, 1});
}

TEST_CASE("HookList: random adds, removals (stale keys too) and passes match a model") {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    List list;
    std::mt19937 rng(seed);
    struct Live {
      HookKey key;
      int id;
    };
    std::vector<Live> model;  // live hooks in registration order
    std::vector<HookKey> removed;
    auto holders = std::vector<std::weak_ptr<int>>();
    int next_id = 0;
    for (int step = 0; step < 4000; ++step) {
      const uint32_t op = rng() % 10;
      if (op < 5 || model.empty()) {
        const int id = next_id++;
        HookKey k;
        if (id % 3 == 0) {  // a callable that needs its destructor
          auto t = std::make_shared<int>(id);
          holders.push_back(t);
          k = list.add([t](int) {}, 1, static_cast<uint32_t>(id));
        } else {
          k = list.add([](int) {}, 1, static_cast<uint32_t>(id));
        }
        model.push_back({k, id});
      } else if (op < 8) {
        const size_t i = rng() % model.size();
        REQUIRE(list.remove(model[i].key));
        removed.push_back(model[i].key);
        model.erase(model.begin() + static_cast<long>(i));
      } else if (op == 8 && !removed.empty()) {
        CHECK_FALSE(list.remove(removed[rng() % removed.size()]));
      } else {
        std::vector<int> expected;
        for (const Live& l : model) expected.push_back(l.id);
        REQUIRE(fire_order(list) == expected);
      }
      REQUIRE(list.size() == model.size());
    }
    size_t alive = 0;
    for (const auto& h : holders) alive += !h.expired();
    size_t alive_expected = 0;
    for (const Live& l : model) alive_expected += l.id % 3 == 0;
    CHECK(alive == alive_expected);  // every removed callable was destroyed
  }
}
