#pragma once
// The differences of two traces at pairs of events (the Compare view's
// table, outlines and hook-order diff), computed on a worker thread and kept
// for the pairs seen last. See Note [Differences off the UI thread].

#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "analysis/compare.h"
#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Differences off the UI thread]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every step of A's current event moves the Compare view's pair of events,
// and diffing two large traces at a pair (two replays, every Function's
// signature, every hook's fires for the order) takes hundreds of ms on 20k
// Functions: done in the frame, playback crawled. PointDiffs computes one
// pair at a time on its own thread, the latest asked for first (pairs asked
// for meanwhile and no longer wanted are skipped), and keeps the last
// `capacity` results, so stepping back and forth costs nothing. The view
// shows the last result it has until the one for its pair lands. Signatures
// and generations (Note [Parameter copies in a diff]) are computed once per
// pair of models, on the worker.
struct PointDiff {
  size_t at_a = 0, at_b = 0;
  ModelDiff diff;
  std::vector<OrderDiff> order;
  std::string error;  // what went wrong computing it ("" when nothing did)
};

class PointDiffs {
 public:
  // The models and findings are kept alive by this object.
  PointDiffs(std::shared_ptr<const Model> a, std::vector<Finding> findings_a, std::shared_ptr<const Model> b,
             std::vector<Finding> findings_b, size_t capacity = 64);
  ~PointDiffs();  // waits for the pair being computed
  PointDiffs(const PointDiffs&) = delete;
  PointDiffs& operator=(const PointDiffs&) = delete;

  // The result for (at_a, at_b) when computed; else asks the worker for it
  // (replacing the pair asked for before, if it has not started) and returns nullptr.
  std::shared_ptr<const PointDiff> get(size_t at_a, size_t at_b);
  // The same, waiting for it (headless runs and tests).
  std::shared_ptr<const PointDiff> wait(size_t at_a, size_t at_b);
  // How many pairs were computed (cache hits do not count).
  size_t computed() const;

 private:
  std::shared_ptr<const PointDiff> find_locked(size_t at_a, size_t at_b);
  void run();

  std::shared_ptr<const Model> a_, b_;
  std::vector<Finding> findings_a_, findings_b_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::list<std::shared_ptr<const PointDiff>> cache_;  // most recently used first
  bool wanted_ = false, stop_ = false;
  size_t want_a_ = 0, want_b_ = 0;
  size_t computed_ = 0;
  std::thread worker_;
};

}  // namespace hookscope::analysis
