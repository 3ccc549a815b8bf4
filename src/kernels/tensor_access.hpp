// The private side of Tensor, for the launch seam and the tensor layer above it only: building a
// tensor from parts, and the device buffer behind one. It lives here, below the tensor layer,
// because the seam binds a tensor's buffer and layers only point downward
// (scripts/check_layers.sh).
#pragma once
#include <memory>
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct LazyNode;  // a recorded elementwise op (src/tensor/lazy.hpp)

struct Storage {
  gpu::ContextPtr ctx;
  gpu::BufferPtr buffer;
  int64_t elements = 0;  // how many elements of the dtype the buffer holds
  // Lazy mode: the op that will compute this storage when it is first bound or read; the
  // buffer is allocated then (src/tensor/lazy.cpp). Null once realised (or for eager tensors).
  std::shared_ptr<LazyNode> pending;
  // Pending nodes that read this storage: realised before anything writes into it in place.
  std::vector<std::weak_ptr<Storage>> readers;
};
// src/tensor/lazy.cpp: computes a pending storage; realises the pending readers of one.
void realize_storage(Storage& storage);
void realize_readers(Storage& storage);

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
  // The buffer, computed first where the tensor is a pending (lazy) result.
  static const gpu::Buffer* buffer(const Tensor& t) {
    if (t.storage_->pending) realize_storage(*t.storage_);
    return t.storage_->buffer.get();
  }
  // Before a kernel writes into `t` in place: pending ops that read it run first.
  static void before_write(const Tensor& t) {
    if (!t.storage_->readers.empty()) realize_readers(*t.storage_);
  }
};

}  // namespace surfgrad
