// hookscope._C: the trace writer (hookscope_core's, the same .hstrace format)
// and the torch side of the bridge (nodes.cpp) for the Python package.
// See docs/torch-bridge.md.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "bridge.h"
#include "trace/emit.h"
#include "trace/event.h"
#include "trace/fork.h"
#include "trace/strings.h"
#include "trace/writer.h"

namespace py = pybind11;
using namespace hookscope;

namespace {

std::unique_ptr<trace::FileRecorder> g_recorder;

// Note [Safe trace writes]: a trace is replaced (or, for a child process,
// written at all) only by a recording that holds a backward or a hook event.
bool worth_a_trace(const trace::Event& e) {
  switch (e.kind) {
    case trace::EventKind::kHookAdded:
      // A hook present at start (Note [Hooks present at start],
      // _present.py) is not this run's doing.
      return !e.as<trace::ev::HookAdded>().from_snapshot;
    case trace::EventKind::kBackwardBegin:
    case trace::EventKind::kHookFired:
    case trace::EventKind::kHookRemoved:
    case trace::EventKind::kHookRemoveFailed:
      return true;
    default:
      return false;
  }
}

void start(const std::string& path, const std::string& scenario, int rank, int world_size,
           bool new_file_waits) {
  if (g_recorder) {
    throw std::runtime_error("hookscope: a recording is already running (to " +
                             g_recorder->writer().path() + "); stop it before starting another");
  }
  trace::TraceHeader header;
  header.scenario = scenario;
  header.rank = rank;
  header.world_size = world_size;
  trace::WriterOptions options;
  options.publish_when = &worth_a_trace;
  options.new_file_waits = new_file_waits;
  bridge::reset_registry();
  bridge::set_rank(rank < 0 ? 0 : rank);
  trace::set_thread_rank(static_cast<uint16_t>(rank < 0 ? 0 : rank));
  g_recorder = std::make_unique<trace::FileRecorder>(path, header, options);
  g_recorder->start();
  bridge::observe_collectives(true);
}

// Never throws: a write that failed (disk full) is in "error", with the
// stats of what did reach the file; "published": the trace is under its
// name (false: it held no backward or hook event, or its first write failed,
// and an older trace of that name is unchanged).
py::dict finish() {
  if (!g_recorder) throw std::runtime_error("hookscope: no recording is running");
  {
    py::gil_scoped_release release;  // Gloo's threads end the works
    bridge::wait_collectives(std::chrono::milliseconds(1000));
  }
  std::unique_ptr<trace::FileRecorder> rec = std::move(g_recorder);
  bridge::observe_collectives(false);
  bridge::reset_registry();
  py::dict out;
  try {
    rec->finish();
  } catch (const std::exception& e) {
    out["error"] = std::string(e.what());
  }
  const trace::WriterStats s = rec->writer().stats();
  out["events"] = s.events_written;
  out["bytes"] = s.bytes_written;
  out["path"] = rec->writer().path();
  out["published"] = rec->writer().published();
  return out;
}

// Note [Recording across fork]: the child forgets the parent's recording
// without a call into it (its writer thread does not exist here; its file
// is the parent's). The FileRecorder is leaked on purpose: destroying it
// would join that thread and write a footer into the parent's file.
void after_fork_child() {
  (void)g_recorder.release();
  bridge::after_fork();
  trace::abandon_after_fork();
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

// Note [Hooks present at start] (_present.py): the objects alive whose type
// derives from one of `bases`, one list per base, by one pass over the GC's
// objects in C++ (a Python loop over the 100k-300k objects of a heap after
// `import torch` took 90-210 ms of start()). PyType_IsSubtype reads the
// type's MRO: no __class__ property or __subclasscheck__ runs.
py::list alive_of(const py::tuple& bases) {
  std::vector<PyTypeObject*> types;
  for (const py::handle b : bases) {
    if (!PyType_Check(b.ptr())) throw py::type_error("alive_of: bases must be classes");
    types.push_back(reinterpret_cast<PyTypeObject*>(b.ptr()));
  }
  std::vector<std::vector<PyObject*>> found(types.size());
  std::unordered_map<PyTypeObject*, int> which;  // per type: index in bases, -1 none
  // The heap holds a few hundred thousand objects of a few thousand types
  // (more on 2.x): a direct-mapped cache of types answers most objects with
  // one comparison, where the map's lookup was most of start()'s pass.
  struct Slot {
    PyTypeObject* type = nullptr;
    int which = -1;
  };
  std::vector<Slot> cache(1024);
  auto classify = [&](PyObject* o) {
    PyTypeObject* t = Py_TYPE(o);
    Slot& slot = cache[(reinterpret_cast<uintptr_t>(t) >> 4) & (cache.size() - 1)];
    if (slot.type != t) {
      auto [it, fresh] = which.try_emplace(t, -1);
      if (fresh) {
        for (size_t i = 0; i < types.size(); ++i) {
          if (PyType_IsSubtype(t, types[i])) {
            it->second = static_cast<int>(i);
            break;
          }
        }
      }
      slot = {t, it->second};
    }
    if (slot.which >= 0) {
      Py_INCREF(o);
      found[slot.which].push_back(o);
    }
  };
#if PY_VERSION_HEX >= 0x030C0000
  struct Visit {
    decltype(classify)* fn;
  } visit{&classify};
  // No object is made while the GC's lists are walked: the lists below are
  // built after.
  PyUnstable_GC_VisitObjects(
      [](PyObject* o, void* arg) {
        (*static_cast<Visit*>(arg)->fn)(o);
        return 1;
      },
      &visit);
#else
  py::list objs = py::module_::import("gc").attr("get_objects")();
  for (const py::handle o : objs) classify(o.ptr());
#endif
  py::list out;
  for (auto& objects : found) {
    py::list l(objects.size());
    for (size_t i = 0; i < objects.size(); ++i) PyList_SET_ITEM(l.ptr(), i, objects[i]);  // steals
    out.append(l);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "hookscope's torch bridge: trace writer and autograd Node access (libtorch 1.13)";
  m.def("start", &start, py::arg("path"), py::arg("scenario"), py::arg("rank") = -1,
        py::arg("world_size") = 1, py::arg("new_file_waits") = false);
  m.def("after_fork_child", &after_fork_child);
  m.def("flush", &trace::flush_calling_thread);
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
  m.def("alive_of", &alive_of);
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
  m.def("ready_count", &bridge::ready_count);
  m.def("set_buckets", &bridge::set_buckets);
  m.def("set_in_backward", &bridge::set_in_backward);
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
  m.attr("FROM_SNAPSHOT") = trace::kOwnerFromSnapshot;
  m.attr("FORMAT_VERSION") = "1.1";
}
