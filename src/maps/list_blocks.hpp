// [N, k] neighbour lists kept as row blocks where one storage binding cannot hold them
// (KnnResult's blocks): t-SNE's k = 90 lists at 10M points are 3.6 GB, NVIDIA binds 2 GiB.
// Kernels that stay in their own rows run once a block; the one that reads other points'
// lists (neighbour descent) binds every block and reads through blocked_reader's function.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "surfgrad/knn.hpp"

namespace surfgrad {

// Descent binds the blocks of the previous lists beside five other bindings, within the eight
// storage bindings WebGPU guarantees a kernel. Three blocks hold more than the 50 principal
// components that go with them fit in one binding (10.7M points with 2 GiB bindings).
constexpr int kMaxListBlocks = 3;

// Testing aid: whether descent skips the pairs it looked at in an earlier round (nndescent.wgsl;
// the default). The test that turns it off checks the lists come out the same bit for bit.
void set_descent_skips_old_pairs(bool skip);
bool descent_skips_old_pairs();

// Testing aid: which descent kernel runs. Auto (the default): a thread a point on CPU adapters
// (nndescent_thread.wgsl), a workgroup a point elsewhere (nndescent.wgsl); the test that forces
// each checks they give the same bits.
enum class DescentKernel { Auto, ThreadAPoint, WorkgroupAPoint };
void set_descent_kernel(DescentKernel kernel);
DescentKernel descent_kernel();

// Rows per block of an [n, k] list of 4-byte words on this adapter: n (one block) where it fits
// one binding, else as many equal blocks as it needs. Throws LimitExceeded (naming n, k and
// the binding limit) past kMaxListBlocks blocks.
int64_t list_block_rows(const gpu::Context& ctx, int64_t n, int64_t k);

// The blocks of a result (a plain result is one block).
std::vector<Tensor> index_blocks(const KnnResult& r);
std::vector<Tensor> distance_blocks(const KnnResult& r);
// A result from its blocks: plain tensors where there is one block.
KnnResult knn_from_blocks(std::vector<Tensor> indices, std::vector<Tensor> distances, int64_t block_rows);

// WGSL for a flat list bound as `blocks` read-only bindings `name_0 …` from binding `first`,
// `block_words` elements each (the last may be shorter), and `fn name_at(e: u32) -> type` that
// reads element e of the whole list. With one block it is a plain read.
std::string blocked_reader(const std::string& name, const std::string& type, uint32_t first, size_t blocks,
                           uint64_t block_words);

}  // namespace surfgrad
