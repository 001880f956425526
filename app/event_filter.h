#pragma once
// The Events panel's filter expression, e.g.
//   kind:hook_fire owner:"Reducer 2" fn:AccumulateGrad rank:1
// No GUI code: parsed and matched against the analysis model, tested headless.
//
// Note [Filter expressions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Terms are separated by spaces and all must hold. A term is `field:value`
// or a bare word; values with spaces are quoted ("Reducer 2"). A leading
// `-` negates a term. A value may list alternatives with commas
// (kind:hook_add,hook_remove: either).
//   kind:NAME    event kind (hook_fire, reducer_destroyed, ...); NAME* is a prefix
//   owner:NAME   the owner's name ("Reducer 2", case-insensitive) or raw id;
//                NAME* is a prefix. Matches the hook's owner or the remover.
//   fn:TEXT      the Function's name contains TEXT (AccumulateGrad, 0.weight),
//                or #ID for a raw node id
//   rank:N       the rank
//   key:K        a hook key, as shown (9.0, Note [Hook keys in text]) or raw
//   hook:KIND    the hook kind (pre, post, tensor_pre, retain_grad, post_accumulate)
//   WORD         the event's one-line description contains WORD (case-insensitive)
// Matching is case-insensitive throughout.

#include <atomic>
#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model.h"

namespace hookscope::app {

enum class FilterField : uint8_t { kText, kKind, kOwner, kFunction, kRank, kKey, kHook };

struct FilterTerm {
  FilterField field = FilterField::kText;
  bool negate = false;
  std::vector<std::string> values;  // alternatives, lower-cased
};

struct FilterParseError {
  std::string message;  // says what was wrong and what is accepted
  size_t position = 0;  // byte offset in the expression
};

class EventFilter {
 public:
  // Throws nothing: a bad expression returns the error.
  static EventFilter parse(std::string_view expression, FilterParseError* error);
  bool empty() const { return terms_.empty(); }
  const std::vector<FilterTerm>& terms() const { return terms_; }

  // The filter resolved against one model (names to indices), for matching.
  class Bound {
   public:
    bool matches(size_t event) const;

   private:
    friend class EventFilter;
    struct Term {
      FilterField field = FilterField::kText;
      bool negate = false;
      std::vector<std::string> texts;  // kText: lower-cased words
      std::bitset<64> kinds;
      std::vector<uint8_t> owners;     // by OwnerIndex
      std::vector<uint8_t> functions;  // by FunctionIndex
      std::vector<uint64_t> numbers;
      uint16_t hook_kinds = 0;         // bit per trace::HookKind (10 of them)
    };
    const analysis::Model* model_ = nullptr;
    std::vector<Term> terms_;
  };
  // Names were checked by parse(); binding cannot fail.
  Bound bind(const analysis::Model& model) const;

  // Every matching event in [from, to), in order. A set `cancel` stops it
  // early (the result is then incomplete; the caller drops it).
  std::vector<analysis::EventIndex> select(const analysis::Model& model, size_t from, size_t to,
                                           const std::atomic<bool>* cancel = nullptr) const;

 private:
  std::vector<FilterTerm> terms_;
};

// Whether events of `kind` name a Function in their `node` field.
bool event_names_function(trace::EventKind kind);

// "hook_fire, hook_add, ..." for messages and the help window.
std::string event_kind_names();

}  // namespace hookscope::app
