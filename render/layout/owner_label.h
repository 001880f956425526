#pragma once
// What the graph's owner legend says about an owner. No ImGui.

#include <cstddef>
#include <string>
#include <string_view>

#include "analysis/model.h"

namespace hookscope::render {

// Note [Owner legend labels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Chips carry a two-character tag (GraphScene::owner_tag: "R1", "ch", "P7");
// the legend says what the owner is, as far as the trace knows, shortened
// when long:
//   Reducer            its tag, "R1" (the chips' and the README's name)
//   module (bridge)    "module encoder.0", a long path cut at the front to
//                      its last components: "module …layers.3.attn"
//   call site          "prog.py:12" (where a user hook was registered), a
//                      long file name cut in the middle
//   retain_grad        "retain_grad"
//   anything else      its label ("C++ hooks" for the bridge's "c++ hooks")
// Unlabelled owners read "owner #id". The tooltip keeps the full name.
std::string owner_legend_label(const analysis::Model& model, analysis::OwnerIndex owner, std::string_view tag,
                               size_t max_chars = 28);

}  // namespace hookscope::render
