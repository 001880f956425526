#include "scenarios/ddp_scenarios.h"
#include "scenarios/registry.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "autograd/node.h"
#include "ddp/ddp.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "trace/emitters_ddp.h"
#include "trace/strings.h"

namespace hookscope::scenarios {

using trace::FailureMode;
using trace::RecoveryStep;

namespace {

struct InjectedFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The steps at which fail_rank fails: its k-th incarnation fails at fail_steps[k].
std::vector<int> failure_steps(const DdpScenarioOptions& o) {
  std::vector<int> steps;
  if (o.name != "recovery") return steps;
  const int first = o.fail_step >= 0 ? o.fail_step : std::max(1, o.steps / 3);
  const int interval = std::max(1, (o.steps - 1 - first) / std::max(1, o.recoveries));
  for (int k = 0; k < o.recoveries; ++k) steps.push_back(first + k * interval);
  return steps;
}

// A trunk MLP with two heads; forward uses only `head`. `aux` is the
// parameter set that unused-parameter detection finds.
class TwoHeadNet : public nn::Module {
 public:
  TwoHeadNet(const std::vector<int64_t>& layers, uint64_t seed, Device device) {
    std::vector<int64_t> trunk_sizes(layers.begin(), layers.end() - 1);
    trunk = nn::mlp(trunk_sizes, seed, device);
    head = std::make_shared<nn::Linear>(trunk_sizes.back(), layers.back(), seed + 101, device);
    aux = std::make_shared<nn::Linear>(trunk_sizes.back(), layers.back(), seed + 202, device);
    for (auto& p : named_parameters()) p.tensor.set_name(p.name);
  }
  Tensor forward(const Tensor& x) override { return head->forward(relu(trunk->forward(x))); }
  std::string name() const override { return "TwoHeadNet"; }
  std::vector<nn::NamedParameter> named_parameters(const std::string& prefix = "") const override {
    auto out = trunk->named_parameters(prefix + "trunk.");
    for (auto& p : head->named_parameters(prefix + "head.")) out.push_back(p);
    for (auto& p : aux->named_parameters(prefix + "aux.")) out.push_back(p);
    return out;
  }
  std::shared_ptr<nn::Sequential> trunk;
  std::shared_ptr<nn::Linear> head, aux;
};

std::shared_ptr<nn::Module> build_model(const DdpScenarioOptions& o) {
  if (o.name == "unused-parameter" || o.name == "marked-twice") {
    return std::make_shared<TwoHeadNet>(o.layers, o.seed, o.device);
  }
  return nn::mlp(o.layers, o.seed, o.device);
}

class RankRun {
 public:
  RankRun(const DdpScenarioOptions& o, std::shared_ptr<ddp::Store> store, int rank,
          int incarnation, int group_generation, int start_step)
      : o_(o), store_(std::move(store)), fail_steps_(failure_steps(o)), data_(o.layers.front(),
        o.layers.back(), o.seed) {
    rep_.rank = rank;
    rep_.generation = incarnation;
    gen_ = group_generation;
    step_ = start_step;
    replacement_ = incarnation > 0;
  }

