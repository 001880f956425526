#pragma once
// hookscope-cli record-python (and `record --python`): record a PyTorch
// program through the torch bridge (python/hookscope, docs/torch-bridge.md).

#include <optional>

namespace hookscope::cli {

// When argv asks for `record-python [-o OUT] SCRIPT ARGS...` or
// `record [-o OUT] --python SCRIPT ARGS...`: runs
// `/usr/bin/python3 -m hookscope.record -o OUT SCRIPT ARGS...` in place of
// this process (exec; its exit code is the program's) with PYTHONPATH
// pointing at the bridge, and returns only on an error (exit code 2, the
// reason printed). Otherwise nullopt: parse argv as usual. Everything after
// SCRIPT belongs to the script, options included.
std::optional<int> maybe_record_python(int argc, char** argv);

}  // namespace hookscope::cli
