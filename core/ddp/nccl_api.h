// The NCCL functions the NCCL process group calls, looked up in libnccl when
// a group is first made (Note [GPU libraries opened on first use]). Only
// with HOOKSCOPE_WITH_NCCL.
#pragma once

#include <nccl.h>

namespace hookscope::ddp {

struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&ncclCommFinalize) comm_finalize = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGetErrorString) get_error_string = nullptr;
  decltype(&ncclGetLastError) get_last_error = nullptr;
};

// Opened once; throws, naming the library and what to do, when it cannot be
// loaded (and the next call tries again).
const NcclApi& nccl();

}  // namespace hookscope::ddp
