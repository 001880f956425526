#include "tensor/shared_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace hookscope {

// Note [GPU libraries opened on first use]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// One set of binaries runs on machines with and without CUDA: the .deb is
// installed on plain Debian, where no CUDA library exists, and `ldd` of an
// installed program must name only Debian's libraries. So nothing of CUDA
// is a load-time dependency:
//  * the CUDA runtime is linked statically (CUDA::cudart_static, nvcc's own
//    default, and how libcublas and libnccl carry theirs). It opens the
//    driver, libcuda.so.1, at the first CUDA call; without a driver that call
//    fails and cuda_available() says which library is missing
//    (tensor/cuda/device.cu);
//  * cuBLAS (Note [cuBLAS loaded on first use]) and NCCL
//    (ddp/nccl_api.cpp) are opened here at first use, by the soname of the
//    version the build compiled against, and their few functions looked up.
// A program that never touches a GPU never maps any of them (test_cuda.cpp
// checks with LD_DEBUG=libs; tests/package_test.sh runs the .deb on a
// fresh Debian root with no CUDA at all).
SharedLibrary open_shared_library(const std::string& soname, const char* fallback_dir,
                                  const std::string& needed_for, const std::string& remedy) {
  SharedLibrary lib{::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL), soname};
  std::string error = lib.handle ? "" : ::dlerror();
  if (lib.handle == nullptr && fallback_dir != nullptr) {
    // The toolkit folder the build found: only means something on the
    // machine that built it; an installed program relies on ld.so.
    lib.path = std::string(fallback_dir) + "/" + soname;
    lib.handle = ::dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle == nullptr) error += "; " + std::string(::dlerror());
  }
  if (lib.handle == nullptr) {
    throw std::runtime_error(needed_for + ", and " + soname + " could not be loaded (" + error +
                             "): " + remedy);
  }
  return lib;
}

void* shared_library_symbol(const SharedLibrary& lib, const char* name,
                            const std::string& expected) {
  void* p = ::dlsym(lib.handle, name);
  if (p == nullptr) {
    throw std::runtime_error(lib.path + " has no " + name + ": it is not " + expected);
  }
  return p;
}

}  // namespace hookscope
