// hookscope._C: the trace writer (hookscope_core's, the same .hstrace format)
// and the torch side of the bridge (nodes.cpp) for the Python package.
// See docs/torch-bridge.md.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "bridge.h"
#include "trace/emit.h"
#include "trace/event.h"
#include "trace/strings.h"
#include "trace/writer.h"

namespace py = pybind11;
using namespace hookscope;

namespace {

std::unique_ptr<trace::FileRecorder> g_recorder;

void start(const std::string& path, const std::string& scenario, int rank, int world_size) {
  if (g_recorder) {
    throw std::runtime_error("hookscope: a recording is already running (to " +
                             g_recorder->writer().path() + "); stop it before starting another");
  }
  trace::TraceHeader header;
  header.scenario = scenario;
  header.rank = rank;
  header.world_size = world_size;
  bridge::reset_registry();
  bridge::set_rank(rank < 0 ? 0 : rank);
  trace::set_thread_rank(static_cast<uint16_t>(rank < 0 ? 0 : rank));
  g_recorder = std::make_unique<trace::FileRecorder>(path, header);
  g_recorder->start();
}

py::dict finish() {
  if (!g_recorder) throw std::runtime_error("hookscope: no recording is running");
  std::unique_ptr<trace::FileRecorder> rec = std::move(g_recorder);
  bridge::reset_registry();
  rec->finish();
  const trace::WriterStats s = rec->writer().stats();
  py::dict out;
  out["events"] = s.events_written;
  out["bytes"] = s.bytes_written;
  out["path"] = rec->writer().path();
  return out;
}

template <typename E>
void export_enum(py::module_& m, const char* prefix, E count) {
  for (int i = 0; i < static_cast<int>(count); ++i) {
    std::string_view name = trace::to_string(static_cast<E>(i));
    if (name.empty() || name == "?" || name == "unknown") continue;
    m.attr((std::string(prefix) + std::string(name)).c_str()) = i;
  }
}

PyObject* borrowed(const py::handle& h) { return h.ptr(); }

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "hookscope's torch bridge: trace writer and autograd Node access (libtorch 1.13)";
  m.def("start", &start, py::arg("path"), py::arg("scenario"), py::arg("rank") = -1,
        py::arg("world_size") = 1);
  m.def("finish", &finish);
  m.def("is_running", [] { return static_cast<bool>(g_recorder); });
  m.def("pause", [] {
    if (g_recorder) g_recorder->pause();
  });
  m.def("resume", [] {
    if (g_recorder) g_recorder->resume();
  });
  m.def("recording", [] { return trace::recording(); });
  m.def("intern", [](std::string_view s) { return trace::intern(s); });
  m.def("emit",
        [](int kind, int sub, uint64_t node, uint64_t key, uint64_t arg, uint32_t owner,
           uint32_t actor) {
          trace::emit(static_cast<trace::EventKind>(kind), static_cast<uint8_t>(sub), node, key,
                      arg, owner, actor);
        },
        py::arg("kind"), py::arg("sub") = 0, py::arg("node") = 0, py::arg("key") = 0,
        py::arg("arg") = 0, py::arg("owner") = 0, py::arg("actor") = 0);
  m.def("new_key", &bridge::new_key);
  m.def("node_id", [](py::handle obj) { return bridge::node_id(borrowed(obj)); });
  m.def("accumulator_id", [](py::handle t, bool create) {
    return bridge::accumulator_id(borrowed(t), create);
  });
  m.def("release_held", &bridge::release_held);
  m.def("observe_graph", [](py::handle roots) { bridge::observe_graph(borrowed(roots)); });
  m.def("snapshot", &bridge::snapshot, py::arg("add_owner"), py::arg("remove_actor"),
        py::arg("pre_kind") = static_cast<int>(trace::HookKind::kPre));
  m.def("cpp_post_hook_keys", [](py::handle obj) { return bridge::cpp_post_hook_keys(borrowed(obj)); });
  m.def("post_hook_count", [](py::handle obj) { return bridge::post_hook_count(borrowed(obj)); });
  m.def("set_reducer", &bridge::set_reducer);
  m.def("set_prepared", &bridge::set_prepared);
  m.def("set_no_sync", &bridge::set_no_sync);
  m.def("removed_hooks_of", &bridge::removed_hooks_of);
  m.def("clear_prepared", &bridge::clear_prepared);
  m.def("python_hook_dicts", [] { return py::reinterpret_steal<py::list>(bridge::python_hook_dicts()); });
  m.def("take_new_accumulators",
        [] { return py::reinterpret_steal<py::list>(bridge::take_new_accumulators()); });

  // The trace vocabulary (core/trace/event.h), by the names to_string gives.
  export_enum(m, "EV_", trace::EventKind::kCount);
  export_enum(m, "HOOK_", static_cast<trace::HookKind>(trace::kNumHookKinds));
  export_enum(m, "OWNER_", static_cast<trace::OwnerKind>(6));
  m.attr("NODE_IS_LEAF_ACCUMULATOR") = trace::kNodeIsLeafAccumulator;
  m.attr("FORMAT_VERSION") = "1.1";
}
