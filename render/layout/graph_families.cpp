// A Function's family numbered by its signature (GraphScene::assign_slots):
// Note [Numbering families].

#include <cstdint>
#include <utility>
#include <vector>

#include "render/layout/graph_scene.h"

namespace hookscope::render {

// Note [Numbering families]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A Function's family (its signature) numbered once per Function, through
// an open-addressing table keyed by the signature that starts small and
// doubles at half full. A hash map looked up at every change (twice per
// Function) took most of the scene's time at a million Functions (issue
// 16); sorting the (signature, Function) pairs instead cost n log n even
// for a training trace's hundred families (BM_GraphScene 12.7 -> 16.7 ms).
// The table is as large as the families: a hundred stay in cache, a million
// cost a probe each. The numbers (in order of first appearance) only
// index the families: slots do not depend on them.
std::vector<uint32_t> number_families(const std::vector<uint64_t>& signatures) {
  constexpr uint32_t kEmpty = UINT32_MAX;
  std::vector<uint32_t> family_of(signatures.size());
  int bits = 10;
  std::vector<uint64_t> keys(size_t{1} << bits);
  std::vector<uint32_t> values(size_t{1} << bits, kEmpty);
  uint32_t families = 0;
  // Fibonacci hashing: the signature's bits spread over the table's.
  auto home = [&](uint64_t key) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - bits)); };
  auto probe = [&](uint64_t key) {
    const size_t mask = keys.size() - 1;
    size_t i = home(key);
    while (values[i] != kEmpty && keys[i] != key) i = (i + 1) & mask;
    return i;
  };
  for (size_t f = 0; f < signatures.size(); ++f) {
    size_t i = probe(signatures[f]);
    if (values[i] == kEmpty) {
      if (2 * (size_t{families} + 1) > keys.size()) {  // grow at half full
        std::vector<uint64_t> old_keys = std::move(keys);
        std::vector<uint32_t> old_values = std::move(values);
        ++bits;
        keys.assign(size_t{1} << bits, 0);
        values.assign(size_t{1} << bits, kEmpty);
        for (size_t k = 0; k < old_keys.size(); ++k) {
          if (old_values[k] == kEmpty) continue;
          const size_t j = probe(old_keys[k]);
          keys[j] = old_keys[k];
          values[j] = old_values[k];
        }
        i = probe(signatures[f]);
      }
      keys[i] = signatures[f];
      values[i] = families++;
    }
    family_of[f] = values[i];
  }
  return family_of;
}

}  // namespace hookscope::render
