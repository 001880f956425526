#include "config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace hookscope::app {

std::filesystem::path config_dir() {
  std::filesystem::path dir;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) {
    dir = std::filesystem::path(xdg) / "hookscope";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::filesystem::path(home) / ".config" / "hookscope";
  } else {
    return {};
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return {};
  return dir;
}

std::filesystem::path default_recent_file() {
  const auto dir = config_dir();
  return dir.empty() ? dir : dir / "recent.txt";
}

// recent.txt: one entry per line, the files of an entry separated by tabs.
RecentFiles::RecentFiles(std::filesystem::path file) : file_(std::move(file)) {
  if (file_.empty()) return;
  std::ifstream in(file_);
  std::string line;
  while (entries_.size() < kMax && std::getline(in, line)) {
    std::vector<std::string> files;
    size_t start = 0;
    while (start <= line.size()) {
      const size_t tab = line.find('\t', start);
      const size_t end = tab == std::string::npos ? line.size() : tab;
      if (end > start) files.push_back(line.substr(start, end - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (!files.empty()) entries_.push_back(std::move(files));
  }
}

void RecentFiles::add(const std::vector<std::string>& files) {
  if (files.empty()) return;
  std::vector<std::string> absolute;
  for (const auto& f : files) {
    std::error_code ec;
    const auto p = std::filesystem::absolute(f, ec);
    absolute.push_back(ec ? f : p.lexically_normal().string());
  }
  std::erase(entries_, absolute);
  entries_.insert(entries_.begin(), absolute);
  if (entries_.size() > kMax) entries_.resize(kMax);
  save();
}

void RecentFiles::clear() {
  entries_.clear();
  save();
}

void RecentFiles::save() const {
  if (file_.empty()) return;
  // Write a sibling and rename, so a crash never leaves half a list.
  const auto tmp = file_.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;
    for (const auto& e : entries_) {
      for (size_t i = 0; i < e.size(); ++i) out << (i ? "\t" : "") << e[i];
      out << '\n';
    }
    if (!out) return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file_, ec);
}

}  // namespace hookscope::app
