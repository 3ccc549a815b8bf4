// A table's points uploaded run by run into their place in GPU blocks (the host half, which reads
// and checks them, is arrow_points.cpp).
#include <algorithm>

#include "io/input_limits.hpp"
#include "io/table_io.hpp"
#include "kernels/tensor_access.hpp"

namespace surfgrad::io {

PointBlocks load_table_point_blocks(const gpu::ContextPtr& ctx, const std::string& path,
                                    const std::vector<std::string>& columns, uint64_t max_block_bytes) {
  if (max_block_bytes == 0) max_block_bytes = ctx->limits().max_storage_buffer_binding_size / 4;
  int64_t block_bytes = int64_t(std::min<uint64_t>(max_block_bytes, uint64_t(1) << 62));
  PointBlocks out;
  int64_t dims = 0, filled = 0;  // a stream's rows in its last block (streams come in order)
  bool stream = false;           // no declared row count: the last block is cut to the rows that came
  // Runs come in any order where row groups are read in parallel (each with its first row);
  // a block is made when its first run arrives, as long as the declared rows left (a stream
  // declares none: a whole block, cut at the end).
  auto upload = [&](const float* rows, int64_t first, int64_t n, int64_t d, int64_t declared) {
    const int64_t block_rows = table_block_rows(block_bytes, d), in_block = first % block_rows;
    const size_t b = size_t(first / block_rows);
    try {
      if (b >= out.blocks.size()) out.blocks.resize(b + 1);
      if (!out.blocks[b].defined()) {
        int64_t rows_left = declared > first ? declared - int64_t(b) * block_rows : block_rows;
        out.blocks[b] = Tensor::empty(ctx, {std::min(block_rows, rows_left), d}, DType::f32);
      }
      const Tensor& block = out.blocks[b];
      if (in_block + n > block.shape(0))
        throw file_error(path, "holds more rows than its metadata declares (" + std::to_string(declared) +
                                   "); the file is corrupt: write it again");
      ctx->upload(*TensorAccess::buffer(block), rows, uint64_t(n * d) * 4, uint64_t(in_block * d) * 4);
      if (declared < 0) stream = true, filled = in_block + n;
    } catch (const Error& e) {
      throw Error(e.kind(), "'" + path + "': rows " + std::to_string(first) + "–" + std::to_string(first + n) + " × " +
                                std::to_string(d) + ": " + e.message());
    }
  };
  read_table_points(path, columns, block_bytes, dims, upload);
  if (stream && !out.blocks.empty() && filled < out.blocks.back().shape(0))
    out.blocks.back() = out.blocks.back().slice(0, 0, filled).contiguous();
  return out;
}

}  // namespace surfgrad::io
