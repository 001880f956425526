// Rendezvous stores named by a string (Note [Rendezvous store specs]).
#include <stdexcept>
#include <string>

#include "ddp/process_group.h"

namespace hookscope::ddp {

std::optional<RedisAddress> parse_redis_spec(const std::string& spec) {
  const std::string scheme = "redis://";
  if (spec.rfind(scheme, 0) != 0) return std::nullopt;
  auto bad = [&spec](const std::string& why) {
    throw std::invalid_argument("bad Redis store '" + spec + "': " + why +
                                "; expected redis://HOST:PORT, e.g. redis://10.0.0.1:6379");
  };
  std::string rest = spec.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  RedisAddress a;
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) bad("no port");
  a.host = rest.substr(0, colon);
  if (a.host.empty()) bad("no host");
  const std::string port = rest.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    bad("the port is not a number");
  }
  a.port = std::stoi(port);
  if (a.port < 1 || a.port > 65535) bad("the port is not in 1..65535");
  return a;
}

void check_run_id(const std::string& run_id) {
  if (run_id.empty()) return;
  if (run_id.size() > 200 ||
      run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos) {
    throw std::invalid_argument("run id '" + run_id +
                                "' must be 1 to 200 letters, digits, '.', '_' or '-'");
  }
}

std::shared_ptr<Store> make_store(const std::string& spec, const std::string& run_id) {
  check_run_id(run_id);
  std::shared_ptr<Store> store;
  if (auto redis = parse_redis_spec(spec)) {
    if (run_id.empty()) {
      throw std::invalid_argument("the Redis store " + spec +
                                  " needs a run id, the same on every rank and new for each run "
                                  "(runs sharing the server would collide on its keys)");
    }
    store = make_redis_store(redis->host, redis->port);
  } else {
    const std::string file = "file://";
    store = make_file_store(spec.rfind(file, 0) == 0 ? spec.substr(file.size()) : spec);
  }
  return run_id.empty() ? store : prefixed(std::move(store), "run-" + run_id + "/");
}

}  // namespace hookscope::ddp
