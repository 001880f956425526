#include "app_cli.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hookscope::app {

std::string cli_beside_self() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : (self.parent_path() / "hookscope-cli").string();
}

pid_t start_child(const std::vector<std::string>& argv, const std::string& output) {
  // Everything the child needs is made before fork: after it, a threaded
  // process may only make async-signal-safe calls until exec.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;  // the parent, or -1
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) std::_Exit(127);  // the parent died before prctl
  const int in = ::open("/dev/null", O_RDONLY);
  if (in >= 0) ::dup2(in, 0);
  if (!output.empty()) {
    const int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0) std::_Exit(127);
    ::dup2(out, 1);
    ::dup2(out, 2);
  }
  ::execv(cargv[0], cargv.data());
  std::_Exit(127);
}

std::optional<int> child_exit(pid_t pid, bool block) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int run_child(const std::vector<std::string>& argv, std::string* output) {
  char path[] = "/tmp/hookscope-child-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return 127;
  ::close(fd);
  const pid_t pid = start_child(argv, path);
  const int rc = pid < 0 ? 127 : child_exit(pid, true).value_or(-1);
  if (output) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    *output = text.str();
  }
  ::unlink(path);
  return rc;
}

}  // namespace hookscope::app
