// Landing a finished layout (Note [Landing a layout off the UI thread]):
// packing it and building what frames read from it on a thread of its own,
// then swapping it in on the UI thread.

#include <algorithm>
#include <cmath>

#include "render/draw/graph_view.h"
#include "render/draw/graph_view_internal.h"
#include "render/draw/graph_view_live.h"
#include "render/layout/graph_pack.h"

namespace hookscope::render {

// Note [Landing a layout off the UI thread]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// At a million Functions what a landed layout needs before a frame draws it
// costs tens of ms: packing the compact view's ranks (Note [Packed ranks]),
// the widest box of each layer and every edge's bounds (culling), the edges
// by tile (Note [Frame caches]), the LiveIndex (Note [Liveness by
// intervals]). While playing, the compact view lays out again whenever the
// live set changed (Note [Compact boxes]), so a layout lands every few
// frames: done on the UI thread that was one slow frame in five. Once the
// layout job is done, finish_ does all of it on its own thread, from the
// job's layout and folded graph (nobody else reads them yet) and copies of
// what the UI thread decides (the canvas's shape, the event drawn); the
// view keeps drawing the last layout and the job counts as pending until a
// frame finds finish_ ready and swaps the results in (take_landed: O(units)
// for the stable places, Note [Stable layout]). Whatever replaces the job
// (a new model, a fold, a re-layout) first cancels and waits for finish_
// (drop_finish): it reads the model and the scene.
void GraphView::start_finish() {
  const Frame& f = *frame_;
  PackOptions pack;
  bool packing = metrics_.compact;
  if (packing) {  // Note [Packed ranks], to the canvas's shape of the last frame
    const float w = f.panel_max.x - f.panel_min.x, h = f.panel_max.y - f.canvas_min.y;
    if (options_.pack_aspect > 0.f) {
      pack.aspect = options_.pack_aspect;
    } else if (w > 50.f && h > 50.f) {
      pack.aspect = w / h;
    }
    // Note [Fit shows every rank]: the canvas's width at the readable zoom,
    // beside the narrowest minimap column and fit's margins.
    if (w > 200.f) pack.max_width = (w - 48.f - 16.f - 12.f) * chip_font(metrics_) / options_.min_text_px;
  }
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  live_cancel_ = cancel;
  finish_ = std::async(std::launch::async, [job = job_.get(), model = model_, scene = scene_, fg = pending_,
                                            packing, pack, at = drawn_at_, cancel] {
    auto x = std::make_shared<Landed>();
    Layout layout = job->get();
    if (layout.cancelled) {
      x->cancelled = true;
      return x;
    }
    x->layout = std::make_shared<Layout>(std::move(layout));
    if (packing) {
      PackOptions p = pack;
      p.generation = unit_generations(*scene, *fg, at);  // Note [Packed ranks]
      pack_layout(*x->layout, fg->graph, p);
    }
    Landed::index(*scene, *fg, *x->layout, *x);
    Landed::index_edges(*model, *scene, *fg, *x->layout, *x);
    x->live = LiveIndex::build(*model, *scene, *fg, *x->layout, *cancel);
    return x;
  });
  if (packing) packed_aspect_ = pack.aspect;
}

void GraphView::drop_finish() {
  if (!finish_.valid()) return;
  if (live_cancel_) *live_cancel_ = true;
  if (job_) job_->cancel();
  finish_.wait();
  finish_ = {};
  live_cancel_.reset();
}

void GraphView::Landed::index(const GraphScene& scene, const FoldedGraph& fg, const Layout& l, Landed& t) {
  t.layer_max_width.assign(static_cast<size_t>(l.num_layers), 0.f);
  for (size_t u = 0; u < l.center.size(); ++u) {
    t.layer_max_width[l.layer[u]] = std::max(t.layer_max_width[l.layer[u]], l.size[u].x);
  }
  const size_t m = l.route_begin.size() - 1;
  t.edge_min.assign(m, {INFINITY, INFINITY});
  t.edge_max.assign(m, {-INFINITY, -INFINITY});
  for (size_t e = 0; e < m; ++e) {
    for (uint32_t i = l.route_begin[e]; i < l.route_begin[e + 1]; ++i) {
      const Vec2 p = l.route[i];
      t.edge_min[e] = {std::min(t.edge_min[e].x, p.x), std::min(t.edge_min[e].y, p.y)};
      t.edge_max[e] = {std::max(t.edge_max[e].x, p.x), std::max(t.edge_max[e].y, p.y)};
    }
  }
  t.rank_bounds.clear();
  for (size_t u = 0; u < l.center.size(); ++u) {
    const uint32_t g = fg.group_of_unit[u];
    const uint16_t rank = g == kNoGroup ? scene.nodes()[fg.node_of_unit[u]].rank : scene.groups()[g].rank;
    auto it = std::find_if(t.rank_bounds.begin(), t.rank_bounds.end(), [&](const RankBounds& b) { return b.rank == rank; });
    if (it == t.rank_bounds.end()) {
      it = t.rank_bounds.insert(t.rank_bounds.end(), {rank, {INFINITY, INFINITY}, {-INFINITY, -INFINITY}});
    }
    const Vec2 c = l.center[u], s = l.size[u];
    it->min = {std::min(it->min.x, c.x - s.x * 0.5f), std::min(it->min.y, c.y - s.y * 0.5f)};
    it->max = {std::max(it->max.x, c.x + s.x * 0.5f), std::max(it->max.y, c.y + s.y * 0.5f)};
  }
}

// The finished job's results in place of the layout drawn.
void GraphView::take_landed(Landed& x) {
  job_.reset();
  live_cancel_.reset();
  std::shared_ptr<std::vector<uint8_t>> keep = std::move(pending_keep_);
  if (x.cancelled) return;
  if (keep) layout_keep_ = std::move(*keep);  // Note [Graph at a million Functions]
  stop_live_index();
  layout_ = std::move(x.layout);
  folded_ = std::move(pending_);
  const Layout& l = *layout_;
  const FoldedGraph& fg = *folded_;
  // Remembers where everything went (Note [Stable layout]).
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
  layer_max_width_ = std::move(x.layer_max_width);
  rank_bounds_ = std::move(x.rank_bounds);
  take_edge_tables(x);
  edges_indexed_ = true;
  frame_->edge_stamp.assign(edge_min_.size(), 0);
  frame_->stamp = 0;
  ++generation_;
  live_index_ = std::move(x.live);
  if (fit_on_layout_) fit_pending_ = true;
  fit_on_layout_ = false;
}

}  // namespace hookscope::render
