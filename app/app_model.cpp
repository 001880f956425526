// A model reaching the app (Note [Publishing a model]): files opened or
// dropped, the loaders' results, a live run grown; and the background work
// each model starts (the Events filter's rows, the findings, the compare
// diff), polled once a frame. The frame loop and windows are in app.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "app.h"

namespace hookscope::app {

// ---------------------------------------------------------------- opening

void App::open_files(std::vector<std::string> files) {
  if (files.empty()) return;
  loader_.start(std::move(files));
}

void App::open_compare(std::vector<std::string> files) {
  if (files.empty()) return;
  compare_.files = files;
  compare_.error.clear();
  compare_.loader.start(std::move(files));
  show_compare_ = true;
}

void App::on_drop(std::vector<std::string> files) {
  if (ImGui::GetIO().KeyShift) {
    open_compare(std::move(files));
  } else {
    open_files(std::move(files));
  }
}

void App::adopt(LoadResult result) {
  error_ += result.errors;
  // Headless runs have nobody to read the dialog: say it on stderr too, and
  // exit 2 rather than write a picture of what was not opened.
  if (args_.headless_frames() && !result.errors.empty()) {
    fmt::print(stderr, "hookscope: could not open:\n{}", result.errors);
    request_quit(2);
  }
  if (args_.headless_frames() && !result.warnings.empty()) {
    fmt::print(stderr, "hookscope: read in part:\n{}", result.warnings);
  }
  if (!result.model) return;  // nothing readable: what was open stays open
  warning_ = result.warnings;
  if (!warning_.empty() && warning_.back() == '\n') warning_.pop_back();
  live_.stop();
  files_ = result.files;
  title_ = files_.size() == 1 ? files_[0]
                              : fmt::format("{} (+{} more)", files_[0], files_.size() - 1);
  recent_.add(files_);
  publish_model(std::move(result.model), false, std::move(result.scene), std::move(result.story),
                std::move(result.timeline));
}

namespace {

// Whether a Function is live right after event `at` (State::functions not
// empty): from the model's lifetimes, without building the State the
// Session builds next.
bool any_live_function(const analysis::Model& model, size_t at) {
  return std::any_of(model.functions().begin(), model.functions().end(), [&](const analysis::FunctionInfo& f) {
    return f.created_at <= at && at < f.released_at;
  });
}

}  // namespace

// Note [Publishing a model]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A model (a trace opened, a live run grown) reaches the views here and only
// here: the graph and timeline views, the Session (current event, selection),
// the Events panel's rows, the findings and the compare diff. Every other
// panel reads session_.model() each frame and keeps caches keyed by the model
// pointer, so nothing else has to be told. A panel that keeps state across
// models adds its reset here, not in its own file.
void App::publish_model(std::shared_ptr<const analysis::Model> model, bool keep_position,
                        std::shared_ptr<render::GraphScene> scene, std::shared_ptr<const render::RunStory> story,
                        std::shared_ptr<render::TimelineIndex> timeline) {
  // The views point at the model: give them the new one before the old goes.
  // What the loader thread built for it comes along; the rest is built here.
  if (model && story && timeline) {
    timeline_.set_model(model.get(), std::move(*timeline), *story);
  } else {
    timeline_.set_model(model.get());
  }
  size_t at = 0;
  bool at_given = false;
  if (!keep_position && args_.at.given() && model) {
    try {
      at = args_.at.in(model->num_events(), "--at");
      at_given = true;
    } catch (const std::invalid_argument& e) {  // a user error: say so (exit 2 when headless)
      if (args_.headless_frames()) {
        fmt::print(stderr, "hookscope: {}\n", e.what());
        request_quit(2);
      }
      warning_ = e.what();
    }
    args_.at.text.clear();  // only for the first trace opened
  }
  if (!keep_position && !at_given && model && model->num_events() > 0) {
    // Open at the end, as a debugger opens at the last frame; but a run that
    // released everything before it ended would show an empty graph there:
    // then open at its last backward pass, the graph and its hooks complete.
    at = model->num_events() - 1;
    const auto& ends = model->events_of_kind(trace::EventKind::kBackwardEnd);
    if (!ends.empty() && !any_live_function(*model, at)) at = ends.back();
  }
  // The graph's first layout is that of the opening event (Note [One layout
  // at open]): --play opens at the first.
  if (keep_position) {
    graph_.update_model(model.get());
  } else {
    const bool plays = args_.play > 0.0 && model;
    const size_t open_at = plays ? 0 : model ? std::min(at, model->num_events() - 1) : 0;
    graph_.set_model(model.get(), std::move(scene), std::move(story),  // built by the loader
                     model && model->num_events() > 0 ? static_cast<analysis::EventIndex>(open_at) : analysis::kNever);
  }
  session_.set_model(model, keep_position, at);
  if (!keep_position && args_.select >= 0 && model) {
    for (uint32_t s = 0; s < model->num_traces(); ++s) {
      const auto f = model->find_function(s, static_cast<uint64_t>(args_.select));
      if (f != analysis::kNoIndex) {
        session_.select_function(f);
        graph_.focus(f);
        break;
      }
    }
    if (session_.selected_function() == analysis::kNoIndex) {
      warning_ = fmt::format("--select {}: no Function with that id in the trace (ids are the #N on the boxes)",
                             args_.select);
      if (args_.headless_frames()) {
        fmt::print(stderr, "hookscope: {}\n", warning_);
        request_quit(2);
      }
    }
    args_.select = -1;
  }
  if (!keep_position && args_.play > 0.0 && model) {
    session_.set_speed(args_.play);
    session_.go_first();
    session_.set_playing(true);
    args_.play = 0.0;
  }
  rows_.retire();
  rows_.model = nullptr;
  rows_.expression.clear();
  rows_.all = true;
  rows_.rows.clear();
  set_filter(filter_text_);
  if (!keep_position) {
    findings_.findings = std::make_shared<const analysis::FindingTable>();
    findings_.ready = false;
    findings_.model = nullptr;
    findings_.described.reset();
  }
  findings_.wanted = model;
  compare_.drop_diff();
  scroll_events_ = true;
}

bool App::compare_findings_ready() const {
  if (!compare_.findings.valid()) return false;
  if (args_.headless_frames()) compare_.findings.wait();
  return compare_.findings.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

void App::set_filter(const std::string& expression) {
  std::snprintf(filter_text_, sizeof(filter_text_), "%s", expression.c_str());
  const analysis::Model* model = session_.model();
  if (rows_.model == model && rows_.expression == expression) return;
  FilterParseError error;
  EventFilter filter = EventFilter::parse(expression, &error);
  rows_.error = error;
  if (!error.message.empty()) return;  // keep showing the last good rows
  rows_.model = model;
  rows_.expression = expression;
  rows_.retire();
  if (filter.empty() || !model) {
    rows_.all = true;
    rows_.rows.clear();
    return;
  }
  rows_.cancel = std::make_shared<std::atomic<bool>>(false);
  rows_.pending = std::async(std::launch::async, [filter = std::move(filter), shared = session_.shared_model(),
                                                  cancel = rows_.cancel] {
    return filter.select(*shared, 0, shared->num_events(), cancel.get());
  });
  if (args_.headless_frames()) rows_.pending.wait();
}

void App::poll_background() {
  if (auto r = args_.headless_frames() ? loader_.wait() : loader_.poll()) {
    initial_load_pending_ = false;
    adopt(std::move(*r));
  }
  if (auto r = args_.headless_frames() ? compare_.loader.wait() : compare_.loader.poll()) {
    compare_.error = r->errors;
    error_ += r->errors;
    if (args_.headless_frames() && !r->errors.empty()) {  // as for the main files (adopt)
      fmt::print(stderr, "hookscope: could not open for --compare:\n{}", r->errors);
      request_quit(2);
    }
    if (r->model) {
      compare_.model = std::move(r->model);
      compare_.findings = std::async(std::launch::async, [m = compare_.model] {
                            return analysis::diagnose(*m);
                          }).share();
      compare_.files = r->files;
      compare_.drop_diff();
    }
  }
  std::erase_if(rows_.retired, [](auto& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  if (rows_.pending.valid() &&
      rows_.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    rows_.rows = rows_.pending.get();
    rows_.all = false;
    scroll_events_ = true;
  }
  if (!findings_.pending.valid() && findings_.wanted && findings_.wanted.get() != findings_.model) {
    findings_.running = findings_.wanted;
    findings_.pending = std::async(std::launch::async, [m = findings_.running] {
      analysis::FindingTable t = analysis::diagnose_table(*m);
      release_free_memory();  // its temporaries (Note [Returning freed memory])
      return t;
    });
  }
  if (findings_.pending.valid()) {
    if (args_.headless_frames()) findings_.pending.wait();
    if (findings_.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        findings_.findings = std::make_shared<const analysis::FindingTable>(findings_.pending.get());
      } catch (const std::exception& e) {
        warning_ = fmt::format("diagnostics failed: {}", e.what());
        findings_.findings = std::make_shared<const analysis::FindingTable>();
      }
      findings_.model = findings_.running.get();
      findings_.described = findings_.running;
      // Findings of an older model are shown until the latest one's are in;
      // `ready` means they describe the model on screen.
      findings_.ready = findings_.model == session_.model();
    }
  }
  poll_compare();
  // Screenshots and test frames see each layout landed; a benchmark only in
  // the warm-up frames it does not count (report()): later layouts land in
  // the background, as they do for a user.
  if (args_.headless_frames() && session_.model() &&
      (args_.bench_frames <= 0 || frame_ms_.size() < kBenchWarmupFrames)) {
    graph_.wait_for_layout();
  }
}

// The diff needs both models and both sides' findings; it is made off the
// UI thread (Note [Compare off the UI thread]).
void App::poll_compare() {
  // Pictures and test frames see it landed; --bench-frames measures the interactive way.
  const bool wait = args_.headless_frames() && args_.bench_frames <= 0;
  std::erase_if(compare_.retired, [](auto& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  if (compare_.model && session_.model() && findings_.ready && compare_.diffed_against != session_.model() &&
      compare_findings_ready()) {
    compare_.drop_diff();
    compare_.diffed_against = session_.model();
    compare_.pending = std::async(std::launch::async, [a = session_.shared_model(), table = findings_.findings,
                                                       b = compare_.model, findings_b = compare_.findings] {
      CompareState::Diffed d;
      d.findings_a = table->to_vector();
      d.diff = std::make_unique<analysis::ModelDiff>(analysis::diff_models(*a, d.findings_a, *b, findings_b.get()));
      return d;
    });
    if (!wait) return;  // it lands in a later frame, whatever its speed: this one says "comparing"
  }
  if (!compare_.pending.valid()) return;
  if (wait) compare_.pending.wait();
  if (compare_.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  try {
    CompareState::Diffed d = compare_.pending.get();
    compare_.findings_a = std::move(d.findings_a);
    compare_.diff = std::move(d.diff);
  } catch (const std::exception& e) {  // B's diagnosis failed (std::bad_alloc): nothing to compare
    compare_.error = fmt::format("could not compare: {}", e.what());
    compare_.model.reset();
    compare_.findings = {};
  }
}

// ---------------------------------------------------------------- live

void App::poll_live() {
  auto update = live_.poll(args_.headless_frames());
  if (!update) return;
  error_ += update->error;
  if (update->model) publish_model(std::move(update->model), session_.model() != nullptr);
}

}  // namespace hookscope::app
