// Must not compile: surfgrad's include path has no webgpu.h (see CMakeLists.txt).
#include <webgpu/webgpu.h>
int main() { return 0; }
