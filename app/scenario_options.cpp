#include "scenario_options.h"

#include <fmt/format.h>

namespace hookscope::app {

using scenarios::OptionUse;
using scenarios::ScenarioOption;

void add_scenario_options(CLI::App* app, scenarios::ScenarioArgs& args, OptionUse use) {
  for (const ScenarioOption& o : scenarios::scenario_options()) {
    const bool child = (o.use & scenarios::kUseChild) != 0;
    if (!(o.use & use) && !(child && use == scenarios::kUseRecord)) continue;
    CLI::Option* opt = std::visit(
        [&](auto member) { return app->add_option(std::string(o.flag), args.*member, std::string(o.help)); },
        o.field);
    // --help shows what is accepted: {a,b,c} or [min - max].
    const std::string accepted =
        !o.choices.empty() ? fmt::format("{{{}}}", fmt::join(o.choices, ","))
        : o.min < o.max    ? fmt::format("[{} - {}]", o.min, o.max)
                           : "";
    opt->check(CLI::Validator([&o](std::string& value) { return scenarios::check_value(o, value); },
                              accepted));
    if (child) opt->group("");  // hidden from --help
  }
}

CLI::Validator scenario_name_check(bool ddp_only) {
  return CLI::IsMember(scenarios::scenario_names(ddp_only));
}

std::string scenario_help(const std::string& lead, bool ddp_only) {
  std::string out = lead + ":";
  for (const scenarios::Scenario& s : scenarios::all_scenarios()) {
    if (ddp_only && !s.ddp()) continue;
    out += fmt::format("\n  {:<17} {}", s.name, s.help);
  }
  return out;
}

}  // namespace hookscope::app
