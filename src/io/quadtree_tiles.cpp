// See quadtree_tiles.hpp. The points are shuffled once; every tile then takes the first max_rows
// of its points in that order (a uniform sample of its square) and hands the rest to its
// quadrants with a stable partition, so each child's points stay shuffled. O(n × depth).
#include "io/quadtree_tiles.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "surfgrad/error.hpp"

namespace surfgrad::io {

namespace {

// A point with its coordinates, so the partitions stream through memory instead of gathering
// each point's x, y from the map at every level.
struct Pt {
  float x, y;
  uint32_t row;
};

struct Builder {
  std::vector<Pt>& pts;
  int64_t max_rows;
  int max_depth;
  QuadTree& tree;
  std::vector<Pt> scratch;

  // Quadrant of a point in the square b: 0 (x, y), 1 (x+1, y), 2 (x, y+1), 3 (x+1, y+1).
  static int quadrant(const Pt& p, float mx, float my) { return int(p.x >= mx) + 2 * int(p.y >= my); }

  // The tile `t` holds order[t.begin, end_of_points): it keeps the first max_rows, and the rest
  // become its children's (built in turn, breadth-first by the caller's queue).
  void split(size_t t, int64_t points_end, std::vector<std::pair<size_t, int64_t>>& queue) {
    Tile tile = tree.tiles[t];
    int64_t keep_end = points_end;
    if (points_end - tile.begin > max_rows && tile.z < max_depth) keep_end = tile.begin + max_rows;
    tree.tiles[t].end = keep_end;
    if (keep_end == points_end) return;
    // Stable partition of the rest by quadrant (counting sort), into the same place.
    float mx = tile.bounds.x0 + (tile.bounds.x1 - tile.bounds.x0) / 2;
    float my = tile.bounds.y0 + (tile.bounds.y1 - tile.bounds.y0) / 2;
    int64_t counts[4] = {0, 0, 0, 0};
    for (int64_t i = keep_end; i < points_end; ++i) ++counts[quadrant(pts[size_t(i)], mx, my)];
    int64_t at[4] = {keep_end, 0, 0, 0};
    for (int q = 1; q < 4; ++q) at[q] = at[q - 1] + counts[q - 1];
    scratch.resize(size_t(points_end - keep_end));
    int64_t fill[4] = {at[0] - keep_end, at[1] - keep_end, at[2] - keep_end, at[3] - keep_end};
    for (int64_t i = keep_end; i < points_end; ++i) {
      const Pt& p = pts[size_t(i)];
      scratch[size_t(fill[quadrant(p, mx, my)]++)] = p;
    }
    std::copy(scratch.begin(), scratch.end(), pts.begin() + keep_end);
    for (int q = 0; q < 4; ++q) {
      if (counts[q] == 0) continue;
      Tile c;
      c.z = tile.z + 1;
      c.x = 2 * tile.x + (q & 1);
      c.y = 2 * tile.y + (q >> 1);
      c.bounds = {q & 1 ? mx : tile.bounds.x0, q >> 1 ? my : tile.bounds.y0, q & 1 ? tile.bounds.x1 : mx,
                  q >> 1 ? tile.bounds.y1 : my};
      c.begin = at[q];
      tree.tiles[t].children.push_back(int(tree.tiles.size()));
      queue.emplace_back(tree.tiles.size(), at[q] + counts[q]);
      tree.tiles.push_back(c);
    }
  }
};

}  // namespace

QuadTree build_quadtree(const float* xy, int64_t n, int64_t max_rows, uint64_t seed, int max_depth) {
  if (n < 1 || n > int64_t(UINT32_MAX))
    throw Error(ErrorKind::Value, "tiles: " + std::to_string(n) + " points; a tiled map holds 1 to 2^32 - 1 points");
  if (max_rows < 1) throw Error(ErrorKind::Value, "tiles: at most " + std::to_string(max_rows) + " rows a tile");
  QuadTree tree;
  Bounds& b = tree.bounds;
  b = {xy[0], xy[1], xy[0], xy[1]};
  for (int64_t i = 0; i < n; ++i) {
    b.x0 = std::min(b.x0, xy[2 * i]), b.x1 = std::max(b.x1, xy[2 * i]);
    b.y0 = std::min(b.y0, xy[2 * i + 1]), b.y1 = std::max(b.y1, xy[2 * i + 1]);
  }
  // Half-open squares: widen the top edges a little so the largest points fall inside.
  auto widen = [](float& lo, float& hi) {
    float span = std::max(hi - lo, std::max(std::abs(lo), std::abs(hi)) * 1e-6f + 1e-30f);
    hi = lo + span * (1 + 1e-6f);
    if (hi <= lo) hi = std::nextafter(lo, INFINITY);
  };
  widen(b.x0, b.x1);
  widen(b.y0, b.y1);

  std::vector<uint32_t> shuffled(static_cast<size_t>(n));
  std::iota(shuffled.begin(), shuffled.end(), 0u);
  std::mt19937_64 rng(seed);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<Pt> pts(static_cast<size_t>(n));
  for (size_t i = 0; i < pts.size(); ++i)
    pts[i] = {xy[2 * size_t(shuffled[i])], xy[2 * size_t(shuffled[i]) + 1], shuffled[i]};
  shuffled = {};

  Tile root;
  root.bounds = b;
  tree.tiles.push_back(root);
  Builder builder{pts, max_rows, max_depth, tree, {}};
  std::vector<std::pair<size_t, int64_t>> queue = {{0, n}};
  for (size_t q = 0; q < queue.size(); ++q) builder.split(queue[q].first, queue[q].second, queue);
  tree.order.resize(size_t(n));
  tree.xy.resize(size_t(2 * n));
  for (size_t i = 0; i < pts.size(); ++i)
    tree.order[i] = pts[i].row, tree.xy[2 * i] = pts[i].x, tree.xy[2 * i + 1] = pts[i].y;
  return tree;
}

}  // namespace surfgrad::io
