#pragma once
// Runs one test case of this test binary in a child process: posix_spawn of
// /proc/self/exe (no fork of a multi-threaded process, so ThreadSanitizer
// follows the child too) with `env` ("NAME=value") added to the
// environment; the test case sees the variable and plays the child's part
// (a recording process the test then kills). The child's stdout goes to
// /dev/null. Returns its pid, -1 when it could not be started.

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace hookscope::testing {

inline pid_t spawn_self(const std::string& test_case, const std::string& env) {
  std::vector<char*> envp{const_cast<char*>(env.c_str())};
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  envp.push_back(nullptr);
  std::string filter = "-tc=" + test_case;
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter.data(), nullptr};
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  pid_t child = 0;
  const int rc = ::posix_spawn(&child, exe, &quiet, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&quiet);
  return rc == 0 ? child : -1;
}

}  // namespace hookscope::testing
