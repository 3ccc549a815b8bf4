// Writing a whole output file and knowing that it arrived. Every writer of surfgrad's outputs
// (.npy, .npz, PNG, CSV, --json) ends here, because a stream's buffered tail fails only when it
// is flushed or closed: a full disk or a device that refuses data (/dev/full) must be an error
// naming the file, never a silent success.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace surfgrad::io {

// Writes `bytes` to `path`, created or truncated but never removed or replaced, so a device, a
// FIFO or a symbolic link stays what it was; "-" is standard output. Throws Error(IO)
// "'path': cannot write (reason)" on any failure, the final flush and close included.
void write_whole_file(const std::string& path, std::string_view bytes);
// The same for a file made of `pieces` written one after another (parts formatted in parallel,
// never joined into one more copy).
void write_whole_file(const std::string& path, const std::vector<std::string>& pieces);
void write_whole_file(const std::string& path, const std::vector<std::string_view>& pieces);

}  // namespace surfgrad::io
