// Reducers panel: every DDP Reducer at the current event — alive or
// destroyed (what its destructor removed, what it left behind), its current
// backward, buckets with their pending gradients, and the order in which
// parameters became ready. Destroyed Reducers stay listed, folded: after a
// failure they are the story (PR #21591). A Reducer replaced but alive
// (Note [Lingering owners]) says so in its colour, not "alive, backward N".
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "analysis/owner_status.h"
#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"

namespace hookscope::app {

namespace {

using render::palette;
using analysis::BucketStatus;
using analysis::kNever;
using analysis::kNoIndex;


constexpr uint32_t kPendingColor = render::rgba(92, 98, 110);
constexpr uint32_t kReadyColor = render::rgba(220, 170, 90);
constexpr uint32_t kReducedColor = render::rgba(110, 196, 120);
constexpr uint32_t kBucketFrame = render::rgba(20, 22, 26);

uint32_t bucket_color(BucketStatus s) {
  switch (s) {
    case BucketStatus::kPending: return kPendingColor;
    case BucketStatus::kReady: return kReadyColor;
    case BucketStatus::kReduced: return kReducedColor;
    case BucketStatus::kFailed: return palette().alarm;
  }
  return kPendingColor;
}

const char* bucket_words(BucketStatus s) {
  switch (s) {
    case BucketStatus::kPending: return "waiting for gradients";
    case BucketStatus::kReady: return "all gradients in, allreduce running";
    case BucketStatus::kReduced: return "allreduced";
    case BucketStatus::kFailed: return "allreduce failed (error, timeout or abort)";
  }
  return "?";
}

// What a person calls parameter `p`: its recorded name, else its
// AccumulateGrad's label ("0.weight [256, 784]"), else its index.
std::string parameter_name(const analysis::Model& m, const analysis::ReducerInfo& r, uint32_t p) {
  if (p < r.parameters.size()) {
    const analysis::ParameterInfo& info = r.parameters[p];
    if (info.name != 0) return m.str(info.name);
    if (info.accumulator < m.functions().size() && m.functions()[info.accumulator].label != 0) {
      return m.str(m.functions()[info.accumulator].label);
    }
  }
  return fmt::format("parameter {}", p);
}

// Where a Reducer is at the current event, or null when it is constructed later.
const analysis::ReducerAt* reducer_at(const analysis::State& st, analysis::ReducerIndex k) {
  auto it = std::lower_bound(st.reducers.begin(), st.reducers.end(), k,
                             [](const analysis::ReducerAt& r, analysis::ReducerIndex x) { return r.reducer < x; });
  return it != st.reducers.end() && it->reducer == k ? &*it : nullptr;
}

// How many hooks `o` has attached at the current event.
uint32_t attached_hooks(const analysis::State& st, analysis::OwnerIndex o) {
  auto it = std::lower_bound(st.owners.begin(), st.owners.end(), o,
                             [](const analysis::OwnerAt& a, analysis::OwnerIndex x) { return a.owner < x; });
  return it != st.owners.end() && it->owner == o ? it->hooks : 0;
}

// The buckets' tooltip: status and the parameters in it.
void bucket_tooltip(const analysis::Model& m, const analysis::ReducerInfo& info, const analysis::BucketAt& b) {
  ImGui::BeginTooltip();
  ImGui::Text("bucket %u: %u parameter%s, %u pending", b.index, b.size, b.size == 1 ? "" : "s", b.pending);
  ImGui::TextColored(col(bucket_color(b.status)), "%s", bucket_words(b.status));
  size_t listed = 0;
  for (uint32_t q = 0; q < info.parameters.size(); ++q) {
    if (info.parameters[q].bucket != b.index) continue;
    if (++listed > 16) {
      ImGui::TextDisabled("...");
      break;
    }
    ImGui::BulletText("%s", parameter_name(m, info, q).c_str());
  }
  ImGui::EndTooltip();
}

// One bucket cell at `a`, `w` wide: filled as far as its gradients are in.
void bucket_cell(const analysis::BucketAt& b, ImVec2 a, float w, float h) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 z(a.x + w, a.y + h);
  dl->AddRectFilled(a, z, kBucketFrame, 2.f);
  if (b.status == BucketStatus::kPending && b.size > 0) {
    const float done = static_cast<float>(b.size - b.pending) / static_cast<float>(b.size);
    dl->AddRectFilled(a, z, render::with_alpha(kPendingColor, 120), 2.f);
    if (done > 0.f) dl->AddRectFilled(a, ImVec2(a.x + w * done, z.y), kReadyColor, 2.f);
  } else {
    dl->AddRectFilled(a, z, bucket_color(b.status), 2.f);
  }
  const std::string text = b.pending > 0 ? fmt::format("{}/{}", b.size - b.pending, b.size) : fmt::format("{}", b.size);
  const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
  if (ts.x + 4.f < w) {
    dl->AddText(ImVec2(a.x + (w - ts.x) * 0.5f, a.y + (h - ts.y) * 0.5f), render::rgba(16, 16, 16), text.c_str());
  }
}

// The buckets: a cell each, as wide as its share of parameters, then what is pending.
void reducer_buckets(const analysis::Model& m, const analysis::ReducerInfo& info, const analysis::ReducerAt& at) {
  if (at.buckets.empty()) return;
  const float width = ImGui::GetContentRegionAvail().x;
  const float h = ImGui::GetTextLineHeight() * 1.2f;
  const float gap = 3.f;
  const size_t n = at.buckets.size();
  uint64_t total = 0;
  for (const analysis::BucketAt& b : at.buckets) total += std::max<uint32_t>(b.size, 1);
  const float min_w = 6.f;
  const float free_w = std::max(0.f, width - gap * static_cast<float>(n - 1) - min_w * static_cast<float>(n));
  ImVec2 p = ImGui::GetCursorScreenPos();
  const float y0 = p.y;
  size_t pending_buckets = 0, pending_params = 0;
  for (size_t i = 0; i < n; ++i) {
    const analysis::BucketAt& b = at.buckets[i];
    const float w = min_w + free_w * static_cast<float>(std::max<uint32_t>(b.size, 1)) / static_cast<float>(total);
    const ImVec2 a(p.x, y0);
    bucket_cell(b, a, w, h);
    ImGui::SetCursorScreenPos(a);
    ImGui::PushID(static_cast<int>(i));
    ImGui::InvisibleButton("bucket", ImVec2(w, h));
    ImGui::PopID();
    if (ImGui::IsItemHovered()) bucket_tooltip(m, info, b);
    if (b.pending > 0 && at.backward >= 0) ++pending_buckets, pending_params += b.pending;
    p.x += w + gap;
  }
  ImGui::SetCursorScreenPos(ImVec2(ImGui::GetCursorScreenPos().x, y0));
  ImGui::Dummy(ImVec2(width, h));
  if (at.backward < 0) {
    ImGui::TextDisabled("%s, none prepared yet", count_of(n, "bucket").c_str());
  } else if (pending_buckets > 0) {
    ImGui::TextDisabled("pending: %s in %zu of %s", count_of(pending_params, "parameter").c_str(), pending_buckets,
                        count_of(n, "bucket").c_str());
  } else {
    ImGui::TextDisabled("no gradient pending");
  }
}

// Its current backward: finalized or how far, and no-op fires.
void reducer_backward(const analysis::ReducerInfo& info, const analysis::ReducerAt& at) {
  if (at.backward < 0) {
    ImGui::TextDisabled("No prepare_for_backward yet.");
  } else {
    ImGui::Text("backward %lld:", static_cast<long long>(at.backward));
    ImGui::SameLine();
    if (at.finalized) {
      ImGui::TextColored(col(kReducedColor), "finalized (gradients averaged and written back)");
    } else {
      ImGui::TextColored(col(kReadyColor), "in progress, %zu of %u parameters ready", at.ready_order.size(),
                         info.num_parameters);
    }
  }
  if (at.noops > 0) {
    ImGui::TextColored(col(kReadyColor), "%u no-op fire%s", at.noops, at.noops == 1 ? "" : "s");
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("this Reducer's hooks fired in a backward it did not prepare for,\n"
                        "so they did nothing (another DDP instance on the same module ran it)");
    }
  }
}