  RankReport run() {
    trace::set_thread_rank(static_cast<uint16_t>(rep_.rank));
    // Note [One CUDA device per thread]: this rank's GPU, the same one the
    // NCCL group picks.
    if (o_.device == Device::kCUDA) cuda_set_device(rep_.rank % cuda_device_count());
    module_ = build_model(o_);
    nn::SGD sgd(module_->parameters(), o_.lr);
    // Even with no step left (a replacement of a rank that died after its
    // last step) the rank joins the group and its final barrier: its peers
    // wait for it.
    for (;;) {
      std::shared_ptr<ddp::ProcessGroup> pg;
      std::unique_ptr<ddp::DistributedDataParallel> ddp, second;
      try {
        pg = form_group();
        ddp = make_ddp(pg);
        if (o_.name == "shared-module") second = make_ddp(pg);
        replacement_ = false;  // it holds the group's parameters now
        if (gen_ > 0) {
          recovery_step(RecoveryStep::kDdpRebuilt, "DDP rebuilt on the same module");
          recovery_step(RecoveryStep::kResumed, fmt::format("training resumes at step {}", step_));
        }
        train(sgd, pg, ddp, second);
        snapshot(ddp ? *ddp : *second);
        pg->barrier()->wait();  // nobody tears down while a peer still talks to it
        ddp.reset();
        second.reset();
        kept_.clear();
        destroy_group(pg, false);
        return rep_;
      } catch (const InjectedFailure& e) {
        rep_.failed = true;
        trace::emit_failure(o_.fail_mode, static_cast<uint32_t>(rep_.rank), trace::intern(e.what()));
        if (pg) pg->abort();
        ddp.reset();
        second.reset();
        kept_.clear();
        destroy_group(pg, true);
        return rep_;
      } catch (const ddp::CollectiveError& e) {
        // Room for failures nobody injected (a rank killed from outside,
        // Note [Launch protocol]) besides the planned ones.
        if (o_.name != "recovery" || rep_.recoveries >= o_.recoveries + 3) {
          rep_.error = e.what();
          if (pg) pg->abort();
          return rep_;
        }
        recovery_step(RecoveryStep::kDetected, e.what());
        if (pg) pg->abort();
        ddp.reset();
        second.reset();
        kept_.clear();
        recovery_step(RecoveryStep::kDdpDestroyed, "DDP and its Reducer destroyed");
        destroy_group(pg, true);
        recovery_step(RecoveryStep::kGroupDestroyed, "process group destroyed");
        ++gen_;
        ++rep_.recoveries;
      } catch (const std::exception& e) {
        rep_.error = e.what();
        if (pg) pg->abort();
        ddp.reset();
        second.reset();
        kept_.clear();
        destroy_group(pg, true);
        return rep_;
      }
    }
  }

 private:
  std::shared_ptr<ddp::ProcessGroup> form_group() {
    ddp::ProcessGroupOptions opts;
    opts.timeout = o_.timeout;
    // Note [Rendezvous timeouts]: a rank that dies while a group forms is
    // noticed by its peers only when their rendezvous times out; they then
    // form the next generation, where its replacement may already wait. Later
    // generations, and a replacement more so, wait longer, so that the ranks
    // meet instead of chasing each other from generation to generation.
    opts.rendezvous_timeout = std::min<std::chrono::milliseconds>(
        std::chrono::seconds(20) * (1 + gen_ + (replacement_ ? 1 : 0)), std::chrono::seconds(180));
    if (!o_.bind.empty()) {  // an interface name, else an address
      if (std::ifstream("/sys/class/net/" + o_.bind + "/ifindex")) {
        opts.iface = o_.bind;
      } else {
        opts.hostname = o_.bind;
      }
    }
    write_note("progress", fmt::format("{} {}", gen_, step_));
    auto store = ddp::prefixed(store_, fmt::format("g{}/", gen_));
    auto pg = resolve_backend(o_) == "nccl"
                  ? ddp::make_nccl_process_group(store, rep_.rank, o_.world_size, opts)
                  : ddp::make_gloo_process_group(store, rep_.rank, o_.world_size, opts);
    group_id_ = (static_cast<uint64_t>(gen_) << 16) | static_cast<uint64_t>(rep_.rank);
    trace::emit_process_group_created(group_id_, static_cast<uint64_t>(o_.world_size),
                                      static_cast<uint32_t>(gen_));
    if (gen_ > 0) {
      recovery_step(RecoveryStep::kGroupFormed,
                    fmt::format("new process group (generation {}) of {} ranks", gen_,
                                o_.world_size));
      // Parameters come from a rank that survived, not from a fresh
      // replacement: the one furthest on (a peer's death can end one
      // survivor's allreduce and not another's, so survivors may be a step
      // apart); every rank continues at that rank's step (Note [Launch
      // protocol]).
      // With no survivor (every rank replaced) all start from the same
      // seeded weights, at the furthest step any was told.
      auto roles = pg->allgather(fmt::format("{}:{}", replacement_ ? "new" : "old", step_));
      int best_old = -1, best_new = -1, step_old = -1, step_new = -1;
      for (size_t r = 0; r < roles.size(); ++r) {
        const bool old = roles[r].rfind("old:", 0) == 0;
        const int s = std::stoi(roles[r].substr(4));
        int& best = old ? best_old : best_new;
        int& best_step = old ? step_old : step_new;
        if (s > best_step) {
          best_step = s;
          best = static_cast<int>(r);
        }
      }
      root_ = best_old >= 0 ? best_old : std::max(best_new, 0);
      step_ = best_old >= 0 ? step_old : std::max(step_new, step_);
    }
    return pg;
  }

