// `surfgrad demo moons` and `surfgrad demo mnist`: argument parsing and progress output around
// the trainers in src/demos.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli.hpp"
#include "surfgrad/demos.hpp"

using namespace surfgrad;

namespace {

// A progress line redrawn in place on a terminal, printed plainly otherwise.
void show(const std::string& line, bool final_line) {
  static bool tty = std::getenv("TERM") && isatty(fileno(stdout));
  if (tty) std::printf("\r%-90s%s", line.c_str(), final_line ? "\n" : "");
  else if (final_line) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

const char* value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) throw Error(ErrorKind::Value, std::string(argv[i]) + " needs a value");
  return argv[++i];
}

}  // namespace

int cmd_demo_moons(const gpu::ContextPtr& ctx, int argc, char** argv) {
  demos::MoonsOptions opt;
  opt.png = "moons.png";
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps") opt.steps = std::atoi(value(i, argc, argv));
    else if (a == "--out") opt.png = value(i, argc, argv);
    else if (a == "--seed") opt.seed = std::strtoull(value(i, argc, argv), nullptr, 10);
    else if (a == "--points") opt.points = std::atoi(value(i, argc, argv));
    else throw Error(ErrorKind::Value, "demo moons: unknown option " + a + " (--steps, --out, --seed, --points)");
  }
  std::printf("two moons: %d points, MLP 2-16-16-2, Adam, on %s\n", opt.points, ctx->info().name.c_str());
  auto r = demos::train_moons(ctx, opt, show);
  std::printf("train accuracy %.1f%% (target 99%%); decision boundary written to %s\n", 100 * r.train_accuracy,
              opt.png.c_str());
  return r.train_accuracy >= 0.99 ? 0 : 1;
}

int cmd_demo_mnist(const gpu::ContextPtr& ctx, int argc, char** argv) {
  demos::MnistOptions opt;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data") opt.data_dir = value(i, argc, argv);
    else if (a == "--epochs") opt.epochs = std::atoi(value(i, argc, argv));
    else if (a == "--hidden") opt.hidden = std::atoi(value(i, argc, argv));
    else if (a == "--batch") opt.batch = std::atoi(value(i, argc, argv));
    else if (a == "--lr") opt.lr = std::atof(value(i, argc, argv));
    else throw Error(ErrorKind::Value, "demo mnist: unknown option " + a + " (--data, --epochs, --hidden, --batch, --lr)");
  }
  if (opt.data_dir.empty()) throw Error(ErrorKind::Value, "demo mnist: pass --data DIR (the folder with the MNIST IDX files)");
  std::printf("MNIST: %d train / %d held out, MLP 784-%d-10, Adam, batch %d, on %s\n", opt.train, opt.test, opt.hidden,
              opt.batch, ctx->info().name.c_str());
  auto r = demos::train_mnist(ctx, opt, show);
  std::printf("held-out accuracy %.2f%% (target 95%%), train accuracy %.2f%%, %.1f s\n", 100 * r.test_accuracy,
              100 * r.train_accuracy, r.seconds);
  return r.test_accuracy >= 0.95 ? 0 : 1;
}
