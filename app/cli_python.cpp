// hookscope-cli record-python: the torch bridge's `python -m hookscope.record`
// behind the CLI, with the interpreter and the package found for the user.
#include "cli_python.h"

#include <fmt/format.h>
#include <unistd.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"

namespace fs = std::filesystem;

namespace hookscope::cli {

namespace {

constexpr const char* kUsage =
    "usage: hookscope-cli record-python [-o OUT.hstrace] SCRIPT [ARGS...]\n"
    "       hookscope-cli record [-o OUT.hstrace] --python SCRIPT [ARGS...]\n"
    "Runs SCRIPT under /usr/bin/python3 -m hookscope.record (the torch bridge): its autograd\n"
    "graph, hooks and DDP events go to OUT (default run.hstrace; under torch.distributed\n"
    "OUT.rank<r>.hstrace per rank). Everything after SCRIPT is passed to it.\n"
    "Environment: HOOKSCOPE_PYTHON (the interpreter, default /usr/bin/python3, which has\n"
    "Debian's torch), HOOKSCOPE_PYTHONPATH (where the hookscope package is, if elsewhere).\n";

struct Request {
  std::string output = "run.hstrace";
  std::string script;
  std::vector<std::string> args;
  bool help = false;
};

// Options before SCRIPT; SCRIPT and what follows are the program's.
Request parse(int argc, char** argv, int first, bool python_flag) {
  Request r;
  bool python_seen = !python_flag;
  for (int i = first; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view name) {
      if (i + 1 >= argc) throw CliError(kExitUsage, fmt::format("{} needs a value\n{}", name, kUsage));
      return std::string(argv[++i]);
    };
    if (a == "-h" || a == "--help") {
      r.help = true;
      return r;
    } else if (a == "-o" || a == "--output") {
      r.output = value(a);
    } else if (a.rfind("--output=", 0) == 0) {
      r.output = std::string(a.substr(9));
    } else if (a == "--python" && !python_seen) {
      python_seen = true;
      r.script = value(a);
      for (++i; i < argc; ++i) r.args.emplace_back(argv[i]);
    } else if (a == "--" && python_seen && r.script.empty() && i + 1 < argc) {
      r.script = argv[++i];
      for (++i; i < argc; ++i) r.args.emplace_back(argv[i]);
    } else if (!a.empty() && a[0] == '-' && r.script.empty()) {
      throw CliError(kExitUsage, fmt::format("unknown option '{}' before the script\n{}", a, kUsage));
    } else if (python_seen && r.script.empty()) {
      r.script = std::string(a);
      for (++i; i < argc; ++i) r.args.emplace_back(argv[i]);
    } else {
      throw CliError(kExitUsage, fmt::format("'{}' before --python: record --python takes the "
                                             "script right after it\n{}", a, kUsage));
    }
  }
  if (r.script.empty()) throw CliError(kExitUsage, fmt::format("no script given\n{}", kUsage));
  return r;
}

bool has_bridge(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "hookscope" / "record.py", ec)) return false;
  for (const auto& e : fs::directory_iterator(dir / "hookscope", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("_C.", 0) == 0 && e.path().extension() == ".so") return true;
  }
  return false;
}

// Where the package is: $HOOKSCOPE_PYTHONPATH, the install next to this
// program (PREFIX/lib/python3/dist-packages: the .deb python3-hookscope or
// `cmake --install --component torch_bridge`), the build tree it was built in.
std::vector<fs::path> bridge_dirs() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("HOOKSCOPE_PYTHONPATH"); env && *env) out.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back(exe.parent_path().parent_path() / "lib" / "python3" / "dist-packages");
#ifdef HOOKSCOPE_PYTHON_BUILD_DIR
  out.emplace_back(HOOKSCOPE_PYTHON_BUILD_DIR);
#endif
  return out;
}

// Whether `python` can import torch, without importing it (that takes seconds).
bool has_torch(const std::string& python) {
  const pid_t pid = ::fork();
  if (pid < 0) return true;  // let the bridge say it
  if (pid == 0) {
    const char* argv[] = {python.c_str(), "-c",
                          "import importlib.util, sys; "
                          "sys.exit(0 if importlib.util.find_spec('torch') else 3)",
                          nullptr};
    ::execv(python.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 3);
}

int run(const Request& r) {
  const char* env_python = std::getenv("HOOKSCOPE_PYTHON");
  const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
  if (::access(python.c_str(), X_OK) != 0) {
    throw CliError(kExitUsage, fmt::format(
        "{} not found or not executable: the torch bridge runs under the Python that has "
        "PyTorch (Debian: apt-get install python3-torch, or scripts/setup.sh); set "
        "HOOKSCOPE_PYTHON to use another interpreter", python));
  }
  if (!has_torch(python)) {
    throw CliError(kExitUsage, fmt::format(
        "{} cannot import torch: install PyTorch for it (Debian: apt-get install python3-torch, "
        "or scripts/setup.sh), or set HOOKSCOPE_PYTHON to an interpreter that has it", python));
  }
  std::string dir;
  std::string looked;
  for (const fs::path& d : bridge_dirs()) {
    if (has_bridge(d)) {
      dir = d.string();
      break;
    }
    looked += (looked.empty() ? "" : ", ") + d.string();
  }
  if (dir.empty()) {
    throw CliError(kExitUsage, fmt::format(
        "the hookscope Python package (with its _C extension) is not built or installed; looked "
        "in {}. Build it (cmake with libtorch-dev, python3-torch and pybind11-dev installed: "
        "target hookscope_python) or set HOOKSCOPE_PYTHONPATH to the folder that holds "
        "hookscope/", looked));
  }
  std::error_code ec;
  if (!fs::is_regular_file(r.script, ec)) {
    throw CliError(kExitUsage, fmt::format("no such script: {}", r.script));
  }
  const char* old = std::getenv("PYTHONPATH");
  const std::string path = old && *old ? dir + ":" + old : dir;
  ::setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<std::string> args = {python, "-m", "hookscope.record", "-o", r.output, r.script};
  args.insert(args.end(), r.args.begin(), r.args.end());
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(python.c_str(), cargv.data());
  throw CliError(kExitUsage, fmt::format("could not run {}: {}", python, std::strerror(errno)));
}

}  // namespace

std::optional<int> maybe_record_python(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string_view verb = argv[1];
  bool python_flag = false;
  if (verb == "record") {
    for (int i = 2; i < argc && !python_flag; ++i) python_flag = std::string_view(argv[i]) == "--python";
    if (!python_flag) return std::nullopt;
  } else if (verb != "record-python") {
    return std::nullopt;
  }
  try {
    const Request r = parse(argc, argv, 2, python_flag);
    if (r.help) {
      fmt::print("{}", kUsage);
      return kExitOk;
    }
    return run(r);
  } catch (const CliError& e) {
    fmt::print(stderr, "hookscope-cli: error: {}\n", e.what());
    return e.exit_code;
  }
}

}  // namespace hookscope::cli
