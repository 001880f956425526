// Note [Owner legend labels].

#include "render/layout/owner_label.h"

#include <fmt/format.h>

namespace hookscope::render {

namespace {

constexpr std::string_view kEllipsis = "\xe2\x80\xa6";  // one character on screen

// A dotted module path cut at the front, whole components kept: "…layers.3.attn".
std::string tail_of_path(std::string_view path, size_t max_chars) {
  if (path.size() <= max_chars) return std::string(path);
  size_t from = path.size() - (max_chars - 1);
  const size_t dot = path.find('.', from);
  if (dot != std::string_view::npos && dot + 1 < path.size()) from = dot + 1;
  return std::string(kEllipsis) + std::string(path.substr(from));
}

// "file.py:123" with a long file name cut in the middle; the line and the
// file's end stay.
std::string middle_cut(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars || max_chars < 8) return std::string(text);
  const size_t keep_end = (max_chars - 1) * 3 / 5, keep_front = max_chars - 1 - keep_end;
  return std::string(text.substr(0, keep_front)) + std::string(kEllipsis) +
         std::string(text.substr(text.size() - keep_end));
}

std::string end_cut(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars || max_chars < 2) return std::string(text);
  return std::string(text.substr(0, max_chars - 1)) + std::string(kEllipsis);
}

}  // namespace

std::string owner_legend_label(const analysis::Model& model, analysis::OwnerIndex owner, std::string_view tag,
                               size_t max_chars) {
  if (owner >= model.owners().size()) return std::string(tag);
  const analysis::OwnerInfo& o = model.owners()[owner];
  if (o.label == 0) return fmt::format("owner #{}", o.id);
  const std::string& label = model.str(o.label);
  switch (o.kind) {
    case trace::OwnerKind::kReducer:
      return std::string(tag);
    case trace::OwnerKind::kModule: {
      constexpr std::string_view kWord = "module ";
      return std::string(kWord) + tail_of_path(label, max_chars > kWord.size() + 4 ? max_chars - kWord.size() : 4);
    }
    case trace::OwnerKind::kCallSite:
      return middle_cut(label, max_chars);
    case trace::OwnerKind::kRetainGrad:
      return "retain_grad";
    default:
      if (label == "c++ hooks") return "C++ hooks";  // the torch bridge's owner of C++ hooks
      return end_cut(label, max_chars);
  }
}

}  // namespace hookscope::render
