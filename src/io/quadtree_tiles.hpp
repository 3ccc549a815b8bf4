// Private to src/io: a finished map cut into a quadtree of tiles for progressive drawing (the
// layout of deepscatter's quadfeather: each tile holds a random sample of the points in its
// square that its ancestors did not take, at most `max_rows`; docs/tiles.md). No Arrow here:
// the tree is rows per tile; arrow_tiles.cpp writes it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace surfgrad::io {

struct Bounds {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct Tile {
  int z = 0;
  int64_t x = 0, y = 0;        // column and row at depth z: the square [x, x+1) × [y, y+1) of 2^z × 2^z
  Bounds bounds;               // that square in the map's coordinates
  int64_t begin = 0, end = 0;  // its rows: order[begin, end) of QuadTree::order
  std::vector<int>
      children;  // indices into QuadTree::tiles, in the order (x, y), (x+1, y), (x, y+1), (x+1, y+1) where present
  std::string key() const { return std::to_string(z) + "/" + std::to_string(x) + "/" + std::to_string(y); }
};

struct QuadTree {
  Bounds bounds;                // of all the points (x1 > x0 and y1 > y0, widened where flat)
  std::vector<uint32_t> order;  // row numbers, tile by tile (tiles[i] holds order[begin, end))
  std::vector<float> xy;        // their x, y in the same order (2 a row)
  std::vector<Tile> tiles;      // tiles[0] is the root; parents before children
};

// Cuts the n points `xy` (n × 2, C order, finite) into tiles of at most `max_rows` rows: the root
// takes a random sample of max_rows (seeded by `seed`), the rest go to the four quadrants,
// recursively. Past depth `max_depth` (points piled on one spot) a tile keeps all its rows.
QuadTree build_quadtree(const float* xy, int64_t n, int64_t max_rows, uint64_t seed = 0, int max_depth = 24);

}  // namespace surfgrad::io
