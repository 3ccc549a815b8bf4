// State the WebAssembly module keeps between calls from JavaScript: the device context, the
// last error (kind and message, read by surfgrad.js after a call returns -1) and the last
// result's JSON. One per module instance; JavaScript calls one export at a time (a call that
// waits on the GPU suspends through JSPI, and surfgrad.js queues calls behind it).
#pragma once
#include <exception>
#include <new>
#include <string>

#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"

// A function JavaScript calls: exported from the module under its own name.
#define SG_EXPORT(name) extern "C" __attribute__((export_name(#name)))

namespace surfgrad::web {

struct Session {
  gpu::ContextPtr ctx;
  int error_kind = -1;  // a surfgrad::ErrorKind, or -1: not a surfgrad error
  std::string error_message;
  std::string result_json;

  gpu::ContextPtr context();  // created on first use; again after a device loss
  void fail(int kind, const std::string& message);
};

Session& session();

// Runs `body`; 0 on success, -1 with the error kept in the session. The only place where a C++
// exception meets the module's boundary.
template <typename F>
int guarded(F&& body) {
  Session& s = session();
  s.error_kind = -1;
  s.error_message.clear();
  try {
    body();
    return 0;
  } catch (const Error& e) {
    s.fail(int(e.kind()), e.message());
  } catch (const std::bad_alloc&) {
    s.fail(int(ErrorKind::OutOfMemory), "the WebAssembly module ran out of memory (4 GiB at most)");
  } catch (const std::exception& e) {
    s.fail(-1, e.what());
  }
  return -1;
}

}  // namespace surfgrad::web
