// EventColumn: a timeline track's event indices, compactly (Note [Compact
// timeline index] in timeline_index.h).

#include <algorithm>
#include <cstring>

#include "render/layout/timeline_index.h"

namespace hookscope::render {

void EventColumn::push_back(uint32_t value) {
  if (identity_) {
    if (value == size_) {
      ++size_;
      return;
    }
    // The first value off the identity: the blocks so far become runs.
    identity_ = false;
    for (size_t b = 0; b < size_ / kBlock; ++b) {
      base_.push_back(static_cast<uint32_t>(b * kBlock));
      where_.push_back(static_cast<uint64_t>(pool_.size()) << 2);
    }
    for (size_t k = size_ / kBlock * kBlock; k < size_; ++k) pending_.push_back(static_cast<uint32_t>(k));
  }
  pending_.push_back(value);
  ++size_;
  if (pending_.size() == kBlock) flush();
}

void EventColumn::flush() {
  if (pending_.empty()) return;
  const std::vector<uint32_t>& v = pending_;
  bool run = true, small_steps = true;
  uint32_t lo = v[0], hi = v[0];
  for (size_t k = 1; k < v.size(); ++k) {
    run &= v[k] == v[0] + k;
    small_steps &= v[k] >= v[k - 1] && v[k] - v[k - 1] < 256;
    lo = std::min(lo, v[k]);
    hi = std::max(hi, v[k]);
  }
  const uint64_t at = pool_.size();
  if (run) {
    base_.push_back(v[0]);
    where_.push_back(at << 2);
  } else if (small_steps) {
    base_.push_back(v[0]);
    where_.push_back(at << 2 | 1);
    for (size_t k = 1; k < v.size(); ++k) pool_.push_back(static_cast<uint8_t>(v[k] - v[k - 1]));
  } else if (hi - lo < 65536) {
    base_.push_back(lo);
    where_.push_back(at << 2 | 2);
    pool_.resize(at + 2 * v.size());
    for (size_t k = 0; k < v.size(); ++k) {
      const auto d = static_cast<uint16_t>(v[k] - lo);
      std::memcpy(pool_.data() + at + 2 * k, &d, 2);
    }
  } else {
    base_.push_back(0);
    where_.push_back(at << 2 | 3);
    pool_.resize(at + 4 * v.size());
    std::memcpy(pool_.data() + at, v.data(), 4 * v.size());
  }
  pending_.clear();
}

void EventColumn::finish() {
  if (!identity_) flush();
  pending_.shrink_to_fit();
  base_.shrink_to_fit();
  where_.shrink_to_fit();
  pool_.shrink_to_fit();
}

size_t EventColumn::memory_bytes() const {
  return base_.capacity() * 4 + where_.capacity() * 8 + pool_.capacity() + pending_.capacity() * 4;
}

}  // namespace hookscope::render
