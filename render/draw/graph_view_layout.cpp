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
                          std::shared_ptr<const RunStory> story) {
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
  start_layout(false);
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
void GraphView::start_layout(bool seeded) {
  if (!scene_) return;
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
  auto prepare = [scene = scene_, folded = pending_, font = std::make_shared<const ImFont>(*font), metrics = metrics_,
                  groups = folded_groups_,
                  keep = metrics_.compact ? std::make_shared<const std::vector<uint8_t>>(layout_keep_) : nullptr,
                  seeds = std::move(seeds), seed = std::make_shared<LayoutSeed>(), prepared = std::move(prepared)] {
    struct Done {  // set however this ends
      std::promise<void>& p;
      ~Done() { p.set_value(); }
    } done{*prepared};
    // Note [Compact boxes]: the compact view lays out the live slots only.
    *folded = scene->fold(groups, keep.get());
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

void GraphView::poll_layout() {
  if (!job_ || !job_->done()) return;
  land_layout();
}

void GraphView::wait_for_layout() {
  if (job_) land_layout();
}

void GraphView::wait_for_live_index() { live_index(true); }

void GraphView::land_layout() {
  Layout layout = job_->get();
  job_.reset();
  if (layout.cancelled) return;
  layout_ = std::make_unique<Layout>(std::move(layout));
  folded_ = std::move(pending_);
  if (metrics_.compact) {  // Note [Packed ranks], to the canvas's shape of the last frame
    const Frame& f = *frame_;
    PackOptions pack;
    const float w = f.panel_max.x - f.panel_min.x, h = f.panel_max.y - f.canvas_min.y;
    if (options_.pack_aspect > 0.f) {
      pack.aspect = options_.pack_aspect;
    } else if (w > 50.f && h > 50.f) {
      pack.aspect = w / h;
    }
    packed_aspect_ = pack.aspect;
    pack.generation = unit_generations(*scene_, *folded_, drawn_at_);  // Note [Packed ranks]
    pack_layout(*layout_, folded_->graph, pack);
  }
  index_layout();
  start_live_index();
  if (fit_on_layout_) fit_pending_ = true;
  fit_on_layout_ = false;
}

// Remembers where everything went (Note [Stable layout]) and builds the
// culling tables.
void GraphView::index_layout() {
  const Layout& l = *layout_;
  const FoldedGraph& fg = *folded_;
  for (size_t u = 0; u < fg.group_of_unit.size(); ++u) {
    const uint32_t g = fg.group_of_unit[u];
    if (g == kNoGroup) {
      node_layer_[fg.node_of_unit[u]] = l.layer[u];
      node_x_[fg.node_of_unit[u]] = l.center[u].x;
    } else {
      group_layer_[g] = l.layer[u];
      group_x_[g] = l.center[u].x;
    }
  }
  if (layer_height_.size() < l.layer_height.size()) layer_height_.resize(l.layer_height.size(), 0.f);
  for (size_t k = 0; k < l.layer_height.size(); ++k) layer_height_[k] = std::max(layer_height_[k], l.layer_height[k]);
  layer_max_width_.assign(static_cast<size_t>(l.num_layers), 0.f);
  for (size_t u = 0; u < l.center.size(); ++u) {
    layer_max_width_[l.layer[u]] = std::max(layer_max_width_[l.layer[u]], l.size[u].x);
  }
  const size_t m = l.route_begin.size() - 1;
  edge_min_.assign(m, {INFINITY, INFINITY});
  edge_max_.assign(m, {-INFINITY, -INFINITY});
  for (size_t e = 0; e < m; ++e) {
    for (uint32_t i = l.route_begin[e]; i < l.route_begin[e + 1]; ++i) {
      const Vec2 p = l.route[i];
      edge_min_[e] = {std::min(edge_min_[e].x, p.x), std::min(edge_min_[e].y, p.y)};
      edge_max_[e] = {std::max(edge_max_[e].x, p.x), std::max(edge_max_[e].y, p.y)};
    }
  }
  frame_->edge_stamp.assign(m, 0);
  frame_->stamp = 0;
  edges_indexed_ = false;  // index_edges() on the first frame that draws edges
  ++generation_;
  rank_bounds_.clear();
  for (size_t u = 0; u < l.center.size(); ++u) {
    const uint32_t g = fg.group_of_unit[u];
    const uint16_t rank = g == kNoGroup ? scene_->nodes()[fg.node_of_unit[u]].rank : scene_->groups()[g].rank;
    auto it = std::find_if(rank_bounds_.begin(), rank_bounds_.end(), [&](const RankBounds& b) { return b.rank == rank; });
    if (it == rank_bounds_.end()) it = rank_bounds_.insert(rank_bounds_.end(), {rank, {INFINITY, INFINITY}, {-INFINITY, -INFINITY}});
    const Vec2 c = l.center[u], s = l.size[u];
    it->min = {std::min(it->min.x, c.x - s.x * 0.5f), std::min(it->min.y, c.y - s.y * 0.5f)};
    it->max = {std::max(it->max.x, c.x + s.x * 0.5f), std::max(it->max.y, c.y + s.y * 0.5f)};
  }
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