// Its comm hook, if any (Note [Comm hooks in traces]): on no Function, so
// neither the graph nor the inspector shows it; this row does.
void reducer_comm_hook(const analysis::Model& m, const analysis::State& st, const analysis::ReducerInfo& info) {
  for (const analysis::HookAt& h : st.module_hooks) {
    const analysis::HookInfo& hook = m.hooks()[h.hook];
    if (hook.owner != info.owner || hook.kind != trace::HookKind::kCommHook) continue;
    ImGui::Text("comm hook %s: %u bucket call%s", key_text(hook.key).c_str(), h.fires, h.fires == 1 ? "" : "s");
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("register_comm_hook: DDP hands each ready bucket to this hook instead of\n"
                        "allreducing it; what the hook returns becomes the bucket's gradients");
    }
  }
}

// A destroyed Reducer: what its destructor removed and what it left attached.
void reducer_destroyed(const analysis::ReducerInfo& info, const analysis::ReducerAt& at, uint32_t left, size_t now) {
  ImGui::TextUnformatted("Its destructor removed");
  ImGui::SameLine(0.f, 4.f);
  ImGui::TextColored(info.hooks_removed == 0 && info.num_parameters > 0 ? col(palette().alarm)
                                                                        : ImGui::GetStyleColorVec4(ImGuiCol_Text),
                     "%u", info.hooks_removed);
  ImGui::SameLine(0.f, 4.f);
  ImGui::TextUnformatted("hooks;");
  ImGui::SameLine(0.f, 4.f);
  if (left > 0) {
    ImGui::TextColored(col(palette().alarm), "%u still attached at #%zu (leaked, they keep firing)", left, now);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("click the owner above to see where they are");
  } else {
    ImGui::TextDisabled("none left attached.");
  }
  if (at.backward >= 0) ImGui::TextDisabled("Its last backward was %lld.", static_cast<long long>(at.backward));
}

