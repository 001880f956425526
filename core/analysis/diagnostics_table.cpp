// FindingTable: findings in compact rows and zstd-compressed text (Note [Compact findings]).

#include "analysis/diagnostics_table.h"

#include <zstd.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace hookscope::analysis {

namespace {

constexpr int kLevel = 1;        // zstd's fastest ratio-keeping level: the text is repetitive
constexpr size_t kKeptBlocks = 8;  // unpacked blocks kept (a panel shows a few dozen rows)

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads what put_varint wrote; the text is ours, so running off its end is a bug.
uint64_t get_varint(const std::string& in, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; pos < in.size() && shift < 64; shift += 7) {
    const auto byte = static_cast<uint8_t>(in[pos++]);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  throw std::logic_error("FindingTable: a block's text ends inside a number");
}

void put_text(std::string& out, const std::string& s) {
  put_varint(out, s.size());
  out += s;
}

std::string get_text(const std::string& in, size_t& pos) {
  const uint64_t n = get_varint(in, pos);
  if (n > in.size() - pos) throw std::logic_error("FindingTable: a block's text ends inside a message");
  std::string s = in.substr(pos, n);
  pos += n;
  return s;
}

// A block unpacked, with where each of its findings starts: a row reads its
// own finding, not every one before it in the block (the Diagnostics panel
// unpacks up to 2000 rows a frame; skipping from the block's start took 17.7%
// of its samples in get_varint).
struct UnpackedBlock {
  std::string text;
  std::vector<uint32_t> start;  // per finding of the block: its offset in text
};

// Where each finding of a block's text starts.
std::vector<uint32_t> finding_starts(const std::string& text) {
  std::vector<uint32_t> start;
  size_t pos = 0;
  while (pos < text.size()) {
    start.push_back(static_cast<uint32_t>(pos));
    pos += get_varint(text, pos);  // message
    pos += get_varint(text, pos);  // detail
    for (uint64_t n = get_varint(text, pos); n > 0; --n) get_varint(text, pos);
  }
  return start;
}

}  // namespace

struct FindingTable::Cache {
  std::mutex mutex;
  std::vector<std::pair<size_t, std::shared_ptr<const UnpackedBlock>>> blocks;  // most recent last
  ZSTD_CCtx* cctx = nullptr;  // while adding
  ~Cache() { ZSTD_freeCCtx(cctx); }
};

FindingTable::FindingTable() : cache_(std::make_unique<Cache>()) {}
FindingTable::~FindingTable() = default;
FindingTable::FindingTable(FindingTable&&) noexcept = default;
FindingTable& FindingTable::operator=(FindingTable&&) noexcept = default;

void FindingTable::clear() { *this = FindingTable(); }

void FindingTable::add(Finding f) {
  if (!cache_) cache_ = std::make_unique<Cache>();  // a moved-from table used again
  FindingRow r;
  r.at = f.at;
  r.count = f.count;
  r.node = f.node;
  r.key = f.key;
  r.function = f.function;
  r.owner = f.owner;
  r.owner_id = f.owner_id;
  r.rank = f.rank;
  r.source = f.source;
  r.seq = static_cast<uint32_t>(rows_.size());
  r.kind = f.kind;
  r.severity = f.severity;
  if (rows_.size() >= UINT32_MAX) throw std::length_error("FindingTable: more than 4G findings");
  rows_.push_back(r);
  put_text(open_, f.message);
  put_text(open_, f.detail);
  put_varint(open_, f.events.size());
  for (size_t e : f.events) put_varint(open_, e);
  if (rows_.size() % kBlockFindings == 0) flush();
}

void FindingTable::flush() {
  if (open_.empty()) return;
  if (!cache_->cctx) cache_->cctx = ZSTD_createCCtx();
  if (!cache_->cctx) throw std::bad_alloc();
  if (block_start_.empty()) block_start_.push_back(0);
  const size_t at = packed_.size();
  packed_.resize(at + ZSTD_compressBound(open_.size()));
  const size_t n = ZSTD_compressCCtx(cache_->cctx, packed_.data() + at, packed_.size() - at, open_.data(),
                                     open_.size(), kLevel);
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("FindingTable: zstd: ") + ZSTD_getErrorName(n));
  packed_.resize(at + n);
  block_start_.push_back(packed_.size());
  open_.clear();
}

