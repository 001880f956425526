// Opening a GPU library when it is first needed instead of linking it
// (Note [GPU libraries opened on first use], shared_library.cpp).
#pragma once

#include <string>

namespace hookscope {

struct SharedLibrary {
  void* handle = nullptr;
  std::string path;  // what was opened: the soname, or fallback_dir/soname
};

// Opens `soname` the usual way (LD_LIBRARY_PATH, the binary's run path,
// ld.so's cache), then as `fallback_dir`/`soname` when fallback_dir is not
// null. The library stays open for the process's life. Throws a message
// made of `needed_for` ("the NCCL process group needs NCCL"), the soname,
// what the loader said, and `remedy` (what the user can do).
SharedLibrary open_shared_library(const std::string& soname, const char* fallback_dir,
                                  const std::string& needed_for, const std::string& remedy);

// The address of `name` in `lib`; throws, saying the library is not the
// `expected` one ("the cuBLAS 13 this build was compiled against"), when absent.
void* shared_library_symbol(const SharedLibrary& lib, const char* name,
                            const std::string& expected);

template <typename Fn>
Fn shared_library_function(const SharedLibrary& lib, const char* name,
                           const std::string& expected) {
  return reinterpret_cast<Fn>(shared_library_symbol(lib, name, expected));
}

}  // namespace hookscope