// A lingering Reducer (Note [Lingering owners]): who replaced it, and what its hooks do now.
void reducer_lingering(const analysis::Model& m, const analysis::ReducerInfo& info, const analysis::ReducerAt& at,
                       size_t now) {
  ImGui::PushStyleColor(ImGuiCol_Text, col(palette().lingering));
  ImGui::TextWrapped("%s - a reference the program kept holds it: its hooks stay attached and do nothing on "
                     "every backward.",
                     analysis::replaced_text(m, info.owner, static_cast<analysis::EventIndex>(now)).c_str());
  ImGui::PopStyleColor();
  if (at.backward >= 0) ImGui::TextDisabled("Its last backward was %lld; replaced at", static_cast<long long>(at.backward));
  if (at.backward < 0) ImGui::TextDisabled("Replaced at");
  ImGui::SameLine(0.f, 4.f);  // the caller's link to the replacement follows
}

}  // namespace

void App::draw_reducers_panel() {
  const bool open = ImGui::Begin("Reducers");
  const analysis::Model* m = session_.model();
  if (!open || !m) {
    if (open) ImGui::TextDisabled("No trace open.");
    ImGui::End();
    return;
  }
  const auto& reducers = m->reducers();
  reducer_words_.clear();
  if (reducers.empty()) {
    // A Reducer made before the recording began has no construction event,
    // but its owner and hooks are in the trace: say so rather than deny it.
    size_t seen = 0;
    for (size_t i = 0; i < m->owners().size(); ++i) {
      const analysis::OwnerInfo& o = m->owners()[i];
      if (o.kind != trace::OwnerKind::kReducer) continue;
      if (seen++ == 0) {
        ImGui::TextWrapped("No Reducer's construction was recorded (it was built before the recording "
                           "began, or the trace was written without it): no buckets or backward passes "
                           "to show. Reducers seen through their hooks:");
      }
      if (seen > 20) continue;
      ImGui::BulletText("%s", m->owner_name(static_cast<analysis::OwnerIndex>(i)).c_str());
      if (o.destroyed_at != analysis::kNever) {
        ImGui::SameLine();
        ImGui::TextDisabled("destroyed at");
        ImGui::SameLine(0.f, 4.f);
        event_link(o.destroyed_at);
      }
    }
    if (seen > 20) ImGui::TextDisabled("... and %zu more", seen - 20);
    if (seen == 0) ImGui::TextDisabled("No DDP Reducer in this trace.");
    ImGui::End();
    return;
  }
  const analysis::State* full = full_state_or_pending(session_);
  if (!full) {
    ImGui::End();
    return;
  }
  const analysis::State& st = *full;
  const auto now = static_cast<analysis::EventIndex>(session_.current());
  auto lingers = [&](const analysis::ReducerAt& r) {
    return r.live && analysis::owner_status(*m, reducers[r.reducer].owner, now) == analysis::OwnerStatus::kLingering;
  };
  size_t alive = 0, lingering = 0;
  for (const analysis::ReducerAt& r : st.reducers) alive += r.live, lingering += lingers(r);
  reducer_summary(alive - lingering, lingering, st.reducers.size() - alive, reducers.size() - st.reducers.size());

  // Live ones first (what the current backward is doing), then the lingering, then the destroyed.
  std::vector<analysis::ReducerIndex> order, later;
  for (const analysis::ReducerAt& r : st.reducers) {
    if (r.live && !lingers(r)) order.push_back(r.reducer);
  }
  for (const analysis::ReducerAt& r : st.reducers) {
    if (lingers(r)) order.push_back(r.reducer);
  }
  for (const analysis::ReducerAt& r : st.reducers) {
    if (!r.live) order.push_back(r.reducer);
  }
  for (analysis::ReducerIndex k = 0; k < reducers.size(); ++k) {
    if (!reducer_at(st, k)) later.push_back(k);
  }
  for (analysis::ReducerIndex k : order) reducer_section(k, *reducer_at(st, k));

  if (!later.empty()) {
    ImGui::Spacing();
    for (analysis::ReducerIndex k : later) {
      const analysis::ReducerInfo& info = reducers[k];
      ImGui::TextDisabled("%s (rank %u) is constructed later, at", m->owner_name(info.owner).c_str(),
                          static_cast<unsigned>(info.rank));
      ImGui::SameLine(0.f, 4.f);
      event_link(info.constructed_at);
    }
  }
  ImGui::End();
}

