#pragma once
// Layout quality measured the same way on Graphviz dot's drawing and on ours
// (bench_layout's BM_VsDot): edge crossings and drawing area.
//
// Note [Crossings of a drawing]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Both layouts route each edge as a chain of cubic Béziers (P0 C C P1 C C P2
// ...: ours in Layout::route, dot's in the `edge` lines of -Tplain). Each
// cubic is flattened into kSamplesPerCubic segments and every proper
// intersection of two segments of different edges counts as one crossing
// (segments that only touch, e.g. at a shared port, do not count). Pairs are
// found on a uniform grid; a crossing is counted in the one cell that holds
// its point. Area is the bounding box of boxes and routes, in points (dot's
// inches * 72; the DOT file gives boxes their size in inches = ours / 72),
// also reported per unit of box area so a sparser drawing shows.

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "render/layout/layout.h"

namespace hookscope::bench {

struct Drawing {
  std::vector<std::vector<render::Vec2>> edges;  // Bézier chains, 3k + 1 points
  render::Vec2 min{INFINITY, INFINITY}, max{-INFINITY, -INFINITY};
  double box_area = 0;  // sum of the boxes' areas
  bool ok = false;

  void grow(render::Vec2 p) {
    min = {std::min(min.x, p.x), std::min(min.y, p.y)};
    max = {std::max(max.x, p.x), std::max(max.y, p.y)};
  }
  double area() const { return ok ? double(max.x - min.x) * double(max.y - min.y) : 0; }
};

inline Drawing drawing_of(const render::Layout& l) {
  Drawing d;
  for (size_t e = 0; e + 1 < l.route_begin.size(); ++e) {
    d.edges.emplace_back(l.route.begin() + l.route_begin[e], l.route.begin() + l.route_begin[e + 1]);
  }
  for (size_t v = 0; v < l.size.size(); ++v) d.box_area += double(l.size[v].x) * double(l.size[v].y);
  d.min = l.min;
  d.max = l.max;
  d.ok = true;
  return d;
}

// Splits a -Tplain line into words; "quoted words" keep their spaces.
inline std::vector<std::string> plain_words(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    std::string w;
    if (line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        w += line[i];
      }
      ++i;
    } else {
      while (i < line.size() && line[i] != ' ') w += line[i++];
    }
    out.push_back(std::move(w));
  }
  return out;
}

// dot -Tplain output (inches) as a Drawing in points; ok = false when the
// file has no graph line.
inline Drawing parse_dot_plain(const std::string& path) {
  constexpr float kPt = 72.f;
  Drawing d;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto w = plain_words(line);
    if (w.empty()) continue;
    if (w[0] == "graph") {
      d.ok = true;
    } else if (w[0] == "node" && w.size() >= 6) {
      const float x = std::stof(w[2]) * kPt, y = std::stof(w[3]) * kPt;
      const float hw = std::stof(w[4]) * kPt / 2, hh = std::stof(w[5]) * kPt / 2;
      d.grow({x - hw, y - hh});
      d.grow({x + hw, y + hh});
      d.box_area += 4.0 * hw * hh;
    } else if (w[0] == "edge" && w.size() >= 4) {
      const size_t n = std::stoul(w[3]);
      if (w.size() < 4 + 2 * n) continue;
      std::vector<render::Vec2> pts;
      for (size_t k = 0; k < n; ++k) {
        render::Vec2 p{std::stof(w[4 + 2 * k]) * kPt, std::stof(w[5 + 2 * k]) * kPt};
        d.grow(p);
        pts.push_back(p);
      }
      d.edges.push_back(std::move(pts));
    }
  }
  return d;
}

// Note [Crossings of a drawing].
inline size_t count_crossings(const Drawing& d) {
  constexpr int kSamplesPerCubic = 8;
  struct Seg {
    render::Vec2 a, b;
    uint32_t edge;
  };
  std::vector<Seg> segs;
  for (size_t e = 0; e < d.edges.size(); ++e) {
    const auto& p = d.edges[e];
    for (size_t k = 0; k + 3 < p.size(); k += 3) {
      render::Vec2 prev = p[k];
      for (int s = 1; s <= kSamplesPerCubic; ++s) {
        const float t = float(s) / kSamplesPerCubic, u = 1 - t;
        const float b0 = u * u * u, b1 = 3 * u * u * t, b2 = 3 * u * t * t, b3 = t * t * t;
        const render::Vec2 q{b0 * p[k].x + b1 * p[k + 1].x + b2 * p[k + 2].x + b3 * p[k + 3].x,
                             b0 * p[k].y + b1 * p[k + 1].y + b2 * p[k + 2].y + b3 * p[k + 3].y};
        segs.push_back({prev, q, static_cast<uint32_t>(e)});
        prev = q;
      }
    }
  }
  if (segs.empty()) return 0;
  double total_len = 0;
  for (const Seg& s : segs) total_len += std::hypot(s.b.x - s.a.x, s.b.y - s.a.y);
  const double cell = std::max(8.0, 2.0 * total_len / double(segs.size()));
  auto cell_of = [&](float v) { return static_cast<int64_t>(std::floor(double(v) / cell)); };
  auto key = [](int64_t cx, int64_t cy) { return (cx << 32) ^ (cy & 0xffffffff); };
  std::unordered_map<int64_t, std::vector<uint32_t>> grid;
  for (uint32_t i = 0; i < segs.size(); ++i) {
    const Seg& s = segs[i];
    const int64_t x0 = cell_of(std::min(s.a.x, s.b.x)), x1 = cell_of(std::max(s.a.x, s.b.x));
    const int64_t y0 = cell_of(std::min(s.a.y, s.b.y)), y1 = cell_of(std::max(s.a.y, s.b.y));
    for (int64_t cx = x0; cx <= x1; ++cx) {
      for (int64_t cy = y0; cy <= y1; ++cy) grid[key(cx, cy)].push_back(i);
    }
  }
  size_t crossings = 0;
  for (const auto& [k, list] : grid) {
    for (size_t i = 0; i < list.size(); ++i) {
      for (size_t j = i + 1; j < list.size(); ++j) {
        const Seg& s = segs[list[i]];
        const Seg& t = segs[list[j]];
        if (s.edge == t.edge) continue;
        const double rx = s.b.x - s.a.x, ry = s.b.y - s.a.y;
        const double qx = t.b.x - t.a.x, qy = t.b.y - t.a.y;
        const double den = rx * qy - ry * qx;
        if (std::abs(den) < 1e-12) continue;  // parallel: no proper crossing
        const double wx = t.a.x - s.a.x, wy = t.a.y - s.a.y;
        const double u = (wx * qy - wy * qx) / den, v = (wx * ry - wy * rx) / den;
        constexpr double kEps = 1e-6;
        if (u <= kEps || u >= 1 - kEps || v <= kEps || v >= 1 - kEps) continue;
        const double px = s.a.x + u * rx, py = s.a.y + u * ry;
        const int64_t cx = static_cast<int64_t>(std::floor(px / cell));
        const int64_t cy = static_cast<int64_t>(std::floor(py / cell));
        if (key(cx, cy) == k) ++crossings;
      }
    }
  }
  return crossings;
}

}  // namespace hookscope::bench
