#pragma once
// Process-wide string table: names and labels are interned once and events
// carry their ids (Note [Event record]).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hookscope::trace {

// Returns the id of `s`, adding it if new. Id 0 is the empty string. Thread-safe.
uint32_t intern(std::string_view s);

// The string with id `id`; throws std::out_of_range for an id never handed out.
std::string lookup(uint32_t id);

// Strings with ids in [first, first + n), for writers that ship the table
// incrementally. Returns fewer when fewer exist.
std::vector<std::string> strings_since(uint32_t first, uint32_t max_count = UINT32_MAX);

// Number of ids handed out so far (including the empty string).
uint32_t string_count();

}  // namespace hookscope::trace
