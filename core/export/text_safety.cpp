// Strings from a trace are untrusted bytes (Note [Untrusted text]).

#include <fmt/format.h>

#include "export/export.h"

namespace hookscope::exporters {

namespace {

// Length of the valid UTF-8 sequence at s[i] (1..4), 0 when invalid
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
size_t utf8_length(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  size_t n;
  uint32_t min;
  if ((c & 0xe0) == 0xc0) {
    n = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b(k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// Calls each(cp, bytes, out) for every valid UTF-8 sequence of `s`; an
// invalid byte becomes U+FFFD in `out`. Runs of ASCII bytes that `plain`
// says `each` would copy as they are are copied whole (most of any real
// string: a byte at a time, the escapes made a JSON export 1.4x slower).
template <class Plain, class Each>
std::string map_code_points(std::string_view s, Plain plain, Each each) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t run = i;
    while (run < s.size() && plain(static_cast<unsigned char>(s[run]))) ++run;
    if (run > i) {
      out.append(s.substr(i, run - i));
      i = run;
      continue;
    }
    uint32_t cp;
    const size_t n = utf8_length(s, i, cp);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    each(cp, s.substr(i, n), out);
    i += n;
  }
  return out;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  return map_code_points(
      s, [](unsigned char c) { return c < 0x80; },
      [](uint32_t, std::string_view bytes, std::string& out) { out.append(bytes); });
}

std::string terminal_safe(std::string_view s) {
  return map_code_points(
      s, [](unsigned char c) { return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t'; },
      [](uint32_t cp, std::string_view bytes, std::string& out) {
        // C0 controls but newline and tab, DEL, C1 controls (CSI = U+009B, ...).
        if ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
          out += fmt::format("\\x{:02x}", cp);
        } else {
          out.append(bytes);
        }
      });
}

std::string json_escape(std::string_view s) {
  return map_code_points(
      s, [](unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; },
      [](uint32_t cp, std::string_view bytes, std::string& out) {
        switch (cp) {
          case '"': out += "\\\""; break;
          case '\\': out += "\\\\"; break;
          case '\n': out += "\\n"; break;
          case '\t': out += "\\t"; break;
          default:
            if (cp < 0x20 || cp == 0x7f) {
              out += fmt::format("\\u{:04x}", cp);
            } else {
              out.append(bytes);
            }
        }
      });
}

}  // namespace hookscope::exporters
