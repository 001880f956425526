#include <fmt/format.h>

#include <map>
#include <tuple>
#include <vector>

#include "analysis/state.h"
#include "export/export.h"

namespace hookscope::exporters {

using trace::Event;
using trace::EventKind;

namespace {

class ChromeWriter {
 public:
  ChromeWriter(const analysis::Model& m, std::FILE* out) : m_(m), out_(out) {}

  void run() {
    std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", out_);
    t0_ = m_.num_events() ? m_.time_ns(0) : 0;
    for (size_t i = 0; i < m_.num_events(); ++i) visit(i);
    write_metadata();
    std::fputs("\n]}\n", out_);
  }

 private:
  using ThreadKey = std::tuple<uint32_t, uint32_t>;  // (source, thread)
  struct Open {
    double ts;
    std::string name;
    std::string args;
  };

  double us(size_t i) const { return static_cast<double>(m_.time_ns(i) - t0_) / 1000.0; }

  void record(const std::string& json) {
    std::fputs(first_ ? "" : ",\n", out_);
    std::fputs(json.c_str(), out_);
    first_ = false;
  }

  std::string fn_name(uint32_t source, uint64_t node) const {
    const auto f = m_.find_function(source, node);
    return f == analysis::kNoIndex ? fmt::format("Function #{}", node) : m_.function_name(f);
  }
  std::string owner(uint32_t source, uint32_t id) const {
    const auto o = m_.find_owner(source, id);
    return o == analysis::kNoIndex ? fmt::format("owner #{}", id) : m_.owner_name(o);
  }

  // "owner":"label", then every other field of the kind by its name in the
  // table (Note [Typed events]); strings as text.
  std::string named_fields(const Event& e, uint32_t source) const {
    std::string args = fmt::format(R"("owner":"{}")", json_escape(owner(source, e.owner)));
    const trace::EventKindInfo* info = trace::event_kind_info(e.kind);
    if (info == nullptr) return args;
    for (const trace::EventFieldInfo& f : info->fields) {
      if (f.slot == "owner") continue;
      const uint64_t v = trace::slot_value(e, f.slot);
      if (f.type == "StringId") {
        args += fmt::format(R"(,"{}":"{}")", f.name, json_escape(m_.str(static_cast<uint32_t>(v))));
      } else if (f.slot == "node") {
        args += fmt::format(R"(,"{}":"{}")", f.name, json_escape(fn_name(source, v)));
      } else {
        args += fmt::format(R"(,"{}":{})", f.name, v);
      }
    }
    return args;
  }

