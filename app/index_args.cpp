// Note [Event index arguments]: one reading of event indices for the CLI and the GUI.
#include "index_args.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace hookscope::cli {

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string event_index_problem(std::string_view text) {
  if (text.empty()) return "an empty event index: give a number, 0 for the first event";
  if (all_digits(text)) return {};
  const bool negative = text[0] == '-' && all_digits(text.substr(1));
  if (negative) return fmt::format("'{}' is below 0: events are numbered from 0 (the first event is 0)", text);
  return fmt::format("'{}' is not a number: give an event index such as 0 or 1200 (digits only)", text);
}

CLI::Validator event_index_check() {
  return CLI::Validator([](std::string& text) { return event_index_problem(text); }, "EVENT", "event index");
}

uint64_t EventIndexArg::value() const {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) return UINT64_MAX;
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw std::invalid_argument(fmt::format("event index {}", event_index_problem(text)));
  }
  return v;
}

size_t EventIndexArg::in(size_t num_events, std::string_view option) const {
  if (const std::string problem = event_index_problem(text); !problem.empty()) {
    throw std::invalid_argument(fmt::format("{}: {}", option, problem));
  }
  const uint64_t v = value();
  if (num_events == 0) throw std::invalid_argument(fmt::format("{} {}: the trace has no events", option, text));
  if (v >= num_events) {
    throw std::invalid_argument(fmt::format("{} {}: no such event; the last event is #{} (the trace has events 0 to {})",
                                            option, text, num_events - 1, num_events - 1));
  }
  return static_cast<size_t>(v);
}

}  // namespace hookscope::cli
