// Shared by the fuzz targets: surfgrad::Error is the documented outcome for bad input; anything
// else escaping a decoder (another exception, a crash, a sanitizer report) is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "surfgrad/error.hpp"

template <typename F>
int fuzz_one(F&& f) {
  try {
    f();
  } catch (const surfgrad::Error&) {
  }
  return 0;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}
