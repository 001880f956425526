// Note [Module hook anchors]: module hooks on the Nodes of their module.

#include "analysis/module_anchors.h"

#include <algorithm>
#include <tuple>

namespace hookscope::analysis {

std::vector<ModuleHookAnchor> module_hook_anchors(const Model& m) {
  std::vector<ModuleHookAnchor> out;
  // Announced Functions by (source, rank, creation): only built when a
  // forward hook fired (most traces have none).
  std::vector<std::tuple<uint32_t, uint16_t, EventIndex, FunctionIndex>> created;
  auto by_creation = [&] {
    if (!created.empty()) return;
    created.reserve(m.functions().size());
    for (FunctionIndex f = 0; f < m.functions().size(); ++f) {
      const FunctionInfo& info = m.functions()[f];
      if (info.announced) created.emplace_back(info.source, info.rank, info.created_at, f);
    }
    std::sort(created.begin(), created.end());
  };
  for (HookIndex h : m.detached_hooks()) {
    const HookInfo& hook = m.hooks()[h];
    if (!trace::is_module_hook(hook.kind)) continue;
    const bool forward = hook.kind == trace::HookKind::kModuleForward;
    const bool forward_pre = hook.kind == trace::HookKind::kModuleForwardPre;
    if (forward || forward_pre) by_creation();
    for (EventIndex fire : m.fires(h)) {
      const uint32_t source = m.source(fire);
      if (!forward && !forward_pre) {
        const trace::Event e = m.event(fire);
        if (e.node == 0) continue;
        const FunctionIndex f = m.find_function(source, e.node);
        if (f != kNoIndex) out.push_back({f, h});
        continue;
      }
      const auto key = std::make_tuple(source, hook.rank, fire, FunctionIndex{0});
      auto it = std::lower_bound(created.begin(), created.end(), key);
      if (forward) {  // the last one created before the fire
        if (it == created.begin()) continue;
        --it;
      }
      if (it == created.end() || std::get<0>(*it) != source || std::get<1>(*it) != hook.rank) continue;
      out.push_back({std::get<3>(*it), h});
    }
  }
  std::sort(out.begin(), out.end(), [](const ModuleHookAnchor& a, const ModuleHookAnchor& b) {
    return std::tie(a.function, a.hook) < std::tie(b.function, b.hook);
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace hookscope::analysis
