// What opening a huge trace costs, stage by stage, on a
// file from make_scale_trace (1M Functions, up to 100M events):
//   bench_scale_open FILE [SEEKS=20]
// prints, one figure a line: load (read + index + graph scene and story,
// app::load_traces as the GUI's loader thread runs it), RSS after load, the
// fold of the scene and box sizes (on the UI thread), layout of the whole graph
// (compute_layout, as the layout job runs it), state_at at SEEKS evenly
// spread events (median, max), the lazy seek of a zoomed view (StateView
// and the state of 2,000 Functions, Note [Lazy state]), the GUI Session's far
// seeks on the UI thread (go_to, the slowest poll until the full State is in,
// Note [Lazy seeks in the GUI]) and how long the State takes, and peak RSS. bench/scale_gui.sh runs it
// five times with the GUI's own figures and prints medians.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <thread>

#include "../app/loader.h"
#include "../app/session.h"
#include "analysis/diagnostics.h"
#include "analysis/diagnostics_table.h"
#include "analysis/state.h"
#include "analysis/state_view.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "render/layout/story.h"
#include "render/layout/timeline_index.h"

using namespace hookscope;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPU seconds of the process (all threads): on a shared machine the wall
// clock says more about the neighbours than about the code.
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double rss_mib() {  // current resident set, from /proc
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / (1 << 20);
}

// VmHWM, the peak resident set, from /proc; reset_peak() starts it afresh
// at the current RSS (Linux clear_refs 5), so a stage's own peak shows.
double hwm_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0.0;
}