// "At #N: 1 alive, 2 replaced, still alive, 0 destroyed, 0 constructed
// later", each part on the line while it fits, else on the next: a narrow
// panel (1280 px wide windows) wraps it, never cuts it.
void App::reducer_summary(size_t alive, size_t lingering, size_t destroyed, size_t later) {
  const std::string parts[] = {fmt::format("At #{}:", session_.current()), fmt::format("{} alive,", alive),
                               lingering > 0 ? fmt::format("{} replaced, still alive,", lingering) : std::string(),
                               fmt::format("{} destroyed,", destroyed), fmt::format("{} constructed later", later)};
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const float space = ImGui::CalcTextSize(" ").x;
  reducer_summary_right_ = 0.f;
  bool first = true;
  for (size_t i = 0; i < std::size(parts); ++i) {
    if (parts[i].empty()) continue;
    const float w = ImGui::CalcTextSize(parts[i].c_str()).x;
    if (!first) {
      ImGui::SameLine(0.f, space);
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    first = false;
    const uint32_t color = i == 2 ? palette().lingering : ImGui::GetColorU32(ImGuiCol_TextDisabled);
    ImGui::TextColored(col(color), "%s", parts[i].c_str());
    reducer_summary_right_ = std::max(reducer_summary_right_, ImGui::GetItemRectMax().x - right);
  }
}

// One Reducer: a tree node (its owner's colour, rank, policy, state), open
// for the live ones; inside, its life, then its backward, buckets and ready
// order (live) or what its destructor did (destroyed).
void App::reducer_section(analysis::ReducerIndex k, const analysis::ReducerAt& at) {
  const analysis::Model& m = *session_.model();
  const analysis::ReducerInfo& info = m.reducers()[k];
  const bool live = at.live;
  const uint32_t left = attached_hooks(session_.state(), info.owner);
  ImGui::PushID(static_cast<int>(k));
  const bool node_open = reducer_header(info, at, left);
  if (!node_open) {
    ImGui::PopID();
    return;
  }
  reducer_life(info, live);
  if (!live) {
    reducer_destroyed(info, at, left, session_.current());
  } else if (analysis::owner_status(m, info.owner, static_cast<analysis::EventIndex>(session_.current())) ==
             analysis::OwnerStatus::kLingering) {
    reducer_lingering(m, info, at, session_.current());
    event_link(m.owners()[info.owner].replaced_at);
  } else {
    reducer_backward(info, at);
    reducer_comm_hook(m, session_.state(), info);
    reducer_buckets(m, info, at);
    reducer_ready_order(info, at);
  }
  ImGui::TreePop();
  ImGui::PopID();
}

// The Reducer's tree node: an owner-coloured square (red-framed when
// destroyed), rank, policy and state. True when open.
bool App::reducer_header(const analysis::ReducerInfo& info, const analysis::ReducerAt& at, uint32_t left) {
  const bool live = at.live;
  const analysis::Model& m = *session_.model();
  const analysis::OwnerStatus status =
      analysis::owner_status(m, info.owner, static_cast<analysis::EventIndex>(session_.current()));
  const bool lingering = status == analysis::OwnerStatus::kLingering;
  // A destroyed Reducer is a different tree node (its own open state),
  // folded until the user opens it.
  ImGui::SetNextItemOpen(live, ImGuiCond_Once);
  const std::string label = fmt::format("     {}###{}", session_.model()->owner_name(info.owner), live ? "live" : "dead");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(live ? ImGuiCol_Text : ImGuiCol_TextDisabled));
  const bool node_open =
      ImGui::TreeNodeEx(label.c_str(), ImGuiTreeNodeFlags_SpanAvailWidth | ImGuiTreeNodeFlags_FramePadding);
  ImGui::PopStyleColor();
  {
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    const float side = ImGui::GetTextLineHeight() * 0.7f;
    const float x = a.x + ImGui::GetTreeNodeToLabelSpacing() + 2.f, y = (a.y + b.y - side) * 0.5f;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    if (!live || lingering) {
      dl->AddRectFilled(ImVec2(x - 1.5f, y - 1.5f), ImVec2(x + side + 1.5f, y + side + 1.5f),
                        lingering ? palette().lingering : palette().alarm);
    }
    dl->AddRectFilled(ImVec2(x, y), ImVec2(x + side, y + side), render::owner_color(*session_.model(), info.owner));
  }
  ImGui::SameLine();
  ImGui::TextDisabled("rank %u · %s", static_cast<unsigned>(info.rank),
                      std::string(trace::to_string(info.policy)).c_str());
  ImGui::SameLine();
  // The words, kept for the draw report (Note [Draw report]): what a user reads here.
  std::string words;
  uint32_t color = 0;  // 0: dim
  if (lingering) {
    words = fmt::format("{} (lingering)", analysis::to_string(status));
    color = palette().lingering;
  } else if (live) {
    words = at.backward < 0 ? std::string("alive, no backward yet")
                            : fmt::format("alive, backward {} {}", at.backward, at.finalized ? "finalized" : "in progress");
  } else if (left > 0) {
    words = fmt::format("destroyed, {} hook{} left behind", left, left == 1 ? "" : "s");
    color = palette().alarm;
  } else {
    words = "destroyed, removed its hooks";
  }
  if (color) {
    ImGui::TextColored(col(color), "· %s", words.c_str());
  } else {
    ImGui::TextDisabled("· %s", words.c_str());
  }
  reducer_words_.push_back(fmt::format("{} r{}: {}", m.owner_name(info.owner), info.rank, words));
  return node_open;
}

