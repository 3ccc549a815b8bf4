// Helpers the lazy-mode tests share (lazy_*_test.cpp): a scope that switches the mode, and the
// dispatches a piece of work records.
#pragma once
#include <cstdint>
#include <functional>

#include "surfgrad/tensor.hpp"
#include "test_util.hpp"

namespace sgtest {

// Lazy mode on or off for one scope, the previous mode after it.
struct LazyScope {
  bool previous;
  explicit LazyScope(bool on) : previous(surfgrad::lazy_mode()) { surfgrad::set_lazy(on); }
  ~LazyScope() { surfgrad::set_lazy(previous); }
};

// Dispatches `work` records, counted from an idle queue (sync first: nothing pending).
inline uint64_t dispatches_of(const std::function<void()>& work) {
  ctx()->sync();
  uint64_t before = ctx()->pending_dispatches();
  work();
  return ctx()->pending_dispatches() - before;
}

}  // namespace sgtest
