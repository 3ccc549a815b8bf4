// The private side of Tensor, for the launch seam and the tensor layer above it only: building a
// tensor from parts, and the device buffer behind one. It lives here, below the tensor layer,
// because the seam binds a tensor's buffer and layers only point downward
// (scripts/check_layers.sh).
#pragma once
#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct Storage {
  gpu::ContextPtr ctx;
  gpu::BufferPtr buffer;
  int64_t elements = 0;  // how many elements of the dtype the buffer holds
};

struct TensorAccess {
  static Tensor make(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype) {
    Tensor t;
    t.storage_ = std::move(storage);
    t.shape_ = std::move(shape);
    t.strides_ = std::move(strides);
    t.offset_ = offset;
    t.dtype_ = dtype;
    return t;
  }
  static const std::shared_ptr<Storage>& storage(const Tensor& t) { return t.storage_; }
  static const gpu::Buffer* buffer(const Tensor& t) { return t.storage_->buffer.get(); }
};

}  // namespace surfgrad
