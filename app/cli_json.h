#pragma once
// The CLI verbs' JSON output, in one place: how a document is written out
// (Note [Untrusted text]) and the parts several verbs print alike.

#include <nlohmann/json.hpp>

#include <string>

#include "analysis/diff.h"

namespace hookscope::cli {

// Note [Untrusted text]: trace strings are not always valid UTF-8; every JSON
// dump replaces invalid bytes, never throws. `indent` -1: one line.
std::string dump_json(const nlohmann::json& j, int indent);

// What `diff` and `diff --at` print for a ModelDiff: per Function its hooks
// on either side and whether they differ, then the findings only one side has.
nlohmann::json diff_json(const analysis::ModelDiff& d);

}  // namespace hookscope::cli
