#include "testing/paths.h"

// The one file compiled with the build's absolute paths (tests/CMakeLists.txt
// sets them on this source only). Note [Test paths at one place]:
//
// A test needs the programs of its own build (hookscope-cli, the GUI), the
// sample traces and the checkout (bench scripts, UI strings it scans). Put on
// every test object's command line, those absolute paths made each object
// unique to its checkout: ccache (base_dir=/work rewrites paths given as
// arguments, not the text of a define) missed every test object of a second
// worktree, and a helper's test build took an hour on two cores. Here only
// this object differs between checkouts.

namespace hookscope::testing {

const std::string& cli_path() {
  static const std::string path = HOOKSCOPE_TEST_CLI;
  return path;
}

const std::string& gui_path() {
  static const std::string path = HOOKSCOPE_TEST_GUI;
  return path;
}

const std::string& samples_dir() {
  static const std::string path = HOOKSCOPE_TEST_SAMPLES;
  return path;
}

const std::string& source_dir() {
  static const std::string path = HOOKSCOPE_TEST_SOURCE;
  return path;
}

}  // namespace hookscope::testing
