#include "trace/strings.h"

#include "trace/fork.h"

#include <deque>
#include <mutex>
#include <new>
#include <stdexcept>
#include <unordered_map>

namespace hookscope::trace {
namespace {

struct Table {
  std::mutex mutex;
  std::deque<std::string> strings{std::string()};  // deque: stable references
  std::unordered_map<std::string_view, uint32_t> ids{{std::string_view(), 0}};
};

Table& table() {
  static Table* t = new Table();  // never destroyed: used from thread exit paths
  return *t;
}

}  // namespace

uint32_t intern(std::string_view s) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.ids.find(s);
  if (it != t.ids.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(t.strings.size());
  t.strings.emplace_back(s);
  t.ids.emplace(t.strings.back(), id);
  return id;
}

std::string lookup(uint32_t id) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (id >= t.strings.size()) {
    throw std::out_of_range("string id " + std::to_string(id) + " was never interned");
  }
  return t.strings[id];
}

std::vector<std::string> strings_since(uint32_t first, uint32_t max_count) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<std::string> out;
  for (uint32_t i = first; i < t.strings.size() && out.size() < max_count; ++i) {
    out.push_back(t.strings[i]);
  }
  return out;
}

uint32_t string_count() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return static_cast<uint32_t>(t.strings.size());
}

void strings_after_fork() noexcept { new (&table().mutex) std::mutex(); }

}  // namespace hookscope::trace
