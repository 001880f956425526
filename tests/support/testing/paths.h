#pragma once

// Where the test executable finds the programs it runs and the files it reads
// (Note [Test paths at one place]).
//
// The paths are compiled into one file, testing/paths.cpp, not defined on
// every test's command line: a define holding an absolute path makes every
// test object differ between two checkouts, so a second worktree rebuilt all
// ~150 test objects instead of taking them from ccache. This header is
// force-included into each test (tests/CMakeLists.txt), so a test writes
// HOOKSCOPE_CLI_PATH as before; each name is a std::string now, so
// "literal" + HOOKSCOPE_GUI_PATH works as well as std::string(HOOKSCOPE_CLI_PATH).

#include <string>

namespace hookscope::testing {

const std::string& cli_path();      // the hookscope-cli of this build
const std::string& gui_path();      // the hookscope GUI of this build ("" when the GUI is not built)
const std::string& samples_dir();   // the shipped sample traces
const std::string& source_dir();    // the checkout's root

}  // namespace hookscope::testing

#define HOOKSCOPE_CLI_PATH (::hookscope::testing::cli_path())
#define HOOKSCOPE_GUI_PATH (::hookscope::testing::gui_path())
#define HOOKSCOPE_SAMPLES_DIR (::hookscope::testing::samples_dir())
#define HOOKSCOPE_SOURCE_DIR (::hookscope::testing::source_dir())
