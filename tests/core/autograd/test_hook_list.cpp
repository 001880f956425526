// HookList storage (Note [Hook list storage]): order, stale keys, slot reuse,
// passes that add and remove, blocks that grow while a hook runs.

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <vector>

#include "autograd/hooks.h"

using namespace hookscope;

namespace {

using Fn = std::function<void(int)>;

std::vector<int> fire_all(HookList<Fn>& list) {
  std::vector<int> out;
  list.fire([&](const auto&, Fn& fn) { fn(0); });
  list.fire([&](const auto& e, Fn&) { out.push_back(static_cast<int>(e.input_nr)); });
  return out;
}

}  // namespace

TEST_CASE("HookList fires in registration order after removals and slot reuse") {
  HookList<Fn> list;
  std::vector<HookKey> keys;
  for (uint32_t i = 0; i < 200; ++i) keys.push_back(list.add([](int) {}, 1, i));
  for (uint32_t i = 0; i < 200; i += 2) REQUIRE(list.remove(keys[i]));
  for (uint32_t i = 200; i < 300; ++i) keys.push_back(list.add([](int) {}, 1, i));  // reuses slots
  std::vector<int> expected;
  for (int i = 1; i < 200; i += 2) expected.push_back(i);
  for (int i = 200; i < 300; ++i) expected.push_back(i);
  CHECK(fire_all(list) == expected);
  CHECK(list.size() == expected.size());
  for (uint32_t i = 0; i < 200; i += 2) CHECK_FALSE(list.remove(keys[i]));  // stale: removed once
}

TEST_CASE("HookList: a key kept after its list emptied and started again matches nothing") {
  HookList<Fn> list;
  const HookKey old_key = list.add([](int) {}, 1, 7);
  REQUIRE(list.remove(old_key));
  const HookKey new_key = list.add([](int) {}, 1, 8);  // slot 0 again, another serial
  CHECK(slot_of(new_key) == slot_of(old_key));
  CHECK_FALSE(list.contains(old_key));
  CHECK_FALSE(list.remove(old_key));
  CHECK(list.contains(new_key));
  CHECK(fire_all(list) == std::vector<int>{8});
}

TEST_CASE("HookList frees a removed hook's callable at once, or after the pass that removed it") {
  HookList<Fn> list;
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> alive = token;
  const HookKey k = list.add([t = std::move(token)](int) {}, 1);
  REQUIRE(list.remove(k));
  CHECK(alive.expired());

  auto token2 = std::make_shared<int>(0);
  std::weak_ptr<int> alive2 = token2;
  HookKey self{};
  bool expired_inside = true;
  self = list.add([&, t = std::move(token2)](int) {
    list.remove(self);                 // removes itself while it runs
    expired_inside = alive2.expired();  // its captures are still there
  }, 1);
  list.fire([](const auto&, Fn& fn) { fn(0); });
  CHECK_FALSE(expired_inside);
  CHECK(alive2.expired());
  CHECK(list.empty());
}

TEST_CASE("HookList: hooks added during a pass (growing new blocks) run only in later passes") {
  HookList<Fn> list;
  int added_ran = 0, first_ran = 0;
  list.add([&](int) {
    ++first_ran;
    // Enough adds to allocate several blocks while this hook runs.
    for (int i = 0; i < 100; ++i) list.add([&](int) { ++added_ran; }, 1);
  }, 1);
  list.fire([](const auto&, Fn& fn) { fn(0); });
  CHECK(first_ran == 1);
  CHECK(added_ran == 0);
  CHECK(list.size() == 101);
  list.fire([](const auto&, Fn& fn) { fn(0); });
  CHECK(first_ran == 2);
  CHECK(added_ran == 100);
}

TEST_CASE("HookList: a hook removed by an earlier one in the same pass still runs in that pass") {
  HookList<Fn> list;
  std::vector<int> ran;
  HookKey second{};
  list.add([&](int) { ran.push_back(1); list.remove(second); }, 1);
  second = list.add([&](int) { ran.push_back(2); }, 1);
  list.fire([](const auto&, Fn& fn) { fn(0); });
  CHECK(ran == std::vector<int>{1, 2});
  list.fire([](const auto&, Fn& fn) { fn(0); });
  CHECK(ran == std::vector<int>{1, 2, 1});
}