  void destroy_group(std::shared_ptr<ddp::ProcessGroup>& pg, bool aborted) {
    if (!pg) return;
    pg.reset();
    trace::emit_process_group_destroyed(group_id_, aborted);
  }

  std::unique_ptr<ddp::DistributedDataParallel> make_ddp(std::shared_ptr<ddp::ProcessGroup> pg) {
    ddp::DdpOptions d;
    d.broadcast_root = root_;
    d.reducer.policy = o_.policy;
    d.reducer.bucket_cap_bytes = o_.bucket_cap_bytes;
    d.reducer.first_bucket_bytes = o_.first_bucket_bytes;
    d.reducer.find_unused_parameters =
        o_.name == "unused-parameter" || o_.name == "marked-twice";
    d.reducer.fault = [this](ddp::FaultPoint point, size_t) { maybe_fail(point); };
    return std::make_unique<ddp::DistributedDataParallel>(module_, std::move(pg), std::move(d));
  }

  void maybe_fail(ddp::FaultPoint point) {
    if (rep_.rank != o_.fail_rank || rep_.generation >= static_cast<int>(fail_steps_.size()) ||
        step_ != fail_steps_[static_cast<size_t>(rep_.generation)]) {
      return;
    }
    const bool at_hook = o_.fail_point == "hook" || o_.fail_mode != FailureMode::kThrow;
    if ((point == ddp::FaultPoint::kInHook) != at_hook) return;
    const std::string what = fmt::format(
        "injected failure ({}) on rank {} at step {} {}", trace::to_string(o_.fail_mode),
        rep_.rank, step_, at_hook ? "inside its autograd hook" : "before a collective");
    if (o_.fail_mode == FailureMode::kKill) {
      if (o_.rank < 0) {
        throw std::invalid_argument("--fail-mode kill needs ranks as processes (hookscope-cli launch)");
      }
      trace::emit_failure(o_.fail_mode, static_cast<uint32_t>(rep_.rank), trace::intern(what));
      write_failure_note();
      // The writer copies each thread's new events to the file every 50 ms
      // (Note [Live chunks reach the file]): the rank's own record of the
      // failure it injected reaches the file before the kill takes the rest.
      std::this_thread::sleep_for(std::chrono::milliseconds(120));
      ::kill(::getpid(), SIGKILL);
    }
    if (o_.fail_mode == FailureMode::kTimeout) {
      // A hung rank: peers time out; a watchdog would kill it later.
      std::this_thread::sleep_for(o_.timeout + std::chrono::milliseconds(500));
    }
    if (o_.rank >= 0) write_failure_note();
    throw InjectedFailure(what);
  }

  // Tells the launcher where this incarnation died, so it can start a replacement.
  void write_failure_note() {
    if (o_.store_dir.empty()) return;
    std::ofstream(fmt::format("{}/failed.rank{}.gen{}", o_.store_dir, rep_.rank, rep_.generation))
        << step_ << " " << gen_ << "\n";
  }

  // Note [Launch protocol]: "progress.rank<r>" holds "<group generation> <step>".
  void write_note(const char* name, const std::string& text) {
    if (o_.store_dir.empty() || o_.rank < 0) return;
    const std::string path = fmt::format("{}/{}.rank{}", o_.store_dir, name, rep_.rank);
    std::ofstream(path + ".tmp") << text << "\n";
    std::rename((path + ".tmp").c_str(), path.c_str());
  }