void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// The timeline's marks for a 1280-px window (3 px min gap) as a pan or a
// zoom walks them afresh (Note [Timeline mark cache]), with what a frame
// reads per mark: the compact index through the model, against the same
// walk on full per-event arrays with a 64-fan summary (the index before
// Note [Compact timeline index]). Medians over 10 windows per zoom.
void timeline_walk(const render::TimelineIndex& index) {
  struct Full {
    std::vector<int64_t> time;
    std::vector<uint8_t> cls;
    std::vector<std::vector<uint8_t>> summary;
    uint8_t classes(size_t first, size_t last) const {
      uint8_t bits = 0;
      for (size_t i = first; i < last;) {
        int level = -1;
        size_t span = 1;
        while (level + 1 < static_cast<int>(summary.size()) && i % (span * 64) == 0 && i + span * 64 <= last) {
          span *= 64;
          ++level;
        }
        bits |= level < 0 ? static_cast<uint8_t>(1u << cls[i]) : summary[level][i / span];
        i += level < 0 ? 1 : span;
      }
      return bits;
    }
  };
  std::vector<Full> full(index.tracks().size());
  for (size_t k = 0; k < full.size(); ++k) {
    const render::TimelineTrack& t = index.tracks()[k];
    Full& f = full[k];
    for (size_t i = 0; i < t.size(); ++i) {
      f.time.push_back(t.time(i));
      f.cls.push_back(t.cls(i));
    }
    std::vector<uint8_t> level((f.cls.size() + 63) / 64, 0);
    for (size_t i = 0; i < f.cls.size(); ++i) level[i / 64] |= static_cast<uint8_t>(1u << f.cls[i]);
    while (!level.empty()) {
      f.summary.push_back(level);
      if (level.size() < 64) break;
      std::vector<uint8_t> up((level.size() + 63) / 64, 0);
      for (size_t b = 0; b < level.size(); ++b) up[b / 64] |= level[b];
      level = std::move(up);
    }
  }
  const int64_t begin = index.begin_ns(), span = std::max<int64_t>(index.end_ns() - begin, 1);
  for (int64_t zoom : {1, 10, 100, 1000}) {
    std::vector<double> compact_us, full_us;
    uint64_t sink = 0, marks = 0;
    for (int w = 0; w < 10; ++w) {
      const int64_t width = std::max<int64_t>(span / zoom, 1);
      const int64_t t0 = begin + (span - width) / 9 * w, t1 = t0 + width, gap = std::max<int64_t>(1, 3 * width / 1280);
      auto t = Clock::now();
      for (const render::TimelineTrack& track : index.tracks()) {
        render::for_each_mark(track, t0, t1, gap, [&](render::TickMark m) {
          const bool lone = m.last - m.first == 1;
          sink += static_cast<uint64_t>(track.time(m.first)) +
                  (lone ? track.cls(m.first) : static_cast<uint64_t>(track.time(m.last - 1)) + track.classes(m.first, m.last));
          ++marks;
        });
      }
      compact_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
      t = Clock::now();
      for (const Full& f : full) {
        const auto& time = f.time;
        auto i = std::lower_bound(time.begin(), time.end(), t0 - gap);
        const auto end = std::upper_bound(i, time.end(), t1);
        while (i < end) {
          auto j = std::lower_bound(i + 1, end, *i + gap);
          while (j < end && *j - *(j - 1) < gap) j = std::lower_bound(j + 1, end, *j + gap);
          const auto a = static_cast<size_t>(i - time.begin()), b = static_cast<size_t>(j - time.begin());
          sink += static_cast<uint64_t>(time[a]) + (b - a == 1 ? f.cls[a] : static_cast<uint64_t>(time[b - 1]) + f.classes(a, b));
          i = j;
        }
      }
      full_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
    }
    std::sort(compact_us.begin(), compact_us.end());
    std::sort(full_us.begin(), full_us.end());
    std::printf("timeline_walk_zoom%lld_us %.1f\ntimeline_walk_zoom%lld_full_arrays_us %.1f\ntimeline_walk_zoom%lld_marks %llu\n",
                static_cast<long long>(zoom), compact_us[5], static_cast<long long>(zoom), full_us[5],
                static_cast<long long>(zoom), static_cast<unsigned long long>(marks / 10));
    if (sink == 42) std::printf(" ");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_scale_open FILE [SEEKS=20]\n");
    return 2;
  }
  const int seeks = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  auto t = Clock::now();
  double c = cpu_s();
  // Each stage of the load as it starts: wall time since the start and RSS
  // (which stage holds the memory).
  std::string stage;
  app::LoadResult r = app::load_traces({argv[1]}, [&](float, const std::string& now) {
    if (now == stage) return;
    stage = now;
    std::printf("load_stage %.3f s, rss %.0f MiB, peak %.0f MiB: %s\n", since(t), rss_mib(),
                peak_rss_mib(), now.c_str());
  });
  const double load_s = since(t);
  if (!r.model) {
    std::fprintf(stderr, "bench_scale_open: %s", r.errors.c_str());
    return 2;
  }
  const analysis::Model& m = *r.model;
  std::printf("events %zu\nfunctions %zu\nload_s %.3f\nload_cpu_s %.3f\nrss_after_load_mib %.0f\n",
              m.num_events(), m.functions().size(), load_s, cpu_s() - c, rss_mib());
  // What the load holds, and what the GUI's diagnostics add (findings held,
  // the transient peak while they are made): the GUI's peak.
  {
    std::printf("model_bytes_mib %.0f\ntimeline_bytes_mib %.0f\n", m.memory_bytes() / 1048576.0,
                r.timeline->memory_bytes() / 1048576.0);
    const double before = rss_mib();
    malloc_trim(0);
    std::printf("load_trim_freed_mib %.0f\n", before - rss_mib());
    // As the GUI keeps them (Note [Compact findings]), then as Finding objects.
    auto measure = [&](const char* name, auto run) {
      malloc_trim(0);
      reset_peak();
      const double rss0 = rss_mib();
      const auto t0 = Clock::now();
      const double c0 = cpu_s();
      auto findings = run();
      std::printf("%s_s %.3f\n%s_cpu_s %.3f\n%s_findings %zu\n%s_bytes_mib %.0f\n%s_held_rss_mib %.0f\n"
                  "%s_peak_rss_mib %.0f\n",
                  name, since(t0), name, cpu_s() - c0, name, findings.size(), name,
                  analysis::findings_memory_bytes(findings) / 1048576.0, name, rss_mib() - rss0, name,
                  hwm_mib() - rss0);
      malloc_trim(0);  // what the GUI's diagnostics job does (Note [Returning freed memory])
      std::printf("%s_held_rss_trimmed_mib %.0f\n", name, rss_mib() - rss0);
    };
    measure("diagnose_table", [&] { return analysis::diagnose_table(m); });
    measure("diagnose_vector", [&] { return analysis::diagnose(m); });
    malloc_trim(0);
  }
  // The "building the graph" stage structure by structure: each built again
  // alone (time, CPU, and the RSS it adds while alive); the timeline index's
  // bytes per event as it counts them.
  {
    r.timeline.reset();
    r.story.reset();
    auto structure = [&](const char* name, auto build) {
      const double rss0 = rss_mib();
      const auto t0 = Clock::now();
      const double c0 = cpu_s();
      auto built = build();
      std::printf("build_%s_s %.3f\nbuild_%s_cpu_s %.3f\nbuild_%s_rss_mib %.0f\n", name, since(t0), name,
                  cpu_s() - c0, name, rss_mib() - rss0);
      return built;
    };
    r.timeline = structure("timeline", [&] { return std::make_shared<render::TimelineIndex>(m); });
    std::printf("timeline_bytes_per_event %.3f\ntimeline_tracks %zu\n",
                static_cast<double>(r.timeline->memory_bytes()) / static_cast<double>(std::max<size_t>(m.num_events(), 1)),
                r.timeline->tracks().size());
    timeline_walk(*r.timeline);
    r.timeline.reset();
    r.story = structure("story", [&] { return std::make_shared<const render::RunStory>(m); });
    auto again = structure("scene", [&] { return std::make_shared<render::GraphScene>(m); });
    // A digest of what the scene holds: a change to its construction must
    // leave it the same.
    uint64_t h = 14695981039346656037ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (const render::SceneNode& n : again->nodes()) {
      for (uint64_t v : {uint64_t{n.first}, n.signature, uint64_t{n.instance}, uint64_t{n.module}, uint64_t{n.chain},
                         uint64_t{n.gen}, uint64_t{n.hook_kinds}, uint64_t{n.max_owners}, uint64_t{n.id_digits}}) {
        mix(v);
      }
    }
    for (size_t f = 0; f < m.functions().size(); ++f) mix(again->slot_of(static_cast<analysis::FunctionIndex>(f)));
    for (const auto& [a, b] : again->edges()) mix(uint64_t{a} << 32 | b);
    for (size_t e = 0; e < m.edges().size(); ++e) mix(again->edge_of(static_cast<uint32_t>(e)));
    for (const render::SceneGroup& g : again->groups()) {
      mix(static_cast<uint64_t>(g.kind));
      mix(g.parent);
      for (char ch : g.name) mix(static_cast<unsigned char>(ch));
      for (uint32_t v : g.nodes) mix(v);
    }
    std::printf("scene_slots %zu\nscene_groups %zu\nscene_digest %016llx\n", again->nodes().size(), again->groups().size(),
                static_cast<unsigned long long>(h));
  }
  t = Clock::now();
  c = cpu_s();
  // The scene (slots, groups) and the story came from load_traces, on the
  // loader thread (Note [Scene off the UI thread]); the view folds it.
  const render::GraphScene& scene = *r.scene;
  const render::FoldedGraph folded = scene.fold(std::vector<uint8_t>(scene.groups().size(), 0));
  std::printf("fold_s %.3f\nfold_cpu_s %.3f\n", since(t), cpu_s() - c);
  t = Clock::now();
  c = cpu_s();
  const std::vector<render::Vec2> sizes = scene.box_sizes(
      folded, [](std::string_view s) { return 7.f * static_cast<float>(s.size()); }, render::BoxMetrics{});
  std::printf("box_sizes_s %.3f\nbox_sizes_cpu_s %.3f\n", since(t), cpu_s() - c);
  render::LayoutInput in;
  in.graph = folded.graph;
  in.sizes = sizes;
  t = Clock::now();
  c = cpu_s();
  const render::Layout l = render::compute_layout(in);
  std::printf("layout_s %.3f\nlayout_cpu_s %.3f\nlayout_units %d\nlayout_simplified %d\n", since(t), cpu_s() - c, in.graph.num_nodes,
              l.simplified ? 1 : 0);
  std::vector<double> seek;
  for (int k = 0; k < seeks; ++k) {
    const size_t at = (m.num_events() - 1) * static_cast<size_t>(k + 1) / static_cast<size_t>(seeks);
    c = cpu_s();
    const analysis::State s = m.state_at(at);
    seek.push_back((cpu_s() - c) * 1e3);
    if (s.functions.empty() && at > m.num_events() / 2) std::printf("(no Functions at %zu)\n", at);
  }
  std::sort(seek.begin(), seek.end());
  std::printf("state_at_median_cpu_ms %.3f\nstate_at_max_cpu_ms %.3f\n", seek[seek.size() / 2], seek.back());
  // Note [Lazy state]: a seek that builds only what a zoomed view shows, the
  // state of kShown Functions (a window of them, as a region on screen holds).
  constexpr size_t kShown = 2000;
  std::vector<double> lazy;
  size_t live = 0, hooks = 0;
  analysis::FunctionAt fa;
  const size_t nf = m.functions().size();
  for (int k = 0; k < seeks; ++k) {
    const size_t at = (m.num_events() - 1) * static_cast<size_t>(k + 1) / static_cast<size_t>(seeks);
    const auto first = static_cast<analysis::FunctionIndex>(nf > kShown ? (nf - kShown) * static_cast<size_t>(k) / seeks : 0);
    const auto t0 = Clock::now();
    const analysis::StateView v(m, at);
    for (analysis::FunctionIndex f = first; f < std::min(nf, first + kShown); ++f) {
      if (v.function_at(f, fa)) {
        ++live;
        hooks += fa.num_hooks();
      }
    }
    lazy.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(lazy.begin(), lazy.end());
  std::printf("lazy_seek_%zu_median_ms %.3f\nlazy_seek_%zu_max_ms %.3f\nlazy_seek_live_per_seek %zu\nlazy_seek_hooks_per_seek %zu\n",
              kShown, lazy[lazy.size() / 2], kShown, lazy.back(), live / static_cast<size_t>(seeks),
              hooks / static_cast<size_t>(seeks));
  // Note [Lazy seeks in the GUI]: the GUI's Session far seeks. On the UI
  // thread: go_to() (the move and the StateView) and the slowest poll() of
  // the frames until the worker's State is in (taking it, its owners' hooks
  // counted and the old State freed off the UI thread); and how long until
  // the full State is there.
  {
    app::Session s;
    s.set_model(r.model, false, 0);
    std::vector<double> go, take, ready;
    for (int k = 0; k < seeks; ++k) {
      const size_t at = (m.num_events() - 1) * static_cast<size_t>(seeks - k) / static_cast<size_t>(seeks + 1);
      auto t0 = Clock::now();
      s.go_to(at);
      go.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (!s.state_pending()) continue;  // below the threshold: synchronous
      // poll() once a "frame" until the State is in: its slowest call.
      double slowest = 0.0;
      while (s.state_pending()) {
        const auto p0 = Clock::now();
        s.poll();
        slowest = std::max(slowest, std::chrono::duration<double, std::milli>(Clock::now() - p0).count());
        if (s.state_pending()) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      ready.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      take.push_back(slowest);
      if (s.state_pending() || !s.full_state() || s.full_state()->index != at) std::printf("(session seek to %zu not taken)\n", at);
    }
    auto median = [](std::vector<double>& v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    const double go_median = median(go), take_median = median(take), ready_median = median(ready);
    std::printf("session_lazy %d\nsession_seek_ui_median_ms %.3f\nsession_seek_ui_max_ms %.3f\n", s.lazy() ? 1 : 0,
                go_median, go.empty() ? 0.0 : go.back());
    std::printf("session_poll_ui_median_ms %.3f\nsession_poll_ui_max_ms %.3f\nsession_state_ready_median_ms %.3f\n",
                take_median, take.empty() ? 0.0 : take.back(), ready_median);
  }
  std::printf("peak_rss_mib %.0f\n", peak_rss_mib());
  return 0;
}
