// The graph view's layouts (Note [Layout jobs]): a new or grown model, its
// scene, the layout job (box sizes and layout off the UI thread), landing
// the layout and indexing it for culling.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <tuple>

#include "render/draw/graph_view.h"
#include "render/draw/graph_view_internal.h"
#include "render/layout/graph_pack.h"

namespace hookscope::render {

using analysis::kNoIndex;

void GraphView::set_model(const analysis::Model* model) { set_model(model, nullptr, nullptr); }

// Note [Scene off the UI thread]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// GraphScene (slots, groups, generations) and RunStory read the whole model:
// at a million Functions they take seconds. The trace loader builds both on
// its thread right after the model (app/loader.cpp) and hands them over with
// it, so opening a file never freezes the window for them; a grown live
// model (update_model) still builds them here, where they are small.
void GraphView::set_model(const analysis::Model* model, std::shared_ptr<GraphScene> scene,
                          std::shared_ptr<const RunStory> story, analysis::EventIndex open_at) {
  drop_finish();
  stop_live_index();
  wait_for_box_sizes();  // the old model may go once this returns
  job_.reset();
  layout_.reset();
  folded_.reset();
  pending_.reset();
  scene_.reset();
  model_ = model;
  selected_function_ = kNoIndex;
  selected_owner_ = kNoIndex;
  fit_pending_ = true;
  if (!model) return;
  adopt_scene(*model, std::move(scene), std::move(story));
  layer_height_.clear();
  // Note [One layout at open]
  const bool at_open = open_at < model->num_events();
  if (at_open && !metrics_.compact && auto_compact_ && full_boxes_cannot_fit(*model, open_at)) {
    metrics_ = compact_metrics(options_.metrics);
  }
  if (at_open && metrics_.compact) drawn_at_ = open_at;
  start_layout(false, at_open && metrics_.compact);
}

// Note [One layout at open]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A trace opens at an event the app knows before the first frame (the
// Session's opening event). Left alone, the first layout would be of every
// slot in full boxes; the first fit would find them too many to read and
// switch to the compact view (Note [Compact boxes]), whose layout of the live
// slots runs while the first layout and its LiveIndex are still held: two
// layouts at open, the second one's working memory on top of the first's
// tables (the GUI on 100M events of a million Functions: 3065 MiB at its
// peak, 2806 with one layout, and the first picture 2.5 s sooner; bench/
// scale_gui.sh). So set_model, given the
// opening event, makes the one layout the first frame would end up with:
// compact when the fit is sure to switch (full_boxes_cannot_fit) or the view
// is compact already, of the slots live at that event (keep_at, in the job,
// as for an indexed frame); the first frame at that event finds its live set
// laid out and lays out nothing more (layouts_started() counts). Every view
// the app opens passes the event it shows first: the main graph the
// Session's opening event, the Compare panel each side's (B's once synced),
// the whole-graph export the current one, its box shape set before.
bool GraphView::full_boxes_cannot_fit(const analysis::Model& model, analysis::EventIndex at) const {
  // The canvas of the last frame, allowing for a window grown to twice its
  // width and height meanwhile; before any frame, a 4K screen's.
  const Frame& f = *frame_;
  const double w = f.panel_max.x - f.panel_min.x, h = f.panel_max.y - f.panel_min.y;
  const double canvas = 4.0 * (w > 50.0 && h > 50.0 ? w * h : 3840.0 * 2160.0);
  // A full box is at least min_width + 2 pad by one line + 2 pad (box_sizes),
  // boxes do not overlap, and fit switches when its zoom is below readable
  // (fit_now): more live boxes than `most` cannot all show readably.
  const BoxMetrics& m = options_.metrics;
  const double readable = options_.min_text_px / chip_font(m);
  const double box_px = (m.min_width + 2.0 * m.pad) * (m.line_height + 2.0 * m.pad) * readable * readable;
  const double most = canvas / box_px;
  if (static_cast<double>(model.functions().size()) <= most) return false;
  // Live boxes: at least the slots of the live Functions (the fit counts
  // those holding tensor hooks too).
  std::vector<uint8_t> seen(scene_->nodes().size(), 0);
  size_t live = 0;
  for (size_t fn = 0; fn < model.functions().size(); ++fn) {
    const analysis::FunctionInfo& info = model.functions()[fn];
    if (info.created_at > at || at >= info.released_at) continue;
    uint8_t& s = seen[scene_->slot_of(static_cast<analysis::FunctionIndex>(fn))];
    live += !s;
    s = 1;
    if (static_cast<double>(live) > most) return true;
  }
  return false;
}

// The scene and story of `model` (built here when not given), and per-slot
// state sized to the scene, every slot unplaced and every group unfolded.
void GraphView::adopt_scene(const analysis::Model& model, std::shared_ptr<GraphScene> scene,
                            std::shared_ptr<const RunStory> story) {
  scene_ = scene ? std::move(scene) : std::make_shared<GraphScene>(model);
  story_ = story ? *story : RunStory(model);
  rank_sources_.clear();
  for (uint32_t src = 0; src < model.num_traces(); ++src) {
    const int32_t rank = model.trace(src).header.rank;
    if (rank >= 0) rank_sources_.push_back({static_cast<uint16_t>(rank), src});
  }
  folded_groups_.assign(scene_->groups().size(), 0);
  ++generation_;
  layout_keep_.clear();  // every slot, until a frame knows the live ones
  node_layer_.assign(scene_->nodes().size(), -1);
  node_x_.assign(scene_->nodes().size(), 0.f);
  group_layer_.assign(scene_->groups().size(), -1);
  group_x_.assign(scene_->groups().size(), 0.f);
}

void GraphView::update_model(const analysis::Model* model) {
  if (!model || !scene_ || !layout_) {
    set_model(model);
    return;
  }
  // Where each slot was, by (signature, instance); groups start unfolded.
  std::vector<std::tuple<uint64_t, uint32_t, int, float>> before;
  for (uint32_t v = 0; v < scene_->nodes().size(); ++v) {
    if (node_layer_[v] >= 0) {
      before.emplace_back(scene_->nodes()[v].signature, scene_->nodes()[v].instance, node_layer_[v], node_x_[v]);
    }
  }
  std::sort(before.begin(), before.end());
  drop_finish();
  stop_live_index();
  wait_for_box_sizes();
  job_.reset();
  pending_.reset();
  model_ = model;
  adopt_scene(*model, nullptr, nullptr);
  for (uint32_t v = 0; v < scene_->nodes().size(); ++v) {
    const SceneNode& n = scene_->nodes()[v];
    auto it = std::lower_bound(before.begin(), before.end(), std::make_tuple(n.signature, n.instance, INT32_MIN, -INFINITY));
    if (it != before.end() && std::get<0>(*it) == n.signature && std::get<1>(*it) == n.instance) {
      node_layer_[v] = std::get<2>(*it);
      node_x_[v] = std::get<3>(*it);
    }
  }
  // The drawn layout belongs to the old scene: drop it until the new one lands.
  layout_.reset();
  folded_.reset();
  selected_function_ = selected_function_ < model->functions().size() ? selected_function_ : kNoIndex;
  selected_owner_ = selected_owner_ < model->owners().size() ? selected_owner_ : kNoIndex;
  start_layout(true);
}

// Note [Box sizes off the UI thread]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Box sizes measure every box's text: ~0.4 s at a million Functions, too
// long for the UI thread; so is the fold (~0.2 s). The layout job folds,
// seeds and measures on its thread before the layout (LayoutJob's
// prepare); the text with ImFont::CalcTextSizeA, which reads
// only the font's own tables (no ImGui context), on a copy of the current
// font made here: the copy's advance tables are the job's own, so an atlas
// rebuilt on the UI thread meanwhile (a new font, a DPI change) changes
// nothing it reads, and the sizes are those the UI thread would measure
// (the same function on the same numbers; tests compare them). The job
// owns copies of what the fold and the seed read, and shares the scene and
// the folded graph it fills (read by the UI thread only once the layout
// lands); the scene reads the model, so a view given another model waits
// for the prepare to finish (wait_for_box_sizes) before the old model may
// go. The frame goes on
// meanwhile ("laying out the graph").
void GraphView::start_layout(bool seeded, bool keep_at_open) {
  if (!scene_) return;
  ++layouts_started_;
  // Before the first frame there is no current font: take the atlas's
  // default, built here if the backend has not yet.
  ImGuiIO& io = ImGui::GetIO();
  if (!io.Fonts->IsBuilt()) io.Fonts->Build();
  const ImFont* font = ImGui::GetFont() ? ImGui::GetFont() : io.FontDefault ? io.FontDefault : io.Fonts->Fonts[0];
  auto prepared = std::make_shared<std::promise<void>>();
  box_sizes_done_ = prepared->get_future().share();
  // What the job reads, its own: the fold's choices and, for a seed, where
  // every slot and group was (Note [Stable layout]).
  struct Seeds {
    std::vector<int> node_layer, group_layer;
    std::vector<float> node_x, group_x, layer_height;
  };
  std::shared_ptr<const Seeds> seeds;
  if (seeded && !metrics_.compact) {  // a packed layout is no seed (Note [Packed ranks])
    seeds = std::make_shared<const Seeds>(Seeds{node_layer_, group_layer_, node_x_, group_x_, layer_height_});
  }
  pending_ = std::make_shared<FoldedGraph>();  // filled by the job; read once it lands
  // Note [Graph at a million Functions]: the last frame had no list of the
  // live slots; the job works them out at its event.
  // Note [One layout at open]: the same at the opening event.
  const bool keep_from_model = metrics_.compact && (keep_from_index_ || keep_at_open);
  pending_keep_ = keep_from_model ? std::make_shared<std::vector<uint8_t>>() : nullptr;
  if (keep_from_model) layout_keep_at_ = drawn_at_;
  auto prepare = [scene = scene_, folded = pending_, font = std::make_shared<const ImFont>(*font), metrics = metrics_,
                  groups = folded_groups_,
                  keep = metrics_.compact && !keep_from_model ? std::make_shared<const std::vector<uint8_t>>(layout_keep_) : nullptr,
                  model_keep = keep_from_model ? pending_keep_ : nullptr, model = model_, at = drawn_at_,
                  seeds = std::move(seeds), seed = std::make_shared<LayoutSeed>(), prepared = std::move(prepared)] {
    struct Done {  // set however this ends
      std::promise<void>& p;
      ~Done() { p.set_value(); }
    } done{*prepared};
    // Note [Compact boxes]: the compact view lays out the live slots only.
    if (model_keep) *model_keep = keep_at(*model, *scene, at);  // Note [Graph at a million Functions]
    *folded = scene->fold(groups, model_keep ? model_keep.get() : keep.get());
    LayoutInput input;
    input.graph = folded->graph;
    input.sizes = box_sizes_with(*scene, *folded, *font, metrics);
    if (seeds) {
      const size_t units = folded->group_of_unit.size();
      seed->layer.assign(units, -1);
      seed->x.assign(units, 0.f);
      for (size_t u = 0; u < units; ++u) {
        const uint32_t g = folded->group_of_unit[u], v = folded->node_of_unit[u];
        if (g == kNoGroup && seeds->node_layer[v] >= 0) {
          seed->layer[u] = seeds->node_layer[v];
          seed->x[u] = seeds->node_x[v];
        } else if (g != kNoGroup && seeds->group_layer[g] >= 0) {
          seed->layer[u] = seeds->group_layer[g];
          seed->x[u] = seeds->group_x[g];
        }
      }
      seed->layer_height = seeds->layer_height;
      input.seed = seed.get();  // the closure, and so the seed, lives as long as the job's thread
    }
    return input;
  };
  // Note [Compact boxes]: tighter gaps.
  const LayoutOptions layout_options = metrics_.compact ? compact_layout_options(options_.layout) : options_.layout;
  drop_finish();  // it reads the job this replaces
  job_ = std::make_unique<LayoutJob>(std::move(prepare), layout_options);
}

std::vector<Vec2> box_sizes_with(const GraphScene& scene, const FoldedGraph& folded, const ImFont& font,
                                 const BoxMetrics& metrics) {
  const float size = metrics.line_height;
  return scene.box_sizes(folded, [&](std::string_view s) {
    return font.CalcTextSizeA(size, FLT_MAX, 0.f, s.data(), s.data() + s.size()).x;
  }, metrics);
}

void GraphView::wait_for_box_sizes() {
  if (box_sizes_done_.valid()) box_sizes_done_.wait();
}

// Note [Landing a layout off the UI thread]: a finished job's layout is
// finished by finish_, then swapped in by the first frame that finds it
// ready.
void GraphView::poll_layout() {
  if (!job_) return;
  if (!finish_.valid()) {
    if (job_->done()) start_finish();
    return;
  }
  if (finish_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) land_layout();
}

bool GraphView::busy() const {
  // A fit or focus waits for a layout; without one they are no reason to draw.
  const bool queued = layout_ && (fit_pending_ || (model_ && focus_pending_ < model_->functions().size()));
  return job_ != nullptr || finish_.valid() || (live_job_.valid() && !live_index_) || queued || stats_.pulsing;
}

void GraphView::wait_for_layout() {
  if (job_) land_layout();
}

void GraphView::wait_for_live_index() { live_index(true); }

void GraphView::land_layout() {
  if (!finish_.valid()) start_finish();
  std::shared_ptr<Landed> x = finish_.get();  // rethrows the job's error
  finish_ = {};
  take_landed(*x);
}

void GraphView::set_folded(uint32_t group, bool folded) {
  if (group >= folded_groups_.size() || folded_groups_[group] == folded) return;
  folded_groups_[group] = folded;
  start_layout(true);
}

bool GraphView::folded(uint32_t group) const {
  return group < folded_groups_.size() && folded_groups_[group];
}

void GraphView::relayout() {
  layer_height_.clear();
  start_layout(false);
}

}  // namespace hookscope::render
