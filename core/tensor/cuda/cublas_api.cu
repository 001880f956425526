// cuBLAS, loaded when a device first needs it (Note [cuBLAS loaded on first use]).
#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_context.h"

namespace hookscope::cuda {

// Note [cuBLAS loaded on first use]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Linking libcublas makes every process that starts carry it: the loader
// maps and relocates libcublas and libcublasLt (over 700 MB of files) at
// start: `hookscope-cli --version` took 226 MB of resident memory and
// 0.25 s (10.6 MB and 0.02 s without), and the GUI opening a trace as
// much more, on machines with no GPU at all. Only a matmul on a CUDA device needs it, through four
// functions; so the library is opened (dlopen) by the first handle made
// (cublas_handle_locked), under the device's lock, and the four looked up.
// The rest of CUDA (the runtime, NCCL: a few MB) stays linked. The name is
// the soname of the cuBLAS the build compiled against (its major version),
// looked up the usual way (LD_LIBRARY_PATH, the binary's run path, ld.so's
// cache), then in the toolkit's library folder the build found (which only
// means something on the machine that built it: an installed hookscope
// finds cuBLAS through ld.so's cache or LD_LIBRARY_PATH).
namespace {

std::string cublas_soname() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

template <typename T>
T symbol(void* lib, const char* name, const std::string& from) {
  void* p = ::dlsym(lib, name);
  if (p == nullptr) {
    throw std::runtime_error("cuBLAS (" + from + ") has no " + name +
                             ": it is not the cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
                             " this build was compiled against");
  }
  return reinterpret_cast<T>(p);
}

CublasApi load() {
  const std::string soname = cublas_soname();
  std::string tried = soname;
  void* lib = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string error = lib ? "" : ::dlerror();
#ifdef HOOKSCOPE_CUBLAS_DIR
  if (lib == nullptr) {
    const std::string path = std::string(HOOKSCOPE_CUBLAS_DIR) + "/" + soname;
    lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) error += "; " + std::string(::dlerror());
    tried = path;
  }
#endif
  if (lib == nullptr) {
    throw std::runtime_error("a matmul on a CUDA device needs cuBLAS, and " + soname +
                             " could not be loaded (" + error +
                             "): install CUDA's cuBLAS or put its folder on LD_LIBRARY_PATH");
  }
  CublasApi api;
  api.create = symbol<decltype(api.create)>(lib, "cublasCreate_v2", tried);
  api.set_stream = symbol<decltype(api.set_stream)>(lib, "cublasSetStream_v2", tried);
  api.set_math_mode = symbol<decltype(api.set_math_mode)>(lib, "cublasSetMathMode", tried);
  api.sgemm = symbol<decltype(api.sgemm)>(lib, "cublasSgemm_v2", tried);
  return api;  // the library stays open for the process's life
}

}  // namespace

const CublasApi& cublas() {
  // Loaded once; a failed load throws and the next call tries again.
  static std::mutex mutex;
  static CublasApi api;
  static std::atomic<bool> loaded{false};
  if (loaded.load(std::memory_order_acquire)) return api;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded.load(std::memory_order_relaxed)) {
    api = load();
    loaded.store(true, std::memory_order_release);
  }
  return api;
}

}  // namespace hookscope::cuda
