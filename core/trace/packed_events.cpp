// Reading packed events back, and filling a store block by block (Note
// [Packed events]).

#include "trace/packed_events.h"


#include <algorithm>
#include <cstdint>
#include <cstring>

#include "trace/packed_block.h"
#include "trace/pages.h"

namespace hookscope::trace {

using namespace packed;

// ---- PackedEvents ----

Event PackedEvents::at(size_t i) const {
  const uint8_t* b = block(i / kBlock);
  const BlockHeader h = header_at(b);
  const uint8_t* data = b + h.data_at;
  const uint64_t pos = static_cast<uint64_t>(i % kBlock) * h.record_bits;
  Event e;
  for_fields([&](auto fc) {
    constexpr size_t f = decltype(fc)::value;
    set_field<f>(e, value_of(b, h, f, read_bits(data, pos + h.offset[f], h.width[f])));
  });
  return e;
}

uint64_t PackedEvents::t_ns(size_t i) const {
  const uint8_t* b = block(i / kBlock);
  const BlockHeader h = header_at(b);
  const uint64_t code =
      read_bits(b + h.data_at, static_cast<uint64_t>(i % kBlock) * h.record_bits, h.width[0]);
  return value_of(b, h, 0, code);
}

size_t PackedEvents::decode_block(size_t b, Event* out, uint32_t fields) const {
  const size_t n = std::min(kBlock, size_ - b * kBlock);
  const uint8_t* bytes = block(b);
  const BlockHeader h = header_at(bytes);
  const uint8_t* data = bytes + h.data_at;
  for (size_t i = 0; i < n; ++i) out[i] = Event{};
  for_fields([&](auto fc) {
    constexpr size_t f = decltype(fc)::value;
    if (!((fields >> f) & 1)) return;
    const unsigned width = h.width[f];
    const uint64_t base = h.base[f];
    if (width == 0) {  // the same value throughout the block
      const uint64_t v = value_of(bytes, h, f, 0);
      if (v != 0) {
        for (size_t i = 0; i < n; ++i) set_field<f>(out[i], v);
      }
      return;
    }
    uint64_t pos = h.offset[f];
    const unsigned record = h.record_bits;
    if ((h.dict >> f) & 1) {
      for (size_t i = 0; i < n; ++i, pos += record) {
        set_field<f>(out[i], value_of(bytes, h, f, read_bits(data, pos, width)));
      }
    } else if ((h.zero_escaped >> f) & 1) {
      for (size_t i = 0; i < n; ++i, pos += record) {
        const uint64_t code = read_bits(data, pos, width);
        set_field<f>(out[i], code == 0 ? 0 : base + (code - 1));
      }
    } else {
      for (size_t i = 0; i < n; ++i, pos += record) set_field<f>(out[i], base + read_bits(data, pos, width));
    }
  });
  return n;
}

void PackedEvents::decode(size_t begin, size_t end, Event* out, uint32_t fields) const {
  Event buf[kBlock];
  while (begin < end) {
    const size_t b = begin / kBlock;
    const size_t n = decode_block(b, buf, fields);
    const size_t from = begin - b * kBlock;
    const size_t take = std::min(n - from, end - begin);
    std::copy(buf + from, buf + from + take, out);
    out += take;
    begin += take;
  }
}

void PackedEvents::count_kinds(uint64_t* counts) const {
  constexpr size_t kKind = 6;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const size_t n = std::min(kBlock, size_ - b * kBlock);
    const uint8_t* bytes = block(b);
    const BlockHeader h = header_at(bytes);
    if (h.width[kKind] == 0 && !((h.zero_escaped >> kKind) & 1) && !((h.dict >> kKind) & 1)) {
      counts[static_cast<uint8_t>(h.base[kKind])] += n;
      continue;
    }
    uint64_t pos = h.offset[kKind];
    for (size_t i = 0; i < n; ++i, pos += h.record_bits) {
      const uint64_t v = value_of(bytes, h, kKind, read_bits(bytes + h.data_at, pos, h.width[kKind]));
      ++counts[static_cast<uint8_t>(v)];
    }
  }
}

std::vector<Event> PackedEvents::unpack() const {
  std::vector<Event> out(size_);
  if (size_) decode(0, size_, out.data());
  return out;
}

size_t PackedEvents::memory_bytes() const {
  size_t n = blocks_.capacity() * sizeof(uint64_t) + arenas_.capacity() * sizeof(arenas_[0]);
  for (const auto& a : arenas_) n += a.size();
  return n;
}

