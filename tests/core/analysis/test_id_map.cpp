// The load pass's id maps (Note [Id maps]): ids below the reserved bound go
// to the flat array, others to the hash table; both must answer as one map.

#include <doctest/doctest.h>

#include <random>
#include <unordered_map>

#include "analysis/model_builder.h"

namespace an = hookscope::analysis;

namespace {

// Random sets and finds over counters, reused ids and ids far past any bound,
// checked against std::unordered_map.
void check_against_reference(an::IdMap<uint64_t>& map, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::unordered_map<uint64_t, uint32_t> ref;
  uint64_t counter = 1;
  for (uint32_t step = 0; step < 20000; ++step) {
    uint64_t id = 0;
    switch (rng() % 4) {
      case 0: id = counter++; break;                           // a new counter id
      case 1: id = rng() % (counter + 1); break;               // one seen (or 0)
      case 2: id = (uint64_t{1} << 40) + rng() % 5000; break;  // beyond the array
      default: id = rng(); break;                              // anything
    }
    const auto it = ref.find(id);
    const uint32_t expected = it == ref.end() ? an::kNoIndex : it->second;
    if (rng() % 2) {
      REQUIRE(map.set(id, step) == expected);
      ref[id] = step;
    } else {
      REQUIRE(map.find(id) == expected);
    }
  }
  CHECK(map.size() == ref.size());
  for (const auto& [id, value] : ref) CHECK(map.find(id) == value);
}

}  // namespace

TEST_CASE("IdMap: ids in the reserved array and in the hash table answer as one map") {
  SUBCASE("reserved: counters in the array") {
    an::IdMap<uint64_t> map;
    map.reserve(3000);
    check_against_reference(map, 1);
  }
  SUBCASE("reserved small: most ids past the array") {
    an::IdMap<uint64_t> map;
    map.reserve(1);
    check_against_reference(map, 2);
  }
  SUBCASE("not reserved: the hash table only") {
    an::IdMap<uint64_t> map;
    check_against_reference(map, 3);
  }
}

TEST_CASE("IdMap: collective keys (no array) with set() replacing") {
  an::IdMap<an::CollectiveKey> map;
  map.reserve(100);
  CHECK(map.set(an::CollectiveKey{7, 1}, 10) == an::kNoIndex);
  CHECK(map.set(an::CollectiveKey{7, 2}, 11) == an::kNoIndex);
  CHECK(map.set(an::CollectiveKey{7, 1}, 12) == 10);
  CHECK(map.find(an::CollectiveKey{7, 1}) == 12);
  CHECK(map.find(an::CollectiveKey{7, 2}) == 11);
  CHECK(map.find(an::CollectiveKey{8, 1}) == an::kNoIndex);
  CHECK(map.size() == 2);
}
