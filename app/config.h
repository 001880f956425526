#pragma once
// Where the app keeps its settings: $XDG_CONFIG_HOME/hookscope, else
// ~/.config/hookscope (imgui.ini with the window layout, recent files).
// No GUI code.

#include <filesystem>
#include <string>
#include <vector>

namespace hookscope::app {

// The directory, created on demand; empty when neither variable is set or it
// cannot be created (then nothing is persisted).
std::filesystem::path config_dir();

// config_dir()/recent.txt, or empty when there is no config directory.
std::filesystem::path default_recent_file();

// The most recently opened traces, newest first, one set of files per entry
// (the ranks of one run), kept in config_dir()/recent.txt.
class RecentFiles {
 public:
  static constexpr size_t kMax = 10;
  // `file` empty: nothing is read or saved.
  explicit RecentFiles(std::filesystem::path file);
  const std::vector<std::vector<std::string>>& entries() const { return entries_; }
  // Moves (or adds) the set to the front and saves.
  void add(const std::vector<std::string>& files);
  void clear();

 private:
  void save() const;
  std::filesystem::path file_;
  std::vector<std::vector<std::string>> entries_;
};

}  // namespace hookscope::app