  void train(nn::SGD& sgd, const std::shared_ptr<ddp::ProcessGroup>& pg,
             std::unique_ptr<ddp::DistributedDataParallel>& ddp,
             std::unique_ptr<ddp::DistributedDataParallel>& second) {
    const bool kept_alive = o_.name == "kept-alive";
    for (; step_ < o_.steps; ++step_) {
      if (o_.name == "shared-module" && step_ == o_.steps / 2 && ddp) {
        ddp.reset();  // the first DDP goes; the policy decides what happens to the second
      }
      if (kept_alive && step_ > 0 && (step_ == o_.steps / 3 || step_ == 2 * o_.steps / 3)) {
        // PyTorch #21344 as users hit it: DDP built again on the same module
        // while the program keeps the old one (here in a list): its Reducer
        // lingers, its hooks stay and fire as no-ops (Note [Lingering owners]).
        kept_.push_back(std::move(ddp));
        ddp = make_ddp(pg);
      }
      ddp::DistributedDataParallel& use =
          (ddp && (second == nullptr || step_ % 2 == 0)) ? *ddp : *second;
      // kept-alive accumulates gradients over two micro-batches: the odd
      // steps run inside no_sync (their fires are no-ops by design).
      const bool micro = kept_alive && step_ % 2 == 1 && step_ + 1 < o_.steps;
      std::optional<ddp::DistributedDataParallel::NoSync> no_sync;
      if (micro) no_sync.emplace(use);
      auto batch = data_.batch(static_cast<uint64_t>(step_), o_.batch_per_rank * o_.world_size,
                               rep_.rank, o_.world_size);
      Tensor loss = cross_entropy(use(batch.x.to(o_.device)), batch.y);
      if (o_.name == "marked-twice") {
        // A parameter used outside forward: unused-parameter detection already
        // marked it ready, then its gradient arrives anyway.
        auto* net = static_cast<TwoHeadNet*>(module_.get());
        loss = add(loss, mul_scalar(sum(mul(net->aux->weight, net->aux->weight)), 1e-3f));
      }
      if (!accumulated_) sgd.zero_grad();
      loss.backward();
      accumulated_ = micro;
      if (!micro) sgd.step();
      const float l = loss.item();
      rep_.losses.push_back(l);
      uint32_t bits;
      std::memcpy(&bits, &l, sizeof(bits));
      trace::emit_train_step(static_cast<uint64_t>(step_), bits);
      write_note("progress", fmt::format("{} {}", gen_, step_ + 1));
    }
  }

  void snapshot(ddp::DistributedDataParallel& ddp) {
    for (auto& p : module_->named_parameters()) {
      rep_.post_hooks_per_accumulator.push_back(p.tensor.grad_accumulator()->num_post_hooks());
      auto v = p.tensor.to_vector();
      rep_.final_parameters.insert(rep_.final_parameters.end(), v.begin(), v.end());
    }
    if (o_.name == "unused-parameter") {
      for (auto& p : static_cast<TwoHeadNet&>(*module_).aux->named_parameters("aux.")) {
        rep_.unused_parameters.push_back(p.name);
      }
    }
    (void)ddp;
  }

  void recovery_step(RecoveryStep step, const std::string& what) {
    trace::emit_recovery_step(step, trace::intern(what));
  }

