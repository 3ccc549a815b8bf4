// Private to src/io: the checks every reader makes on sizes that come from a file, before it
// allocates anything. A file's header is untrusted: its shape is multiplied with overflow
// checks, compared with the bytes the file really holds and with the host's memory.
#pragma once
#include <cstdint>
#include <istream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "surfgrad/error.hpp"

namespace surfgrad::io {

// "'path': what" as an IO error (malformed or unreadable file).
Error file_error(const std::string& file, const std::string& what);

// "[2, 3]": a shape as declared by a file (dimensions may be any 64-bit value).
std::string dims_text(const std::vector<int64_t>& dims);

// Elements of a shape declared by a file, checked so that every C-order stride and the byte
// size (times `element_bytes`) fit in int64 too; throws LimitExceeded naming file and shape.
int64_t checked_numel(const std::vector<int64_t>& dims, uint64_t element_bytes, const std::string& file);

// Bytes of memory a reader may use on this host: the physical RAM, or less where the process's
// address space is limited (ulimit -v).
uint64_t host_memory_budget();

// Throws LimitExceeded naming the file, `what` (e.g. "shape [n, d] of <f4") and the budget when
// `bytes` (all the host memory the reader needs at once) exceeds host_memory_budget().
void check_host_budget(const std::string& file, const std::string& what, uint64_t bytes);

// Bytes left in a seekable stream from its read position; nullopt when it cannot seek.
std::optional<uint64_t> remaining_bytes(std::istream& in);

// Reads exactly `bytes` from `in` into `out` (resized); when the stream's size is unknown it
// grows in chunks, so a header that lies about the size costs no more than the data present.
// Returns the bytes actually read (< bytes when the stream ends early).
uint64_t read_exactly(std::istream& in, uint64_t bytes, std::vector<char>& out);

// The whole of a file, after checking its size against the host budget (IO error if it cannot
// be opened).
std::vector<char> read_whole_file(const std::string& path, const char* format);

// Runs `read`, turning std::bad_alloc (the host ran out although the budget allowed the size:
// other programs hold memory) into an OutOfMemory error naming the file.
template <typename F>
auto host_memory_guard(const std::string& file, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::OutOfMemory, "'" + file + "': the host ran out of memory while reading it; free memory " +
                                            "(close other programs) or split the file");
  }
}

// "1.5 GiB", "300 MiB", "12 KiB", "17 bytes".
std::string bytes_text(uint64_t bytes);

}  // namespace surfgrad::io
