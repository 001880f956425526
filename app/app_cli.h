#pragma once
// The hookscope-cli this GUI runs (Note [The GUI runs no scenario]): the
// headless fallback, --live's options check and its recording child.
// Plain POSIX processes; no GUI code.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace hookscope::app {

// The hookscope-cli beside this program (in a build tree and an install
// alike); "" when /proc/self/exe cannot be read.
std::string cli_beside_self();

// Starts argv (argv[0]: the program's path) with stdin from /dev/null and,
// when `output` is not empty, stdout and stderr into that file; the child is
// killed if this process dies first. -1 when it could not be started.
pid_t start_child(const std::vector<std::string>& argv, const std::string& output = "");

// The child's exit code (128 + the signal when one ended it, -1 when it
// cannot be waited for); nullopt while it runs and `block` is false.
std::optional<int> child_exit(pid_t pid, bool block);

// Runs argv to its end; its stdout and stderr, together, into `output`.
// Returns the exit code as child_exit (127: the program could not run).
int run_child(const std::vector<std::string>& argv, std::string* output);

}  // namespace hookscope::app