// Its owner, where it was constructed and destroyed, its size and policy.
void App::reducer_life(const analysis::ReducerInfo& info, bool live) {
  owner_label(info.owner, !live);
  ImGui::SameLine();
  ImGui::TextDisabled("constructed");
  ImGui::SameLine();
  event_link(info.constructed_at);
  if (info.destroyed_at != kNever) {
    ImGui::SameLine();
    ImGui::TextDisabled(live ? "· destroyed later" : "· destroyed");
    ImGui::SameLine();
    event_link(info.destroyed_at);
  }
  // Note [Rebuilt buckets]: the buckets the backward passes reduced, not only those logged at construction.
  const analysis::Model& m = *session_.model();
  if (bucket_layouts_of_ != &m) {
    bucket_layouts_.clear();
    for (analysis::ReducerIndex r = 0; r < m.reducers().size(); ++r) bucket_layouts_.push_back(bucket_layout(m, r));
    bucket_layouts_of_ = &m;
  }
  const BucketLayout& layout = bucket_layouts_[static_cast<size_t>(&info - m.reducers().data())];
  const std::string buckets = bucket_words(info, layout, session_.current());
  ImGui::TextDisabled("%s · destroy policy", buckets.c_str());
  reducer_words_.push_back(fmt::format("{} r{} buckets: {}", m.owner_name(info.owner), info.rank, buckets));
  const std::string rebuilt = rebuild_words(layout, session_.current());
  if (!rebuilt.empty()) reducer_words_.push_back(fmt::format("{} r{} {}", m.owner_name(info.owner), info.rank, rebuilt));
  ImGui::SameLine(0.f, 4.f);
  const bool legacy = info.policy != trace::DestroyPolicy::kByKey;
  ImGui::TextColored(legacy ? col(kReadyColor) : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), "%s",
                     std::string(trace::to_string(info.policy)).c_str());
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("by_key: the destructor removes exactly the hooks it added (the fix of PR #21591)\n"
                      "none: it removes nothing; its hooks stay and pile up across rebuilds\n"
                      "by_type: it removes every Reducer hook, another live Reducer's too");
  }
  if (!rebuilt.empty()) {
    ImGui::PushTextWrapPos(0.f);
    ImGui::TextDisabled("%s", rebuilt.c_str());
    ImGui::PopTextWrapPos();
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("DDP rebuilds its buckets once, after the first backward, in the order gradients\n"
                        "became ready (its log: \"Reducer buckets have been rebuilt in this iteration\")\n"
                        "click: go to #%zu",
                        static_cast<size_t>(layout.rebuilt_at));
    }
    if (ImGui::IsItemClicked()) jump_to(layout.rebuilt_at);
  }
}

