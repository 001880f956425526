#pragma once
// A scratch directory for a test: made fresh under the system's temporary
// directory, removed with everything in it when the TempDir goes.

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace hookscope::testing {

struct TempDir {
  std::filesystem::path path;
  // `name` starts the directory's name; mkdtemp makes it unique, so tests
  // running side by side (ctest -j) never share one.
  explicit TempDir(const std::string& name = "hookscope-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (name + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot make a temporary directory " + pattern);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // The path of `name` inside it.
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace hookscope::testing
