// hookscope's own runtime side of the comm hook program of
// tests/torch/test_runtime_parity.py: the same MLP under DDP with a comm hook
// that averages each bucket and allreduces it (what DDP does without one),
// 2 ranks as threads over real Gloo, a few SGD steps, recorded to a file.
//
//   ddp_comm_hook_runtime TRACE.hstrace

#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ddp/ddp.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "trace/emit.h"
#include "trace/emitters_ddp.h"
#include "trace/writer.h"

using namespace hookscope;

namespace {

constexpr int kWorld = 2;
constexpr int kSteps = 3;

void rank_main(int r, const std::shared_ptr<ddp::Store>& store) {
  trace::set_thread_rank(static_cast<uint16_t>(r));
  auto pg = ddp::make_gloo_process_group(store, r, kWorld);
  // As the scenarios write it (group id (generation << 16) | rank, generation
  // 0 for the first), and the bridge at init_process_group.
  const auto group_id = static_cast<uint64_t>(r);
  trace::emit_process_group_created(group_id, kWorld, 0);
  {
    auto model = nn::mlp({16, 32, 32, 4}, 7);
    ddp::DdpOptions opts;
    opts.reducer.first_bucket_bytes = 1024;  // the scenarios' buckets: several on this model
    opts.reducer.bucket_cap_bytes = 4096;
    ddp::DistributedDataParallel d(model, pg, opts);
    d.register_comm_hook([pg](ddp::GradBucket& b) {
      Tensor averaged = mul_scalar(b.buffer, 1.f / static_cast<float>(pg->size()));
      pg->allreduce_tensor(averaged)->wait();
      return averaged;
    });
    nn::SGD sgd(model->parameters(), 0.1f);
    nn::SyntheticClassification data(16, 4, 11);
    for (int step = 0; step < kSteps; ++step) {
      auto batch = data.batch(static_cast<uint64_t>(step), 16 * kWorld, r, kWorld);
      sgd.zero_grad();
      cross_entropy(d(batch.x), batch.y).backward();
      sgd.step();
    }
  }
  trace::emit_process_group_destroyed(group_id, false);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: ddp_comm_hook_runtime TRACE.hstrace\n";
    return 2;
  }
  try {
    trace::TraceHeader header;
    header.scenario = "comm hook (tests/torch)";
    header.world_size = kWorld;
    trace::FileRecorder recorder(argv[1], header);
    recorder.start();
    auto store = ddp::make_hash_store();
    std::vector<std::string> errors(kWorld);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kWorld; ++r) {
      ranks.emplace_back([&, r] {
        try {
          rank_main(r, store);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(r)] = e.what();
        }
      });
    }
    for (auto& t : ranks) t.join();
    recorder.finish();
    for (int r = 0; r < kWorld; ++r) {
      if (!errors[static_cast<size_t>(r)].empty()) {
        std::cerr << "rank " << r << ": " << errors[static_cast<size_t>(r)] << "\n";
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "ddp_comm_hook_runtime: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