  const DdpScenarioOptions& o_;
  std::shared_ptr<ddp::Store> store_;
  std::vector<int> fail_steps_;
  nn::SyntheticClassification data_;
  std::shared_ptr<nn::Module> module_;
  RankReport rep_;
  int gen_ = 0;
  int step_ = 0;
  int root_ = 0;
  bool replacement_ = false;
  uint64_t group_id_ = 0;
  bool accumulated_ = false;  // gradients of a no_sync micro-batch wait for the next step
  std::vector<std::unique_ptr<ddp::DistributedDataParallel>> kept_;  // kept-alive's old DDPs
};

}  // namespace

void validate(const DdpScenarioOptions& o) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (!is_ddp_scenario(o.name)) {
    std::string names;
    for (const std::string& n : scenario_names(true)) names += (names.empty() ? "" : ", ") + n;
    bad("unknown DDP scenario '" + o.name + "': expected one of " + names);
  }
  if (o.world_size < 1 || o.world_size > kMaxWorldSize) {
    bad(fmt::format("--world-size {} is out of range: expected 1 to {}", o.world_size, kMaxWorldSize));
  }
  if (o.steps < 1) bad("--steps must be at least 1");
  if (o.batch_per_rank < 1) bad("--batch must be at least 1");
  if (o.name == "kept-alive" && o.steps < 3) {
    bad(fmt::format("kept-alive rebuilds DDP at a third and two thirds of the steps: --steps {} is too "
                    "few, give at least 3", o.steps));
  }
  if (o.name == "recovery") {
    if (o.world_size < 2) bad("recovery needs --world-size of at least 2 (a survivor)");
    if (o.fail_rank < 0 || o.fail_rank >= o.world_size) {
      bad(fmt::format("--fail-rank {} is not a rank of a world of {}", o.fail_rank, o.world_size));
    }
    if (o.recoveries < 1) bad("--recoveries must be at least 1");
    auto steps = failure_steps(o);
    if (steps.back() >= o.steps - 1 || steps.front() < 0) {
      bad(fmt::format("--steps {} is too few for {} failure(s) from step {}: need at least {}",
                      o.steps, o.recoveries, steps.front(), steps.back() + 2));
    }
    if (o.fail_point != "hook" && o.fail_point != "collective") {
      bad("--fail-point must be hook or collective");
    }
    if (o.fail_mode == FailureMode::kKill && o.rank < 0) {
      bad("--fail-mode kill kills a rank's process, and here the ranks are threads of one process "
          "(record, the GUI's --live): run the scenario with `hookscope-cli launch -o PREFIX` "
          "(one process per rank) and open PREFIX.rank*.hstrace");
    }
  }
  check_device_usable(o.device);
  if (o.backend != "auto" && o.backend != "gloo" && o.backend != "nccl") {
    bad("unknown --backend '" + o.backend + "': expected auto, gloo or nccl");
  }
  if (o.backend == "nccl") {
    if (o.device != Device::kCUDA) bad("--backend nccl needs --device cuda");
    std::string why;
    if (!ddp::nccl_usable(o.world_size, &why)) {
      bad("--backend nccl: " + why + "; use --backend gloo (gradients staged through host memory)");
    }
  }
}

std::string resolve_backend(const DdpScenarioOptions& o) {
  if (o.backend != "auto") return o.backend;
  if (o.device != Device::kCUDA) return "gloo";
  return ddp::nccl_usable(o.world_size) ? "nccl" : "gloo";
}

