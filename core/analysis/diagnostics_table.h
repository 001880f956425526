#pragma once
// The findings of a model held compactly, for the GUI. See Note [Compact findings].

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"

namespace hookscope::analysis {

// Note [Compact findings]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A trace can hold a million findings (bench/make_scale_trace's 100M events have
// 1.1M: every hook of a destroyed owner leaks and fires stale). As Finding
// objects, each with its message and evidence on the heap, they took ~400
// bytes apiece: 440 MiB of the GUI's peak RSS. The GUI keeps a FindingTable:
// what it counts, groups, filters and sorts by in a 64-byte FindingRow, and
// each finding's message, detail and evidence zstd-compressed in blocks of
// kBlockFindings in the order diagnose made them (about 20 bytes a finding).
// table[k] unpacks a whole Finding when a row is shown (its block, the last
// few blocks kept). diagnose_table() yields exactly diagnose()'s findings in
// the same order (tests compare them field by field); the CLI keeps
// diagnose(), so its output does not depend on this.

struct FindingRow {  // a Finding's fixed fields (diagnostics.h has their meaning)
  size_t at = 0;
  size_t count = 1;
  uint64_t node = 0;
  uint64_t key = 0;
  FunctionIndex function = kNoIndex;
  OwnerIndex owner = kNoIndex;
  uint32_t owner_id = 0;
  int32_t rank = -1;
  uint32_t source = 0;
  uint32_t seq = 0;  // the order diagnose made it in: where its text is
  FindingKind kind = FindingKind::kLeakedHook;
  Severity severity = Severity::kError;
};

class FindingTable {
 public:
  static constexpr size_t kBlockFindings = 256;

  FindingTable();
  ~FindingTable();
  FindingTable(FindingTable&&) noexcept;
  FindingTable& operator=(FindingTable&&) noexcept;
  FindingTable(const FindingTable&) = delete;
  FindingTable& operator=(const FindingTable&) = delete;

  // Appends a finding (in the order diagnose makes them); then finish() once.
  void add(Finding f);
  // Orders the rows by (at, kind), ties in the order added: diagnose()'s order.
  void finish();

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  void clear();
  const FindingRow& row(size_t k) const { return rows_[k]; }
  const std::vector<FindingRow>& rows() const { return rows_; }
  auto begin() const { return rows_.begin(); }  // the rows
  auto end() const { return rows_.end(); }
  // The whole k-th finding, message, detail and evidence unpacked. Safe from
  // several threads at once.
  Finding operator[](size_t k) const;
  std::vector<Finding> to_vector() const;
  // Heap bytes held (rows, packed text, the blocks kept unpacked).
  size_t memory_bytes() const;

 private:
  struct Cache;
  void flush();
  Finding unpack(const FindingRow& row) const;

  std::vector<FindingRow> rows_;
  std::vector<uint64_t> block_start_;  // offsets in packed_ of each full block, then the end
  std::vector<char> packed_;           // the compressed blocks, back to back
  std::string open_;                   // the raw text of the block being filled
  std::unique_ptr<Cache> cache_;
};

// diagnose(), into a FindingTable (Note [Compact findings]).
FindingTable diagnose_table(const Model& model);

size_t findings_memory_bytes(const FindingTable& findings);
std::vector<FindingGroup> group_findings(const FindingTable& findings);
FindingCounts count_findings(const FindingTable& findings);

}  // namespace hookscope::analysis
