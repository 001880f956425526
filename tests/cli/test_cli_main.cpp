// hookscope-cli as a user drives it: --help and --version, exit codes and
// messages for usage errors, unreadable, corrupt and truncated files.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"
#include "testing/test_util.h"

using namespace hookscope;
namespace fs = std::filesystem;

namespace {

testing::CommandResult cli(const std::string& args) {
  return testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " " + args);
}

}  // namespace

// Note [Which OpenBLAS kernels]: --version names the kernels in use and
// whether the environment chose them.
TEST_CASE("cli: --version names the BLAS kernels and who chose them") {
  auto own = testing::run_command("env -u OPENBLAS_CORETYPE " + std::string(HOOKSCOPE_CLI_PATH) +
                                  " --version");
  CAPTURE(own.out);
  CHECK(own.exit == 0);
  CHECK(own.out.find("hookscope-cli ") == 0);
  CHECK(own.out.find("BLAS: OpenBLAS ") != std::string::npos);
  CHECK(own.out.find("OPENBLAS_CORETYPE") == std::string::npos);
#if defined(__x86_64__)
  auto forced = testing::run_command("OPENBLAS_CORETYPE=Haswell " + std::string(HOOKSCOPE_CLI_PATH) +
                                     " --version");
  CHECK(forced.out.find("BLAS: OpenBLAS Haswell (OPENBLAS_CORETYPE=Haswell)\n") != std::string::npos);
#endif
}

TEST_CASE("cli: exit codes and messages for usage errors, unreadable and corrupt files") {
  testing::TempDir dir("hookscope-cli-test");
  CHECK(cli("--help").exit == 0);
  for (const char* verb : {"record", "launch", "info", "events", "state", "check", "export", "diff", "stats"}) {
    CAPTURE(verb);
    CHECK(cli(std::string(verb) + " --help").exit == 0);
  }
  CHECK(cli("").exit == 2);
  CHECK(cli("record nosuch").exit == 2);
  CHECK(cli("record recovery --policy sideways").exit == 2);
  auto missing = cli("info " + dir.file("missing.hstrace"));
  CHECK(missing.exit == 2);
  CHECK(missing.out.find("no such file") != std::string::npos);
  {
    std::ofstream(dir.file("junk.hstrace")) << "this is not a trace at all, just text";
  }
  auto junk = cli("check " + dir.file("junk.hstrace"));
  CHECK(junk.exit == 2);
  CHECK(junk.out.find("byte") != std::string::npos);

  REQUIRE(cli("record recovery --steps 6 -o " + dir.file("good.hstrace")).exit == 0);
  REQUIRE(cli("record recovery --steps 6 --policy none -o " + dir.file("bad.hstrace")).exit == 0);
  CHECK(cli("check " + dir.file("good.hstrace")).exit == 0);
  auto bad = cli("check " + dir.file("bad.hstrace"));
  CHECK(bad.exit == 1);
  CHECK(bad.out.find("leaked_hook") != std::string::npos);
  CHECK(cli("state " + dir.file("good.hstrace") + " --at 999999999").exit == 2);
  CHECK(cli("events " + dir.file("good.hstrace") + " --kind hook_fyre").exit == 2);
  auto fires = cli("events " + dir.file("good.hstrace") + " --kind hook_fire --rank 1");
  CHECK(fires.exit == 0);
  CHECK(fires.out.find("hook_fire") != std::string::npos);
  CHECK(fires.out.find(" r0 ") == std::string::npos);
  CHECK(cli("diff " + dir.file("good.hstrace") + " " + dir.file("bad.hstrace")).exit == 1);
  CHECK(cli("export " + dir.file("bad.hstrace") + " --format dot -o " + dir.file("g.dot")).exit == 0);
  CHECK(fs::file_size(dir.file("g.dot")) > 100);

  // A truncated file still loads up to its last complete block, with a warning.
  const auto size = fs::file_size(dir.file("bad.hstrace"));
  fs::copy_file(dir.file("bad.hstrace"), dir.file("cut.hstrace"));
  fs::resize_file(dir.file("cut.hstrace"), size * 2 / 3);
  auto cut = cli("info " + dir.file("cut.hstrace"));
  CHECK(cut.exit == 0);
  CHECK(cut.out.find("truncated at byte") != std::string::npos);
}
