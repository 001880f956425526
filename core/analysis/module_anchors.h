#pragma once
// Where the graph shows a module hook (Note [Module hook anchors]): module
// hooks sit on no Function (Note [Module hooks in traces]), but a user looks
// for them on the module's Nodes.

#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Module hook anchors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A module hook is anchored on the Functions it belongs to in the picture:
//  * full backward (pre) hooks, and the legacy backward hook: the Nodes
//    their fires name (the module's BackwardHookFunction Nodes, Note [Module
//    hooks]: where they run);
//  * forward hooks: per fire, the last Function created before it on the
//    same trace and rank (the module's output Node, the first of the
//    module's Nodes that backward runs);
//  * forward pre hooks: per fire, the first Function created after it there
//    (the first Node of the module's forward).
// A hook never fired has no anchor (nothing shows which Node is its module's).
struct ModuleHookAnchor {
  FunctionIndex function = kNoIndex;
  HookIndex hook = kNoIndex;
  friend bool operator==(const ModuleHookAnchor&, const ModuleHookAnchor&) = default;
};

// Every anchor, sorted by Function, then by hook; no duplicates.
std::vector<ModuleHookAnchor> module_hook_anchors(const Model& model);

}  // namespace hookscope::analysis
