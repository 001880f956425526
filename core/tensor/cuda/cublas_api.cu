// cuBLAS, loaded when a device first needs it (Note [cuBLAS loaded on first use]).
#include <string>

#include "tensor/cuda/cuda_context.h"
#include "tensor/shared_library.h"

namespace hookscope::cuda {

// Note [cuBLAS loaded on first use]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Linking libcublas makes every process that starts carry it: the loader
// maps and relocates libcublas and libcublasLt (over 700 MB of files) at
// start: `hookscope-cli --version` took 226 MB of resident memory and
// 0.25 s (10.6 MB and 0.02 s without), and the GUI opening a trace as
// much more, on machines with no GPU at all. Only a matmul on a CUDA device needs it, through four
// functions; so the library is opened (dlopen) by the first handle made
// (cublas_handle_locked), under the device's lock, and the four looked up,
// as the rest of CUDA is (Note [GPU libraries opened on first use]).
namespace {

CublasApi load() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
#ifdef HOOKSCOPE_CUBLAS_DIR
  const char* fallback = HOOKSCOPE_CUBLAS_DIR;
#else
  const char* fallback = nullptr;
#endif
  const SharedLibrary lib = open_shared_library(
      soname, fallback, "a matmul on a CUDA device needs cuBLAS",
      "install CUDA's cuBLAS or put its folder on LD_LIBRARY_PATH, or use --device cpu");
  const std::string expected =
      "the cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + " this build was compiled against";
  CublasApi api;
  api.create = shared_library_function<decltype(api.create)>(lib, "cublasCreate_v2", expected);
  api.set_stream =
      shared_library_function<decltype(api.set_stream)>(lib, "cublasSetStream_v2", expected);
  api.set_math_mode =
      shared_library_function<decltype(api.set_math_mode)>(lib, "cublasSetMathMode", expected);
  api.sgemm = shared_library_function<decltype(api.sgemm)>(lib, "cublasSgemm_v2", expected);
  return api;
}

}  // namespace

const CublasApi& cublas() {
  // A load that throws leaves the static uninitialised: the next call tries again.
  static const CublasApi api = load();
  return api;
}

}  // namespace hookscope::cuda
