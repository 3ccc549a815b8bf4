// PNG output through libpng: pixels read back by libpng's own decoder, and clear errors.
#include <png.h>

#include "io_test_util.hpp"
#include "surfgrad/io.hpp"

using namespace sgtest;
using namespace surfgrad;

TEST(Io, PngPixelsRoundTrip) {
  Image img(5, 3);
  img.fill(10, 20, 30);
  img.set(4, 2, 200, 100, 50);
  img.set(-1, 0, 1, 1, 1);  // outside: ignored
  std::string path = io_path("px.png");
  write_png(path, img);
  png_image back{};
  back.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&back, path.c_str())) << back.message;
  EXPECT_EQ(back.width, 5u);
  EXPECT_EQ(back.height, 3u);
  back.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> rgb(PNG_IMAGE_SIZE(back));
  ASSERT_TRUE(png_image_finish_read(&back, nullptr, rgb.data(), 0, nullptr)) << back.message;
  EXPECT_EQ(rgb, img.rgb);
  EXPECT_EQ(rgb[(2 * 5 + 4) * 3], 200);
  EXPECT_EQ(rgb[(2 * 5 + 4) * 3 + 2], 50);
  expect_error(ErrorKind::IO, "/nonexistent-dir/x.png", "cannot write",
               [&] { write_png("/nonexistent-dir/x.png", img); });
  Image empty(0, 4);
  expect_error(ErrorKind::Value, path, "0 × 4", [&] { write_png(path, empty); });
}
