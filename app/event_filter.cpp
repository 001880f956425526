#include "event_filter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace hookscope::app {

using trace::EventKind;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_ci(std::string_view haystack, std::string_view needle_lower) {
  if (needle_lower.empty()) return true;
  if (needle_lower.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle_lower.size() <= haystack.size(); ++i) {
    size_t j = 0;
    while (j < needle_lower.size() &&
           std::tolower(static_cast<unsigned char>(haystack[i + j])) == needle_lower[j]) {
      ++j;
    }
    if (j == needle_lower.size()) return true;
  }
  return false;
}

// `pattern` is lower-case; a trailing '*' makes it a prefix.
bool name_matches(std::string_view name, std::string_view pattern) {
  const std::string n = lower(name);
  if (!pattern.empty() && pattern.back() == '*') {
    return n.starts_with(pattern.substr(0, pattern.size() - 1));
  }
  return n == pattern;
}

std::optional<uint64_t> parse_number(std::string_view s) {
  if (!s.empty() && s.front() == '#') s.remove_prefix(1);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

struct FieldName {
  std::string_view name;
  FilterField field;
};
constexpr FieldName kFields[] = {
    {"kind", FilterField::kKind},   {"owner", FilterField::kOwner}, {"fn", FilterField::kFunction},
    {"function", FilterField::kFunction}, {"rank", FilterField::kRank}, {"key", FilterField::kKey},
    {"hook", FilterField::kHook},
};

std::vector<std::string> split_alternatives(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = value.find(',', start);
    const size_t end = comma == std::string::npos ? value.size() : comma;
    if (end > start) out.push_back(value.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string event_kind_names() {
  std::string out;
  for (int k = 1; k < static_cast<int>(EventKind::kCount); ++k) {
    const auto name = trace::to_string(static_cast<EventKind>(k));
    if (name == "unknown") continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

bool event_names_function(EventKind k) {
  switch (k) {
    case EventKind::kNodeCreated:
    case EventKind::kNodeEdge:
    case EventKind::kNodeLabel:
    case EventKind::kNodeReleased:
    case EventKind::kHookAdded:
    case EventKind::kHookFired:
    case EventKind::kHookRemoved:
    case EventKind::kHookRemoveFailed:
    case EventKind::kApplyBegin:
    case EventKind::kApplyEnd:
    case EventKind::kAutogradHookNoop:
    case EventKind::kMarkReady:
    case EventKind::kMarkedTwice:
    case EventKind::kUnusedParameter:
      return true;
    default:
      return false;
  }
}

EventFilter EventFilter::parse(std::string_view text, FilterParseError* error) {
  EventFilter filter;
  auto fail = [&](size_t pos, std::string message) {
    if (error) *error = {std::move(message), pos};
    return EventFilter{};
  };
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const size_t term_start = i;
    FilterTerm term;
    if (text[i] == '-') {
      term.negate = true;
      ++i;
    }
    // A field name is letters up to ':'; anything else is a text word.
    size_t j = i;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
    std::string_view field_name;
    if (j < text.size() && text[j] == ':' && j > i) {
      field_name = text.substr(i, j - i);
      const std::string f = lower(field_name);
      auto it = std::find_if(std::begin(kFields), std::end(kFields),
                             [&](const FieldName& n) { return n.name == f; });
      if (it == std::end(kFields)) {
        return fail(i, fmt::format("unknown filter field '{}:' (fields: kind: owner: fn: rank: "
                                   "key: hook:, or a bare word to search the text)",
                                   field_name));
      }
      term.field = it->field;
      i = j + 1;
    }
    std::string value;
    if (i < text.size() && text[i] == '"') {
      const size_t close = text.find('"', i + 1);
      if (close == std::string_view::npos) return fail(i, "unterminated quote: add a closing \"");
      value = std::string(text.substr(i + 1, close - i - 1));
      i = close + 1;
      if (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) {
        return fail(i, "put a space after a quoted value");
      }
    } else {
      size_t end = i;
      while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
      value = std::string(text.substr(i, end - i));
      i = end;
    }
    if (value.empty()) {
      return fail(term_start, field_name.empty()
                                  ? std::string("a lone '-' negates nothing")
                                  : fmt::format("'{}:' needs a value", field_name));
    }
    term.values = term.field == FilterField::kText ? std::vector<std::string>{lower(value)}
                                                   : split_alternatives(lower(value));
    for (const std::string& v : term.values) {
      if (term.field == FilterField::kRank && !parse_number(v)) {
        return fail(term_start, fmt::format("'{}:{}' needs a number", field_name, v));
      }
      if (term.field == FilterField::kKey && !trace::parse_hook_key(v)) {
        return fail(term_start, fmt::format("'{}:{}' needs a hook key: 9.0 (serial.slot) or a number",
                                            field_name, v));
      }
      if (term.field == FilterField::kKind) {
        const bool prefix = v.back() == '*';
        bool any = false;
        for (int k = 1; k < static_cast<int>(EventKind::kCount) && !any; ++k) {
          const auto name = trace::to_string(static_cast<EventKind>(k));
          any = name != "unknown" && name_matches(name, v);
        }
        if (!any) {
          return fail(term_start, fmt::format("no event kind {} '{}' (kinds: {})",
                                              prefix ? "starts with" : "is", v, event_kind_names()));
        }
      }
      if (term.field == FilterField::kHook) {
        bool any = false;
        for (int k = 0; k < trace::kNumHookKinds && !any; ++k) {
          any = name_matches(trace::to_string(static_cast<trace::HookKind>(k)), v);
        }
        if (!any) {
          return fail(term_start, fmt::format("no hook kind '{}' (kinds: tensor_pre, retain_grad, "
                                              "pre, post, post_accumulate)",
                                              v));
        }
      }
    }
    if (term.values.empty()) return fail(term_start, "empty value");
    filter.terms_.push_back(std::move(term));
  }
  if (error) *error = {};
  return filter;
}

EventFilter::Bound EventFilter::bind(const analysis::Model& model) const {
  Bound b;
  b.model_ = &model;
  for (const FilterTerm& t : terms_) {
    Bound::Term bt;
    bt.field = t.field;
    bt.negate = t.negate;
    switch (t.field) {
      case FilterField::kText:
        bt.texts = t.values;
        break;
      case FilterField::kKind:
        for (int k = 1; k < static_cast<int>(EventKind::kCount); ++k) {
          for (const auto& v : t.values) {
            if (name_matches(trace::to_string(static_cast<EventKind>(k)), v)) bt.kinds.set(k);
          }
        }
        break;
      case FilterField::kHook:
        for (int k = 0; k < trace::kNumHookKinds; ++k) {
          for (const auto& v : t.values) {
            if (name_matches(trace::to_string(static_cast<trace::HookKind>(k)), v)) {
              bt.hook_kinds |= static_cast<uint16_t>(1u << k);
            }
          }
        }
        break;
      case FilterField::kOwner: {
        bt.owners.assign(model.owners().size(), 0);
        for (size_t o = 0; o < model.owners().size(); ++o) {
          const std::string name = model.owner_name(static_cast<analysis::OwnerIndex>(o));
          for (const auto& v : t.values) {
            const auto id = parse_number(v);
            if (name_matches(name, v) || (id && *id == model.owners()[o].id)) bt.owners[o] = 1;
          }
        }
        break;
      }
      case FilterField::kFunction: {
        bt.functions.assign(model.functions().size(), 0);
        for (size_t f = 0; f < model.functions().size(); ++f) {
          const std::string name = model.function_name(static_cast<analysis::FunctionIndex>(f));
          for (const auto& v : t.values) {
            const bool by_id = v.front() == '#';
            const auto id = by_id ? parse_number(v) : std::nullopt;
            if (by_id ? (id && *id == model.functions()[f].id) : contains_ci(name, v)) {
              bt.functions[f] = 1;
            }
          }
        }
        break;
      }
      case FilterField::kRank:
        for (const auto& v : t.values) bt.numbers.push_back(*parse_number(v));
        break;
      case FilterField::kKey:
        for (const auto& v : t.values) bt.numbers.push_back(*trace::parse_hook_key(v));
        break;
    }
    b.terms_.push_back(std::move(bt));
  }
  return b;
}

bool EventFilter::Bound::matches(size_t index) const {
  if (terms_.empty()) return true;
  const trace::Event e = model_->event(index);
  std::string description;  // made on first need
  for (const Term& t : terms_) {
    bool hit = false;
    switch (t.field) {
      case FilterField::kKind:
        hit = t.kinds.test(static_cast<size_t>(e.kind) % 64);
        break;
      case FilterField::kHook:
        hit = trace::is_hook_event(e.kind) &&
              (t.hook_kinds >> static_cast<uint8_t>(trace::shown_hook_kind(e)) & 1u) != 0;
        break;
      case FilterField::kRank:
        hit = std::find(t.numbers.begin(), t.numbers.end(), e.rank) != t.numbers.end();
        break;
      case FilterField::kKey:
        hit = trace::is_hook_event(e.kind) &&
              std::find(t.numbers.begin(), t.numbers.end(), e.key) != t.numbers.end();
        break;
      case FilterField::kOwner: {
        const uint32_t source = model_->source(index);
        for (uint32_t id : {e.owner, trace::remover_of(e)}) {
          if (id == 0) continue;
          const analysis::OwnerIndex o = model_->find_owner(source, id);
          if (o != analysis::kNoIndex && o < t.owners.size() && t.owners[o]) hit = true;
        }
        break;
      }
      case FilterField::kFunction: {
        if (!event_names_function(e.kind) || e.node == 0) break;
        const uint32_t source = model_->source(index);
        const analysis::FunctionIndex f = model_->find_function(source, e.node);
        hit = f != analysis::kNoIndex && f < t.functions.size() && t.functions[f];
        if (!hit && e.kind == EventKind::kNodeEdge) {
          const analysis::FunctionIndex to = model_->find_function(source, e.as<trace::ev::NodeEdge>().next);
          hit = to != analysis::kNoIndex && to < t.functions.size() && t.functions[to];
        }
        break;
      }
      case FilterField::kText:
        if (description.empty()) description = model_->describe(index);
        hit = contains_ci(description, t.texts.front());
        break;
    }
    if (hit == t.negate) return false;
  }
  return true;
}

std::vector<analysis::EventIndex> EventFilter::select(const analysis::Model& model, size_t from,
                                                      size_t to, const std::atomic<bool>* cancel) const {
  std::vector<analysis::EventIndex> out;
  const Bound b = bind(model);
  to = std::min(to, model.num_events());
  for (size_t i = from; i < to; ++i) {
    if (cancel && (i & 0xFFFF) == 0 && cancel->load(std::memory_order_relaxed)) return out;
    if (b.matches(i)) out.push_back(static_cast<analysis::EventIndex>(i));
  }
  return out;
}

}  // namespace hookscope::app
