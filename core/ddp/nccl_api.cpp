// libnccl opened on first use (Note [GPU libraries opened on first use]).
#ifdef HOOKSCOPE_WITH_NCCL

#include "ddp/nccl_api.h"

#include <string>
#include <type_traits>

#include "tensor/shared_library.h"

namespace hookscope::ddp {
namespace {

NcclApi load() {
  const std::string soname = "libnccl.so." + std::to_string(NCCL_MAJOR);
#ifdef HOOKSCOPE_NCCL_DIR
  const char* fallback = HOOKSCOPE_NCCL_DIR;
#else
  const char* fallback = nullptr;
#endif
  const SharedLibrary lib = open_shared_library(
      soname, fallback, "the NCCL process group needs NCCL",
      "install NCCL or put its folder on LD_LIBRARY_PATH");
  const std::string expected = "the NCCL " + std::to_string(NCCL_MAJOR) + "." +
                               std::to_string(NCCL_MINOR) + " this build was compiled against";
  auto fn = [&](auto& slot, const char* name) {
    slot = shared_library_function<std::remove_reference_t<decltype(slot)>>(lib, name, expected);
  };
  NcclApi api;
  fn(api.get_unique_id, "ncclGetUniqueId");
  fn(api.comm_init_rank_config, "ncclCommInitRankConfig");
  fn(api.comm_get_async_error, "ncclCommGetAsyncError");
  fn(api.comm_finalize, "ncclCommFinalize");
  fn(api.comm_destroy, "ncclCommDestroy");
  fn(api.comm_abort, "ncclCommAbort");
  fn(api.all_reduce, "ncclAllReduce");
  fn(api.broadcast, "ncclBroadcast");
  fn(api.get_error_string, "ncclGetErrorString");
  fn(api.get_last_error, "ncclGetLastError");
  return api;
}

}  // namespace

const NcclApi& nccl() {
  static const NcclApi api = load();
  return api;
}

}  // namespace hookscope::ddp

#endif  // HOOKSCOPE_WITH_NCCL
