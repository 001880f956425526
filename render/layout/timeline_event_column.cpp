// EventColumn: a timeline track's event indices, compactly (Note [Compact
// timeline index] in timeline_index.h).

#include <algorithm>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "render/layout/timeline_index.h"

namespace hookscope::render {

void EventColumn::leave_identity() {
  // The first value off the identity: the whole blocks so far become runs,
  // the partial one is pending.
  identity_ = false;
  for (size_t b = 0; b < size_ / kBlock; ++b) {
    base_.push_back(static_cast<uint32_t>(b * kBlock));
    where_.push_back(static_cast<uint64_t>(pool_.size()) << 2);
  }
  for (size_t k = size_ / kBlock * kBlock; k < size_; ++k) pending_.push_back(static_cast<uint32_t>(k));
}

// Off the identity, pending_ holds the last size_ % kBlock values.
void EventColumn::push_back_stored(uint32_t value) {
  if (identity_) leave_identity();
  pending_.push_back(value);
  ++size_;
  if (pending_.size() == kBlock) flush();
}

void EventColumn::append(const uint32_t* v, size_t n) {
  size_t k = 0;
  if (identity_) {
    while (k < n && v[k] == size_) {
      ++k;
      ++size_;
    }
    if (k == n) return;
    leave_identity();
  }
  while (k < n && !pending_.empty()) push_back_stored(v[k++]);
  // Room for byte steps (the common case when threads interleave): the
  // vectors grow once, not by doubling with a copy each time.
  // Grown geometrically, so that appending in pieces stays linear.
  const size_t blocks = (n - k) / kBlock;
  auto room = [](auto& vec, size_t more) {
    if (vec.capacity() < vec.size() + more) vec.reserve(std::max(vec.size() + more, 2 * vec.capacity()));
  };
  room(base_, blocks);
  room(where_, blocks);
  room(pool_, blocks * (kBlock - 1));
  for (; n - k >= kBlock; k += kBlock) {
    encode(v + k, kBlock);
    size_ += kBlock;
  }
  for (; k < n; ++k) push_back_stored(v[k]);
}

namespace {

// What a block needs. Steps and offsets are taken modulo 2^32, as
// operator[] adds them.
struct BlockShape {
  uint32_t off_run = 0;   // nonzero: not v[0], v[0] + 1, ...
  uint32_t big_step = 0;  // nonzero: some step is not in [0, 256)
  uint32_t lo = 0, hi = 0;
};

BlockShape shape_of(const uint32_t* v, size_t n) {
  BlockShape s{0, 0, v[0], v[0]};
  for (size_t k = 1; k < n; ++k) {
    s.off_run |= (v[k] - v[0]) ^ static_cast<uint32_t>(k);
    s.big_step |= (v[k] - v[k - 1]) >> 8;
    s.lo = std::min(s.lo, v[k]);
    s.hi = std::max(s.hi, v[k]);
  }
  return s;
}

// The same for a whole block, a loop per field with trip counts that are
// multiples of 8: -O2 vectorizes each (one loop over all four does not).
BlockShape shape_of_block(const uint32_t* v) {
  constexpr uint32_t kN = EventColumn::kBlock;
  static_assert(kN % 8 == 0);
  BlockShape s{0, 0, v[0], v[0]};
  for (uint32_t k = 0; k < kN; ++k) s.off_run |= (v[k] - v[0]) ^ k;
  for (uint32_t k = 0; k < kN - 8; ++k) s.big_step |= (v[k + 1] - v[k]) >> 8;
  for (uint32_t k = kN - 8; k < kN - 1; ++k) s.big_step |= (v[k + 1] - v[k]) >> 8;
  if (s.off_run == 0 || s.big_step == 0) return s;  // lo and hi are for 16-bit offsets only
  for (uint32_t k = 0; k < kN; ++k) s.lo = v[k] < s.lo ? v[k] : s.lo;
  for (uint32_t k = 0; k < kN; ++k) s.hi = v[k] > s.hi ? v[k] : s.hi;
  return s;
}

}  // namespace

void EventColumn::encode(const uint32_t* v, size_t n) {
  const BlockShape s = n == kBlock ? shape_of_block(v) : shape_of(v, n);
  const uint64_t at = pool_.size();
  if (s.off_run == 0) {
    base_.push_back(v[0]);
    where_.push_back(at << 2);
  } else if (s.big_step == 0) {
    base_.push_back(v[0]);
    where_.push_back(at << 2 | 1);
    pool_.resize(at + n - 1);
    uint8_t* p = pool_.data() + at;
    size_t k = 1;
#ifdef __SSE2__
    // 16 steps at a time (each < 256: the saturating packs keep them).
    for (; k + 16 <= n; k += 16) {
      __m128i d[4];
      for (int q = 0; q < 4; ++q) {
        const __m128i cur = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + k + 4 * q));
        const __m128i prev = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + k + 4 * q - 1));
        d[q] = _mm_sub_epi32(cur, prev);
      }
      const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(d[0], d[1]), _mm_packs_epi32(d[2], d[3]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + k - 1), bytes);
    }
#endif
    for (; k < n; ++k) p[k - 1] = static_cast<uint8_t>(v[k] - v[k - 1]);
  } else if (s.hi - s.lo < 65536) {
    base_.push_back(s.lo);
    where_.push_back(at << 2 | 2);
    pool_.resize(at + 2 * n);
    for (size_t k = 0; k < n; ++k) {
      const auto d = static_cast<uint16_t>(v[k] - s.lo);
      std::memcpy(pool_.data() + at + 2 * k, &d, 2);
    }
  } else {
    base_.push_back(0);
    where_.push_back(at << 2 | 3);
    pool_.resize(at + 4 * n);
    std::memcpy(pool_.data() + at, v, 4 * n);
  }
}

void EventColumn::flush() {
  if (pending_.empty()) return;
  encode(pending_.data(), pending_.size());
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