// The order gradients became ready: a table; a click selects the parameter's AccumulateGrad.
void App::reducer_ready_order(const analysis::ReducerInfo& info, const analysis::ReducerAt& at) {
  if (at.ready_order.empty()) return;
  const analysis::Model& m = *session_.model();
  const std::string title = fmt::format("Ready order ({} of {})###ready", at.ready_order.size(), info.num_parameters);
  ImGui::SetNextItemOpen(true, ImGuiCond_Once);
  if (!ImGui::TreeNode(title.c_str())) return;
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const size_t rows = at.ready_order.size();
  const float table_h = row_h * static_cast<float>(std::min<size_t>(rows, 10) + 1) + 4.f;
  if (ImGui::BeginTable("ready", 3, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY,
                        ImVec2(0.f, table_h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("#");
    ImGui::TableSetupColumn("parameter", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("bucket");
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(rows));
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const uint32_t q = at.ready_order[static_cast<size_t>(i)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%d", i + 1);
        ImGui::TableNextColumn();
        ImGui::PushID(i);
        const analysis::FunctionIndex acc = q < info.parameters.size() ? info.parameters[q].accumulator : kNoIndex;
        const bool selected = acc != kNoIndex && acc == session_.selected_function();
        if (ImGui::Selectable(parameter_name(m, info, q).c_str(), selected) && acc != kNoIndex) {
          select_function(acc);
        }
        if (ImGui::IsItemHovered() && acc != kNoIndex) {
          ImGui::SetTooltip("parameter %u · %s\nclick: select its AccumulateGrad", q, m.function_name(acc).c_str());
        }
        ImGui::PopID();
        ImGui::TableNextColumn();
        if (q < info.parameters.size() && info.parameters[q].bucket != kNoIndex) {
          ImGui::Text("%u", info.parameters[q].bucket);
        }
      }
    }
    ImGui::EndTable();
  }
  ImGui::TreePop();
}

}  // namespace hookscope::app
