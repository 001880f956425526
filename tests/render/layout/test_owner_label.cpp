// The graph legend's owner labels (Note [Owner legend labels]): what the
// owner is, as the torch bridge and the runtime name owners, shortened when long.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/model.h"
#include "render/layout/graph_scene.h"
#include "render/layout/owner_label.h"

using namespace hookscope;
using trace::EventKind;
using trace::OwnerKind;

namespace {

// One kOwnerCreated per (kind, label), owner ids 1, 2, ...
analysis::Model owners(const std::vector<std::pair<OwnerKind, std::string>>& list) {
  trace::TraceData d;
  d.header.hookscope_version = "test";
  d.header.world_size = 1;
  d.strings = {""};
  for (const auto& [kind, label] : list) {
    trace::Event e;
    e.t_ns = 1000 * (d.events.size() + 1);
    e.kind = EventKind::kOwnerCreated;
    e.owner = static_cast<uint32_t>(d.events.size() + 1);
    e.sub = static_cast<uint8_t>(kind);
    if (!label.empty()) {
      e.arg = d.strings.size();
      d.strings.push_back(label);
    }
    d.events.push_back(e);
  }
  return analysis::Model(std::move(d));
}

}  // namespace

TEST_CASE("owner legend: the torch bridge's owners say what they are, not their two-letter tags") {
  const analysis::Model m = owners({{OwnerKind::kUser, "c++ hooks"},
                                    {OwnerKind::kModule, "(root)"},
                                    {OwnerKind::kModule, "encoder.0"},
                                    {OwnerKind::kCallSite, "prog.py:18"},
                                    {OwnerKind::kRetainGrad, "retain_grad"},
                                    {OwnerKind::kReducer, "Reducer 1"},
                                    {OwnerKind::kUser, "grad clipper"},
                                    {OwnerKind::kUser, ""}});
  REQUIRE(m.owners().size() == 8);
  const render::GraphScene scene(m);
  std::vector<std::string> tags, labels;
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
    tags.push_back(scene.owner_tag(o));
    labels.push_back(render::owner_legend_label(m, o, scene.owner_tag(o)));
  }
  // What the legend showed before: the chips' tags.
  CHECK(tags[0] == "ch");
  CHECK(tags[3] == "P18");
  CHECK(labels[0] == "C++ hooks");
  CHECK(labels[1] == "module (root)");
  CHECK(labels[2] == "module encoder.0");
  CHECK(labels[3] == "prog.py:18");
  CHECK(labels[4] == "retain_grad");
  CHECK(labels[5] == "R1");  // a Reducer keeps its tag: the chips' name, "R1 gen 0 destroyed"
  CHECK(labels[6] == "grad clipper");
  CHECK(labels[7].rfind("owner #", 0) == 0);
}

TEST_CASE("owner legend: long module paths keep their last components, long call sites their line") {
  const std::string path = "model.encoder.layers.11.attention.self.query";
  const std::string site = "a_very_long_training_script_name_for_the_run.py:1234";
  const analysis::Model m = owners({{OwnerKind::kModule, path},
                                    {OwnerKind::kCallSite, site},
                                    {OwnerKind::kUser, std::string(60, 'x')}});
  const std::string ellipsis = "\xe2\x80\xa6";
  auto chars = [&](const std::string& s) {  // on screen: the ellipsis is one
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  const std::string module = render::owner_legend_label(m, 0, "mo");
  CHECK(module.rfind("module " + ellipsis, 0) == 0);
  CHECK(module.size() >= 5);
  CHECK(module.find("self.query") != std::string::npos);
  CHECK(chars(module) <= 28);
  // whole components: what follows the ellipsis starts a component
  const std::string rest = module.substr(std::string("module ").size() + ellipsis.size());
  CHECK(path.size() > rest.size());
  CHECK(path[path.size() - rest.size() - 1] == '.');

  const std::string call = render::owner_legend_label(m, 1, "A1234");
  CHECK(chars(call) <= 28);
  CHECK(call.find(ellipsis) != std::string::npos);
  CHECK(call.rfind("a_very", 0) == 0);
  CHECK(call.substr(call.size() - 8) == ".py:1234");

  const std::string user = render::owner_legend_label(m, 2, "xx");
  CHECK(chars(user) == 28);
  CHECK(user.substr(user.size() - ellipsis.size()) == ellipsis);
  // short ones stay whole
  CHECK(render::owner_legend_label(m, 0, "mo", 80) == "module " + path);
}
