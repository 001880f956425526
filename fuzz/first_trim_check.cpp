// Note [The first trim runs alone] (app/loader.cpp): in a process of the
// sanitizer build where no malloc has reached glibc, several threads hand
// freed memory back at once, as the loader threads of a trace and its
// Compare and the diagnostics job do. Each try is a forked child (it starts
// with glibc's malloc as untouched as this process's: this process never
// trims); without the once_flag 83 tries of 300 crashed (SEGV on 0x8
// inside malloc_trim). scripts/fuzz.sh runs it before the GUI
// fuzzer.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "loader.h"

namespace {

void trim_at_once() {
  constexpr int kThreads = 4;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&ready] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      hookscope::app::release_free_memory();
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  const int tries = argc > 1 ? std::atoi(argv[1]) : 300;
  int crashed = 0;
  for (int i = 0; i < tries; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("first_trim_check: fork");
      return 2;
    }
    if (pid == 0) {
      trim_at_once();
      std::fflush(nullptr);
      ::_exit(0);
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++crashed;
  }
  std::printf("first_trim_check: %d of %d processes crashed with four threads releasing free memory at once\n",
              crashed, tries);
  return crashed == 0 ? 0 : 1;
}
