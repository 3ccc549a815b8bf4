// `surfgrad demo moons|mnist|tensors`: options and progress output around the trainers in
// src/demos.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli.hpp"
#include "cli_options.hpp"
#include "output_files.hpp"
#include "surfgrad/demos.hpp"

namespace surfgrad::cli {

namespace {

// A progress line redrawn in place on a terminal, printed plainly otherwise.
void show(const std::string& line, bool final_line) {
  static bool tty = std::getenv("TERM") && isatty(fileno(stdout));
  if (tty)
    std::printf("\r%-90s%s", line.c_str(), final_line ? "\n" : "");
  else if (final_line)
    std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// A demo that misses its target fails (exit 1) and says so on stderr, after its normal output.
int missed(const char* demo, const char* what, double got, double target) {
  std::fflush(stdout);
  std::fprintf(stderr, "surfgrad: demo %s: %s %.2f%% is below the %.0f%% target\n", demo, what, 100 * got,
               100 * target);
  return 1;
}

int run_moons(const gpu::ContextPtr& ctx, demos::MoonsOptions opt) {
  StagedOutputs out(opt.png, {""}, {}, "--out");  // a bad output name is refused before the work
  std::string png = opt.png;
  opt.png = out.path("");
  std::printf("two moons: %d points, MLP 2-16-16-2, Adam, on %s\n", opt.points, ctx->info().name.c_str());
  demos::MoonsResult r;
  out.write([&] { r = demos::train_moons(ctx, opt, show); });
  out.commit();
  std::printf("train accuracy %.1f%% (target 99%%); decision boundary written to %s\n", 100 * r.train_accuracy,
              png.c_str());
  return r.train_accuracy >= 0.99 ? 0 : missed("moons", "train accuracy", r.train_accuracy, 0.99);
}

int run_mnist(const gpu::ContextPtr& ctx, const demos::MnistOptions& opt) {
  std::printf("MNIST: %d train / %d held out, MLP 784-%d-10, Adam, batch %d, on %s\n", opt.train, opt.test, opt.hidden,
              opt.batch, ctx->info().name.c_str());
  auto r = demos::train_mnist(ctx, opt, show);
  std::printf("held-out accuracy %.2f%% (target 95%%), train accuracy %.2f%%, %.1f s\n", 100 * r.test_accuracy,
              100 * r.train_accuracy, r.seconds);
  return r.test_accuracy >= 0.95 ? 0 : missed("mnist", "held-out accuracy", r.test_accuracy, 0.95);
}

demos::MoonsOptions moons_defaults() {
  demos::MoonsOptions opt;
  opt.png = "moons.png";
  return opt;
}

}  // namespace

CommandFn default_job() {
  return [](const gpu::ContextPtr& ctx) { return run_moons(ctx, moons_defaults()); };
}

void add_demo_commands(CLI::App& app, CommandFn& chosen) {
  CLI::App* demo = app.add_subcommand("demo", "demos: moons (the default), mnist, tensors");
  demo->require_subcommand(0, 1);
  demo->callback([demo, &chosen] {
    if (demo->get_subcommands().empty()) chosen = default_job();
  });

  auto m = std::make_shared<demos::MoonsOptions>(moons_defaults());
  CLI::App* moons = demo->add_subcommand("moons", "MLP 2-16-16-2 on two moons; writes the decision boundary PNG");
  moons->add_option("--steps", m->steps, "full-batch Adam steps")->check(integer_in(1, 1000000))->capture_default_str();
  moons->add_option("--out", m->png, "decision boundary PNG")->capture_default_str();
  moons->add_option("--seed", m->seed, "seed")->check(integer_in<uint64_t>(0, UINT64_MAX))->capture_default_str();
  moons->add_option("--points", m->points, "points per class")->check(integer_in(2, 1000000))->capture_default_str();
  moons->callback([m, &chosen] { chosen = [m](const gpu::ContextPtr& ctx) { return run_moons(ctx, *m); }; });

  auto n = std::make_shared<demos::MnistOptions>();
  CLI::App* mnist = demo->add_subcommand("mnist", "MLP on MNIST IDX files (8,000 train / 2,000 held out)");
  mnist->add_option("--data", n->data_dir, "folder with t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]")
      ->required();
  mnist->add_option("--epochs", n->epochs, "epochs")->check(integer_in(1, 10000))->capture_default_str();
  mnist->add_option("--hidden", n->hidden, "hidden units")->check(integer_in(1, 65536))->capture_default_str();
  mnist->add_option("--batch", n->batch, "batch size")->check(integer_in(1, 8000))->capture_default_str();
  mnist->add_option("--lr", n->lr, "Adam learning rate")->check(number_in(0, 10, true))->capture_default_str();
  mnist->callback([n, &chosen] { chosen = [n](const gpu::ContextPtr& ctx) { return run_mnist(ctx, *n); }; });

  add_tile_mlp_demo(*demo, chosen);
  add_tile_fftconv_demo(*demo, chosen);
  add_tile_spd_demo(*demo, chosen);

  demo->add_subcommand("tensors", "a short tour of GPU tensor ops, each checked against float64 on the host")
      ->callback([&chosen] { chosen = cmd_demo_tensors; });
}

}  // namespace surfgrad::cli