PackedEvents PackedEvents::pack(const Event* events, size_t n) {
  PackedEventsBuilder b;
  b.append(events, n);
  return b.finish();
}

namespace {

// Appends a packed block to `p`'s last arena, or a new one when it is full.
void push_block(std::vector<std::vector<uint8_t>>& arenas, std::vector<uint64_t>& blocks,
                const Event* events, size_t n) {
  if (arenas.empty() || arenas.back().capacity() - arenas.back().size() < kMaxBlockBytes) {
    arenas.emplace_back().reserve(kArenaBytes);
    // Every byte is written once, into fresh memory: the pages populated in one
    // call (Note [Tables populated at once]), not for a store's first arena: a
    // small trace's store would take a whole one.
    if (arenas.size() > 1) populate_pages(arenas.back().data(), kArenaBytes);
  }
  const size_t at = detail::pack_block(events, n, arenas.back());
  blocks.push_back(static_cast<uint64_t>(arenas.size() - 1) << 40 | at);
}

}  // namespace

// ---- PackedEventsBuilder ----

PackedEventsBuilder::PackedEventsBuilder(uint64_t first)
    : head_room_((PackedEvents::kBlock - first % PackedEvents::kBlock) % PackedEvents::kBlock) {}

void PackedEventsBuilder::flush_staged() {
  push_block(out_.arenas_, out_.blocks_, staged_.get(), staged_n_);
  out_.size_ += staged_n_;
  staged_n_ = 0;
}

void PackedEventsBuilder::append(const Event* events, size_t n) {
  count_ += n;
  if (head_room_ > 0) {
    const size_t take = std::min(head_room_, n);
    head_.insert(head_.end(), events, events + take);
    head_room_ -= take;
    events += take;
    n -= take;
  }
  if (n == 0) return;
  // Whole blocks straight from `events`, the rest staged.
  while (staged_n_ == 0 && n >= PackedEvents::kBlock) {
    push_block(out_.arenas_, out_.blocks_, events, PackedEvents::kBlock);
    out_.size_ += PackedEvents::kBlock;
    events += PackedEvents::kBlock;
    n -= PackedEvents::kBlock;
  }
  if (n == 0) return;
  if (!staged_) staged_.reset(new Event[PackedEvents::kBlock]);
  while (n > 0) {
    const size_t take = std::min(PackedEvents::kBlock - staged_n_, n);
    std::copy(events, events + take, staged_.get() + staged_n_);
    staged_n_ += take;
    events += take;
    n -= take;
    if (staged_n_ == PackedEvents::kBlock) flush_staged();
  }
}

PackedEvents PackedEventsBuilder::finish() {
  std::vector<PackedEventsBuilder> one;
  one.push_back(std::move(*this));
  return join_packed(one);
}

PackedEvents join_packed(std::vector<PackedEventsBuilder>& parts) {
  constexpr size_t kBlock = PackedEvents::kBlock;
  PackedEvents out;
  std::vector<Event> carry;  // the block being filled across parts
  carry.reserve(kBlock);
  auto add = [&](const Event* e, size_t n) {
    while (n > 0) {
      const size_t take = std::min(kBlock - carry.size(), n);
      carry.insert(carry.end(), e, e + take);
      e += take;
      n -= take;
      if (carry.size() == kBlock) {
        push_block(out.arenas_, out.blocks_, carry.data(), kBlock);
        carry.clear();
      }
    }
  };
  size_t total = 0;
  for (PackedEventsBuilder& part : parts) {
    total += part.count_;
    add(part.head_.data(), part.head_.size());
    PackedEvents& p = part.out_;
    if (carry.empty()) {  // its blocks start on a block boundary: take them as they are
      const uint64_t base = out.arenas_.size();
      for (auto& a : p.arenas_) out.arenas_.push_back(std::move(a));
      for (uint64_t ref : p.blocks_) out.blocks_.push_back(ref + (base << 40));
    } else {  // a part that did not start where the one before ended
      Event buf[kBlock];
      for (size_t b = 0; b < p.blocks_.size(); ++b) add(buf, p.decode_block(b, buf));
    }
    add(part.staged_.get(), part.staged_n_);
    part = PackedEventsBuilder();
  }
  if (!carry.empty()) push_block(out.arenas_, out.blocks_, carry.data(), carry.size());
  out.size_ = total;
  for (auto& a : out.arenas_) {
    if (a.capacity() - a.size() > kArenaBytes / 8) a.shrink_to_fit();
  }
  out.blocks_.shrink_to_fit();
  return out;
}

}  // namespace hookscope::trace