void FindingTable::finish() {
  flush();
  ZSTD_freeCCtx(cache_->cctx);
  cache_->cctx = nullptr;
  packed_.shrink_to_fit();
  rows_.shrink_to_fit();
  std::string().swap(open_);
  // (at, kind, seq) is diagnose()'s stable order of (at, kind), with no
  // buffer of half the rows as std::stable_sort takes.
  std::sort(rows_.begin(), rows_.end(), [](const FindingRow& a, const FindingRow& b) {
    return std::tie(a.at, a.kind, a.seq) < std::tie(b.at, b.kind, b.seq);
  });
}

Finding FindingTable::unpack(const FindingRow& row) const {
  const size_t block = row.seq / kBlockFindings;
  std::shared_ptr<const UnpackedBlock> unpacked;
  if (block + 1 >= block_start_.size()) {  // the block still being filled (diagnose adding): not kept
    unpacked = std::make_shared<const UnpackedBlock>(UnpackedBlock{open_, finding_starts(open_)});
  } else {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto& kept = cache_->blocks;
    auto it = std::find_if(kept.begin(), kept.end(), [&](const auto& b) { return b.first == block; });
    if (it != kept.end()) {
      unpacked = it->second;
      kept.erase(it);
    } else {
      const char* src = packed_.data() + block_start_[block];
      const size_t n = block_start_[block + 1] - block_start_[block];
      const unsigned long long size = ZSTD_getFrameContentSize(src, n);
      if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
        throw std::logic_error("FindingTable: a block lost its size");
      }
      std::string raw(size, '\0');
      const size_t got = ZSTD_decompress(raw.data(), raw.size(), src, n);
      if (ZSTD_isError(got) || got != size) throw std::logic_error("FindingTable: a block does not unpack");
      std::vector<uint32_t> start = finding_starts(raw);
      unpacked = std::make_shared<const UnpackedBlock>(UnpackedBlock{std::move(raw), std::move(start)});
      if (kept.size() >= kKeptBlocks) kept.erase(kept.begin());
    }
    kept.emplace_back(block, unpacked);
  }
  const size_t k = row.seq % kBlockFindings;
  if (k >= unpacked->start.size()) throw std::logic_error("FindingTable: a block holds fewer findings than its rows");
  const std::string* text = &unpacked->text;
  size_t pos = unpacked->start[k];
  Finding f;
  f.kind = row.kind;
  f.severity = row.severity;
  f.message = get_text(*text, pos);
  f.detail = get_text(*text, pos);
  f.events.resize(get_varint(*text, pos));
  for (size_t& e : f.events) e = get_varint(*text, pos);
  f.at = row.at;
  f.count = row.count;
  f.function = row.function;
  f.node = row.node;
  f.owner = row.owner;
  f.owner_id = row.owner_id;
  f.key = row.key;
  f.rank = row.rank;
  f.source = row.source;
  return f;
}

Finding FindingTable::operator[](size_t k) const {
  if (k >= rows_.size()) throw std::out_of_range("FindingTable: no such finding");
  return unpack(rows_[k]);
}

std::vector<Finding> FindingTable::to_vector() const {
  // Unpacked in the order added (a block once), placed in the rows' order.
  std::vector<uint32_t> row_of(rows_.size());
  for (size_t k = 0; k < rows_.size(); ++k) row_of[rows_[k].seq] = static_cast<uint32_t>(k);
  std::vector<Finding> out(rows_.size());
  for (uint32_t k : row_of) out[k] = unpack(rows_[k]);
  return out;
}

size_t FindingTable::memory_bytes() const {
  size_t bytes = rows_.capacity() * sizeof(FindingRow) + block_start_.capacity() * sizeof(uint64_t) +
                 packed_.capacity() + (open_.capacity() > 15 ? open_.capacity() + 1 : 0);
  if (cache_) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    for (const auto& b : cache_->blocks) bytes += b.second->text.capacity() + b.second->start.capacity() * sizeof(uint32_t);
  }
  return bytes;
}

size_t findings_memory_bytes(const FindingTable& findings) { return findings.memory_bytes(); }

}  // namespace hookscope::analysis