DdpScenarioResult run_ddp_scenario(const DdpScenarioOptions& o) {
  validate(o);
  DdpScenarioResult result;
  std::mutex mutex;
  auto record = [&](RankReport r) {
    std::lock_guard<std::mutex> lock(mutex);
    if (r.failed) ++result.failures_injected;
    result.ranks.push_back(std::move(r));
  };
  if (o.rank >= 0) {
    // One rank of a multi-process launch: this incarnation only.
    auto store = o.store.empty() ? ddp::make_file_store(o.store_dir) : ddp::make_store(o.store, o.run_id);
    // Without a launcher (no store_dir for its notes) the process starts
    // its own replacement after an injected failure, as the threads do.
    int incarnation = o.generation, start = o.start_step;
    for (;;) {
      RankRun run(o, store, o.rank, incarnation, incarnation, start);
      RankReport rep = run.run();
      const bool failed = rep.failed;
      const int failed_at = failed ? failure_steps(o)[static_cast<size_t>(incarnation)] : 0;
      record(std::move(rep));
      if (!failed || !o.store_dir.empty()) break;
      ++incarnation;
      start = failed_at;
    }
  } else {
    auto store = ddp::make_hash_store();
    std::vector<std::thread> threads;
    for (int r = 0; r < o.world_size; ++r) {
      threads.emplace_back([&, r] {
        // A failed rank is replaced by a fresh incarnation (a new module, the
        // same rank) that joins the next group generation.
        int incarnation = 0, start = 0;
        for (;;) {
          RankRun run(o, store, r, incarnation, incarnation, start);
          RankReport rep = run.run();
          const bool failed = rep.failed;
          const int failed_at = failed ? failure_steps(o)[static_cast<size_t>(incarnation)] : 0;
          record(std::move(rep));
          if (!failed) break;
          ++incarnation;
          start = failed_at;
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  std::sort(result.ranks.begin(), result.ranks.end(), [](const RankReport& a, const RankReport& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.generation < b.generation;
  });
  // Divergence between the final incarnations of the ranks.
  const RankReport* first = nullptr;
  for (const RankReport& r : result.ranks) {
    if (r.failed || r.final_parameters.empty()) continue;
    if (!first) {
      first = &r;
      continue;
    }
    for (size_t i = 0; i < std::min(first->final_parameters.size(), r.final_parameters.size()); ++i) {
      result.max_parameter_divergence = std::max(
          result.max_parameter_divergence, std::fabs(first->final_parameters[i] - r.final_parameters[i]));
    }
  }
  return result;
}

namespace {
const RankReport* first_with_parameters(const DdpScenarioResult& res) {
  for (const RankReport& r : res.ranks) {
    if (!r.failed && !r.final_parameters.empty()) return &r;
  }
  return nullptr;
}
}  // namespace

std::string format_result(const DdpScenarioOptions& o, const DdpScenarioResult& res) {
  std::string out = fmt::format("{}: policy {}, world size {}, {} step(s), {} injected failure(s)\n",
                                o.name, trace::to_string(o.policy), o.world_size, o.steps,
                                res.failures_injected);
  if (o.device == Device::kCUDA) {
    const int gpus = std::max(1, cuda_device_count());
    out += fmt::format("  device cuda ({} GPU(s), rank r on cuda:(r % {})), backend {}\n", gpus,
                       gpus, resolve_backend(o));
  }
  for (const RankReport& r : res.ranks) {
    out += fmt::format("  rank {}{}: ", r.rank,
                       r.generation ? fmt::format(" (replacement {})", r.generation) : "");
    if (!r.losses.empty()) {
      out += fmt::format("{} step(s), loss {:.4f} -> {:.4f}", r.losses.size(), r.losses.front(),
                         r.losses.back());
    } else {
      out += "no completed step";
    }
    if (r.recoveries) out += fmt::format(", {} recovery(ies)", r.recoveries);
    if (r.failed) out += ", failed (injected)";
    if (!r.post_hooks_per_accumulator.empty()) {
      auto [lo, hi] = std::minmax_element(r.post_hooks_per_accumulator.begin(),
                                          r.post_hooks_per_accumulator.end());
      out += *lo == *hi ? fmt::format(", {} post hook(s) per AccumulateGrad", *lo)
                        : fmt::format(", {}..{} post hooks per AccumulateGrad", *lo, *hi);
    }
    out += "\n";
    if (!r.unused_parameters.empty()) {
      out += "    unused parameters: " + fmt::format("{}", fmt::join(r.unused_parameters, ", ")) + "\n";
    }
    if (!r.error.empty()) out += "    error: " + r.error + "\n";
  }
  if (res.ranks.size() > 1 && (first_with_parameters(res) != nullptr)) {
    out += fmt::format("  max parameter difference between ranks: {:.3g}{}\n",
                       res.max_parameter_divergence,
                       res.max_parameter_divergence > 1e-5f ? " (ranks diverged: not synchronised)" : "");
  }
  return out;
}

}  // namespace hookscope::scenarios
