#pragma once
// Event indices on the command line (hookscope-cli's --at, --event, --from,
// --to; the GUI's --at), read the same way by both programs. See Note
// [Event index arguments].

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// Declared only: CLI11's header is ~1 s of every compile that includes it,
// and this header reaches every panel through app.h (app_args.h); the
// option parsers (index_args.cpp, app_args.cpp, cli_main.cpp) include it.
namespace CLI {
class Validator;
}  // namespace CLI

namespace hookscope::cli {

// Note [Event index arguments]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An event index is kept as typed and checked here, not read into a `long`
// by CLI11: CLI11's NonNegativeNumber printed the allowed range of `state
// --at abc` as a 309-digit number, and `--at 99999999999999999999999` was
// read as 9223372036854775807 and echoed so. The check while parsing
// (event_index_check) says what is wrong with the text: "not a number",
// "below 0"; once the trace is loaded, EventIndexArg::in() says whether it
// names one of its events ("the last event is #N"), quoting the text as
// typed. An index too large for 64 bits is past the end of every trace.
struct EventIndexArg {
  std::string text;  // as typed; "" when the option was not given
  bool given() const { return !text.empty(); }
  // The index; UINT64_MAX when it does not fit 64 bits. Call after event_index_check passed.
  uint64_t value() const;
  // The index when `num_events` events hold it; else throws
  // std::invalid_argument naming `option`, the text and the last event.
  size_t in(size_t num_events, std::string_view option) const;
};

// What is wrong with `text` as an event index ("" when nothing is).
std::string event_index_problem(std::string_view text);

// A CLI11 check of event_index_problem: the parse fails with its words.
CLI::Validator event_index_check();

}  // namespace hookscope::cli
