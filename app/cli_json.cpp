#include "cli_json.h"

#include "analysis/diagnostics.h"

namespace hookscope::cli {

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

nlohmann::json findings_json(const std::vector<analysis::Finding>& v) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : v) arr.push_back({{"kind", analysis::to_string(f.kind)}, {"message", f.message}});
  return arr;
}

}  // namespace

nlohmann::json diff_json(const analysis::ModelDiff& d) {
  nlohmann::json j;
  j["functions"] = nlohmann::json::array();
  for (const auto& f : d.functions) {
    j["functions"].push_back(
        {{"function", f.function}, {"hooks_a", f.total_a()}, {"hooks_b", f.total_b()}, {"differs", f.differs()}});
  }
  j["only_a"] = findings_json(d.only_a);
  j["only_b"] = findings_json(d.only_b);
  return j;
}

}  // namespace hookscope::cli
