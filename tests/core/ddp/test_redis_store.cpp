// Ranks as processes meeting through a real redis-server (Note [Rendezvous
// store specs]): two runs in a row on one server do not collide. Skips,
// saying why, when redis-server is not installed (scripts/setup.sh installs it).
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "testing/test_util.h"
#include "trace/reader.h"

using namespace hookscope;
namespace fs = std::filesystem;

namespace {

const std::string kCli = HOOKSCOPE_CLI_PATH;

std::string find_redis_server() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return "";
}

// A port nobody listens on now (the kernel's pick for an ephemeral bind).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

bool accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// redis-server on 127.0.0.1, no persistence, stopped at the end of the test.
struct RedisServer {
  pid_t pid = -1;
  int port = -1;
  explicit RedisServer(const std::string& exe) {
    for (int attempt = 0; attempt < 5 && pid < 0; ++attempt) {
      port = free_port();
      pid_t p = ::fork();
      if (p == 0) {
        ::execl(exe.c_str(), exe.c_str(), "--port", std::to_string(port).c_str(), "--bind",
                "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--loglevel", "warning", "--dir", "/tmp", static_cast<char*>(nullptr));
        std::_Exit(127);
      }
      for (int i = 0; i < 250; ++i) {
        if (accepts(port)) {
          pid = p;
          break;
        }
        int status;
        if (::waitpid(p, &status, WNOHANG) == p) break;  // the port was taken: try another
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (pid < 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    }
  }
  ~RedisServer() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

struct Run {
  int exit0 = -1, exit1 = -1;
  std::string out0, out1;
};

// Rank 0 and rank 1 as two processes of one run.
Run two_ranks(const std::string& store, const std::string& run_id, const fs::path& dir) {
  Run r;
  auto cmd = [&](int rank) {
    return kCli + " record recovery --steps 8 --world-size 2 --rank " + std::to_string(rank) +
           " --store " + store + " --run-id " + run_id + " -o " +
           (dir / (run_id + ".rank" + std::to_string(rank) + ".hstrace")).string();
  };
  std::thread t([&] {
    auto x = testing::run_command(cmd(1));
    r.exit1 = x.exit;
    r.out1 = x.out;
  });
  auto x = testing::run_command(cmd(0));
  r.exit0 = x.exit;
  r.out0 = x.out;
  t.join();
  return r;
}

}  // namespace

TEST_SUITE("redis") {

TEST_CASE("record --rank --store redis://: two processes, two runs in a row on one server") {
  const std::string exe = find_redis_server();
  if (exe.empty()) {
    MESSAGE("skipped: redis-server is not installed (Debian package redis-server; scripts/setup.sh)");
    return;
  }
  RedisServer server(exe);
  REQUIRE_MESSAGE(server.pid > 0, "redis-server did not start on a free port");
  const fs::path dir = fs::temp_directory_path() / ("hookscope-redis-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string store = "redis://127.0.0.1:" + std::to_string(server.port);
  for (const std::string run_id : {"first", "second"}) {
    Run r = two_ranks(store, run_id, dir);
    CAPTURE(run_id);
    CAPTURE(r.out0);
    CAPTURE(r.out1);
    CHECK(r.exit0 == 0);
    CHECK(r.exit1 == 0);
    for (int rank = 0; rank < 2; ++rank) {
      auto t = trace::read_trace((dir / (run_id + ".rank" + std::to_string(rank) + ".hstrace")).string());
      size_t steps = 0;
      for (const auto& e : t.events) steps += e.kind == trace::EventKind::kTrainStep;
      CHECK(steps >= 8);  // the survivor's 8 (the failed rank's replacement runs in-process)
    }
  }
  // launch makes up a run id per run: twice in a row on the same server.
  for (int i = 0; i < 2; ++i) {
    auto r = testing::run_command(kCli + " launch --nproc 2 recovery --steps 8 --store " + store +
                                  " -o " + (dir / ("launch" + std::to_string(i))).string());
    CAPTURE(r.out);
    CHECK(r.exit == 0);
  }
  fs::remove_all(dir);
}

}  // TEST_SUITE