  void complete(const Event& e, double begin, double end, const std::string& name,
                const char* cat, const std::string& args) {
    record(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"name":"{}","cat":"{}","args":{{{}}}}})",
                       e.rank, e.thread, begin, std::max(0.0, end - begin), json_escape(name), cat, args));
  }

  void instant(const Event& e, double ts, const std::string& name, const char* cat,
               const std::string& args, const char* scope = "t") {
    record(fmt::format(R"({{"ph":"i","s":"{}","pid":{},"tid":{},"ts":{:.3f},"name":"{}","cat":"{}","args":{{{}}}}})",
                       scope, e.rank, e.thread, ts, json_escape(name), cat, args));
  }

  void flow(const char* ph, const Event& e, double ts, uint64_t id, const char* extra = "") {
    record(fmt::format(R"({{"ph":"{}","pid":{},"tid":{},"ts":{:.3f},"id":{},"name":"grad ready -> allreduce","cat":"ddp"{}}})",
                       ph, e.rank, e.thread, ts, id, extra));
  }

  void visit(size_t i) {
    const Event e = m_.event(i);
    const uint32_t s = m_.source(i);
    const double ts = us(i);
    const ThreadKey tk{s, e.thread};
    threads_[{e.rank, e.thread}] = true;
    ranks_[e.rank] = true;
    switch (e.kind) {
      case EventKind::kBackwardBegin:
        stacks_[tk].push_back({ts, e.as<trace::ev::BackwardBegin>().grad ? "autograd::grad" : "backward", ""});
        break;
      case EventKind::kApplyBegin:
        stacks_[tk].push_back({ts, fn_name(s, e.node), fmt::format(R"("node":{})", e.node)});
        break;
      case EventKind::kBackwardEnd:
      case EventKind::kApplyEnd: {
        auto& st = stacks_[tk];
        if (st.empty()) break;
        Open o = std::move(st.back());
        st.pop_back();
        complete(e, o.ts, ts, o.name, e.kind == EventKind::kApplyEnd ? "apply" : "backward", o.args);
        break;
      }
      case EventKind::kHookAdded:
      case EventKind::kHookFired:
      case EventKind::kHookRemoved:
      case EventKind::kHookRemoveFailed: {
        const auto kind = trace::to_string(trace::hook_kind_of(e));
        std::string args = fmt::format(R"("key":{},"hook_kind":"{}","function":"{}","node":{})", e.key, kind,
                                       json_escape(fn_name(s, e.node)), e.node);
        if (e.kind != EventKind::kHookRemoveFailed) {
          args += fmt::format(R"(,"owner":"{}")", json_escape(owner(s, e.owner)));
        }
        if (const uint32_t by = trace::remover_of(e)) args += fmt::format(R"(,"by":"{}")", json_escape(owner(s, by)));
        instant(e, ts, fmt::format("{} {}", trace::to_string(e.kind), kind), "hook", args);
        if (e.kind == EventKind::kHookFired) last_fire_[tk] = ts;
        break;
      }
      case EventKind::kBucketReady: {
        const uint64_t id = ++flow_ids_;
        auto lf = last_fire_.find(tk);
        if (lf != last_fire_.end()) flow("s", e, lf->second, id);
        flow("t", e, ts, id);
        const auto ready = e.as<trace::ev::BucketReady>();
        pending_flow_[{s, e.rank, ready.collective_id}] = id;
        instant(e, ts, fmt::format("bucket {} ready", ready.bucket), "ddp",
                fmt::format(R"("reducer":"{}","parameters":{})", json_escape(owner(s, e.owner)), ready.num_params));
        break;
      }
      case EventKind::kCollectiveBegin: {
        collectives_[{s, e.rank, e.key}] = {ts, e};
        auto pf = pending_flow_.find({s, e.rank, e.key});
        if (pf != pending_flow_.end()) {
          flow("f", e, ts, pf->second, R"(,"bp":"e")");
          pending_flow_.erase(pf);
        }
        break;
      }
      case EventKind::kCollectiveEnd: {
        auto it = collectives_.find({s, e.rank, e.key});
        if (it == collectives_.end()) break;
        const Event& b = it->second.second;
        const auto begin = b.as<trace::ev::CollectiveBegin>();
        const auto end = e.as<trace::ev::CollectiveEnd>();
        const auto op = trace::to_string(begin.op);
        const std::string name = begin.bucket != trace::kNoBucket ? fmt::format("{} bucket {}", op, begin.bucket)
                                                                  : std::string(op);
        std::string args = fmt::format(R"("bytes":{},"status":"{}","backend_ns":{})", begin.bytes,
                                       trace::to_string(end.status), end.duration_ns);
        if (end.placement != trace::kPlacementHost) {  // Note [Collective placement]
          args += fmt::format(R"(,"device":"cuda:{}","stream":{})", trace::placement_device(end.placement),
                              trace::placement_stream(end.placement));
        }
        complete(b, it->second.first, ts, name, "collective", args);
        collectives_.erase(it);
        break;
      }
      case EventKind::kFailure: {
        const auto failure = e.as<trace::ev::Failure>();
        instant(e, ts, fmt::format("failure of rank {}", failure.failed_rank), "failure",
                fmt::format(R"("what":"{}")", json_escape(m_.str(failure.description))), "p");
        break;
      }
      case EventKind::kRecoveryStep: {
        const auto step = e.as<trace::ev::RecoveryStep>();
        instant(e, ts, fmt::format("recovery: {}", trace::to_string(step.step)), "recovery",
                fmt::format(R"("what":"{}")", json_escape(m_.str(step.description))), "p");
        break;
      }
      case EventKind::kReducerConstructed:
      case EventKind::kReducerDestroyed:
      case EventKind::kMarkedTwice:
      case EventKind::kUnusedParameter:
      case EventKind::kAutogradHookNoop:
      case EventKind::kProcessGroupCreated:
      case EventKind::kProcessGroupDestroyed:
      case EventKind::kTrainStep:
        instant(e, ts, std::string(trace::to_string(e.kind)), "ddp", named_fields(e, s));
        break;
      default:
        break;
    }
  }

  void write_metadata() {
    for (auto& [rank, _] : ranks_) {
      record(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":"rank {}"}}}})", rank, rank));
    }
    for (auto& [key, _] : threads_) {
      record(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"thread {}"}}}})",
                         key.first, key.second, key.second));
    }
  }

  const analysis::Model& m_;
  std::FILE* out_;
  int64_t t0_ = 0;
  bool first_ = true;
  uint64_t flow_ids_ = 0;
  std::map<ThreadKey, std::vector<Open>> stacks_;
  std::map<ThreadKey, double> last_fire_;
  std::map<std::tuple<uint32_t, uint16_t, uint64_t>, uint64_t> pending_flow_;
  std::map<std::tuple<uint32_t, uint16_t, uint64_t>, std::pair<double, Event>> collectives_;
  std::map<std::pair<uint16_t, uint32_t>, bool> threads_;
  std::map<uint16_t, bool> ranks_;
};

}  // namespace

void write_chrome_trace(const analysis::Model& model, std::FILE* out) {
  ChromeWriter(model, out).run();
}

}  // namespace hookscope::exporters
