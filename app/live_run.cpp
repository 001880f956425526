#include "live_run.h"

#include <fmt/format.h>

#include "trace/strings.h"

namespace hookscope::app {

void LiveSink::on_chunk(std::unique_ptr<trace::Chunk> chunk) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(std::move(chunk));
}

void LiveSink::drain(std::vector<std::unique_ptr<trace::Chunk>>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& c : pending_) out.push_back(std::move(c));
  pending_.clear();
}

void LiveRun::start(const scenarios::ScenarioArgs& scenario, std::string title) {
  stop();
  scenario_ = scenario.scenario;
  title_ = std::move(title);
  recorder_ = std::make_unique<trace::Recorder>(sink_);
  recorder_->start();
  done_ = false;
  finished_ = false;
  thread_ = std::thread([this, scenario] {
    std::string result;
    try {
      result = scenarios::run_scenario(scenario);
    } catch (const std::exception& e) {
      result = std::string("the scenario failed: ") + e.what();
    }
    {
      std::lock_guard<std::mutex> lock(result_mutex_);
      result_ = result;
    }
    done_ = true;
  });
}

void LiveRun::stop() {
  if (thread_.joinable()) thread_.join();
  if (recorder_ && recorder_->attached()) recorder_->finish();
  recorder_.reset();
  chunks_.clear();
}

std::string LiveRun::result() const {
  std::lock_guard<std::mutex> lock(result_mutex_);
  return result_;
}

std::optional<LiveRun::Update> LiveRun::poll(bool wait) {
  if (!recorder_ || finished_) return std::nullopt;
  if (wait && thread_.joinable()) thread_.join();
  bool finishing = false;
  if (done_ && thread_.joinable()) thread_.join();
  if (done_ && !thread_.joinable() && recorder_->attached()) {
    recorder_->finish();  // hands over the last partial chunks
    finishing = true;
  }
  std::vector<std::unique_ptr<trace::Chunk>> fresh;
  sink_.drain(fresh);
  for (auto& c : fresh) chunks_.push_back(std::move(c));
  if (!fresh.empty()) pending_ = true;
  // Rebuilding the model costs about its size: at most a few times a second.
  const auto now = std::chrono::steady_clock::now();
  const bool due = now - rebuilt_ > std::chrono::milliseconds(400);
  if (!finishing && !(pending_ && due)) return std::nullopt;
  pending_ = false;
  rebuilt_ = now;
  trace::TraceData data;
  data.source = title_;
  data.header.scenario = scenario_;
  std::vector<const trace::Chunk*> view;
  for (auto& c : chunks_) view.push_back(c.get());
  data.events = trace::merge_chunks(view);
  data.strings = trace::strings_since(0);
  if (finishing) finished_ = true;
  Update update;
  try {
    update.model = std::make_shared<const analysis::Model>(std::move(data));
  } catch (const std::exception& e) {
    update.error = fmt::format("the live trace cannot be analysed: {}\n", e.what());
    finished_ = true;
  }
  return update;
}

}  // namespace hookscope::app
