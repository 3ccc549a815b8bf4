// Layers, losses, parameter files and optimizers: against float64 host references.
#include "surfgrad/nn.hpp"

#include <fstream>

#include "surfgrad/gradcheck.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/optim.hpp"
#include "surfgrad/reference.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

Tensor rand_tensor(const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  return upload(random_ref(s, seed, DType::f32, lo, hi), DType::f32);
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "/surfgrad_nn_" + name; }

}  // namespace

TEST(NN, LinearMatchesHostAndGradchecks) {
  nn::Linear layer(ctx(), 5, 3, 7);
  Tensor x = rand_tensor({4, 5}, 1);
  HostArray want =
      add(matmul(HostArray::from(x), HostArray::from(layer.weight.value())), HostArray::from(layer.bias.value()));
  HostArray got = HostArray::from(layer.forward(Var(x)).value());
  for (size_t i = 0; i < want.values().size(); ++i) EXPECT_NEAR(got.values()[i], want.values()[i], 1e-5);
  // Kaiming-uniform bounds.
  HostArray w = HostArray::from(layer.weight.value());
  for (double v : w.values()) EXPECT_LE(std::abs(v), 1 / std::sqrt(5.0) + 1e-7);
  EXPECT_THROW(layer.forward(Var(rand_tensor({4, 6}, 2))), Error);
  EXPECT_EQ(layer.parameters().size(), 2u);
}

TEST(NN, LossesAgainstHostReference) {
  Tensor logits = rand_tensor({6, 4}, 3, -3, 3);
  Tensor labels = Tensor::from_vector(ctx(), std::vector<int32_t>{0, 3, 2, 2, 1, 0}, {6});
  HostArray l = HostArray::from(logits);
  std::vector<int> lab = {0, 3, 2, 2, 1, 0};
  double ce = 0;
  for (int i = 0; i < 6; ++i) {
    double m = -1e300, s = 0;
    for (int c = 0; c < 4; ++c) m = std::max(m, l.values()[size_t(i * 4 + c)]);
    for (int c = 0; c < 4; ++c) s += std::exp(l.values()[size_t(i * 4 + c)] - m);
    ce += -(l.values()[size_t(i * 4 + lab[size_t(i)])] - m - std::log(s));
  }
  Var lv = Var::param(logits);
  Var loss = nn::cross_entropy(lv, labels);
  EXPECT_NEAR(loss.value().to_vector<float>()[0], ce / 6, 1e-5);
  loss.backward();
  // d CE / d logits = (softmax − onehot) / N
  HostArray g = HostArray::from(lv.grad()), p = l.softmax(1);
  for (int i = 0; i < 6; ++i)
    for (int c = 0; c < 4; ++c)
      EXPECT_NEAR(g.values()[size_t(i * 4 + c)], (p.values()[size_t(i * 4 + c)] - (c == lab[size_t(i)])) / 6, 1e-6);

  Tensor pred = rand_tensor({3, 2}, 4), target = rand_tensor({3, 2}, 5);
  HostArray d = sub(HostArray::from(pred), HostArray::from(target));
  EXPECT_NEAR(nn::mse_loss(Var(pred), target).value().to_vector<float>()[0], (d * d).mean().item(), 1e-6);

  Tensor z = rand_tensor({8}, 6, -30, 30),
         t = Tensor::from_vector(ctx(), std::vector<float>{0, 1, 1, 0, 1, 0, 0, 1}, {8});
  HostArray hz = HostArray::from(z), ht = HostArray::from(t);
  double bce = 0;
  for (int i = 0; i < 8; ++i) {
    double x = hz.values()[size_t(i)], y = ht.values()[size_t(i)];
    double s = 1 / (1 + std::exp(-x));
    bce += -(y * std::log(std::max(s, 1e-300)) + (1 - y) * std::log(std::max(1 - s, 1e-300)));
  }
  EXPECT_NEAR(nn::bce_with_logits(Var(z), t).value().to_vector<float>()[0], bce / 8, 1e-4);

  EXPECT_THROW(nn::cross_entropy(Var(logits), labels.cast(DType::f32)), Error);
  EXPECT_THROW(nn::cross_entropy(Var(logits), Tensor::zeros(ctx(), {5}, DType::i32)), Error);
  EXPECT_THROW(nn::mse_loss(Var(pred), rand_tensor({2, 3}, 1)), Error);
}

TEST(NN, LossGradients) {
  Tensor target = rand_tensor({3, 4}, 8);
  HostArray ht = HostArray::from(target);
  for (auto r : {gradcheck(
                     [&](const auto& x) {
                       if constexpr (std::is_same_v<std::decay_t<decltype(x[0])>, Var>)
                         return nn::mse_loss(x[0], target);
                       else
                         return ((x[0] - ht) * (x[0] - ht)).mean();
                     },
                     {rand_tensor({3, 4}, 9)}),
                 gradcheck(
                     [&](const auto& x) {
                       if constexpr (std::is_same_v<std::decay_t<decltype(x[0])>, Var>)
                         return nn::bce_with_logits(x[0], target);
                       else
                         return (x[0].relu() - x[0] * ht + ((-x[0].abs()).exp() + 1.0).log()).mean();
                     },
                     {rand_tensor({3, 4}, 10, -3, 3)})})
    EXPECT_TRUE(r.ok) << r.report;
}

TEST(NN, LayerNormDropoutEmbedding) {
  nn::LayerNorm ln(ctx(), 6);
  Tensor x = rand_tensor({3, 6}, 11, -2, 5);
  HostArray hx = HostArray::from(x);
  HostArray c = sub(hx, hx.mean({1}, true));
  HostArray want = mul(c, ((c * c).mean({1}, true) + 1e-5).rsqrt());
  HostArray got = HostArray::from(ln.forward(Var(x)).value());
  for (size_t i = 0; i < want.values().size(); ++i) EXPECT_NEAR(got.values()[i], want.values()[i], 1e-4);

  nn::Dropout drop(0.3, 5);
  Tensor ones = Tensor::ones(ctx(), {20000});
  auto a = drop.forward(Var(ones)).value().to_vector<float>();
  auto b = drop.forward(Var(ones)).value().to_vector<float>();
  int zeros = 0;
  for (float v : a) {
    EXPECT_TRUE(v == 0.0f || std::abs(v - 1 / 0.7f) < 1e-5f);
    zeros += v == 0.0f;
  }
  EXPECT_NEAR(zeros / 20000.0, 0.3, 0.02);
  EXPECT_NE(a, b) << "each call draws a new mask";
  drop.eval();
  EXPECT_EQ(drop.forward(Var(ones)).value().to_vector<float>(), ones.to_vector<float>());
  EXPECT_THROW(nn::Dropout(1.0, 1), Error);

  nn::Embedding emb(ctx(), 10, 4, 3);
  Tensor idx = Tensor::from_vector(ctx(), std::vector<int32_t>{9, 0, 9, 2, 5, 5}, {2, 3});
  Var out = emb.forward(Var(idx));
  EXPECT_EQ(out.shape(), Shape({2, 3, 4}));
  HostArray w = HostArray::from(emb.weight.value()), o = HostArray::from(out.value());
  std::vector<int> rows = {9, 0, 9, 2, 5, 5};
  for (int r = 0; r < 6; ++r)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(o.values()[size_t(r * 4 + k)], w.values()[size_t(rows[size_t(r)] * 4 + k)]);
  out.sum().backward();
  HostArray g = HostArray::from(emb.weight.grad());
  EXPECT_EQ(g.values()[size_t(9 * 4)], 2.0);  // row 9 used twice
  EXPECT_EQ(g.values()[size_t(1 * 4)], 0.0);
}

TEST(NN, ParametersSaveLoadRoundTrip) {
  auto a = nn::mlp(ctx(), {3, 5, 2}, nn::Activation::Tanh, 1);
  auto b = nn::mlp(ctx(), {3, 5, 2}, nn::Activation::Tanh, 2);
  Tensor x = rand_tensor({4, 3}, 12);
  EXPECT_NE(a->forward(Var(x)).value().to_vector<float>(), b->forward(Var(x)).value().to_vector<float>());
  nn::save_parameters(*a, temp_path("mlp.npz"));
  nn::load_parameters(*b, temp_path("mlp.npz"));
  EXPECT_EQ(a->forward(Var(x)).value().to_vector<float>(), b->forward(Var(x)).value().to_vector<float>());
  auto names = load_npz(ctx(), temp_path("mlp.npz"));
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0].first, "0.weight");
  EXPECT_EQ(names[3].first, "2.bias");
}

TEST(NN, CorruptParameterFilesAreRefused) {
  auto a = nn::mlp(ctx(), {3, 5, 2}, nn::Activation::ReLU, 1);
  nn::save_parameters(*a, temp_path("good.npz"));
  std::ifstream in(temp_path("good.npz"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto expect_io = [&](const std::string& file, const std::string& needle, const nn::Module& m) {
    try {
      nn::load_parameters(m, file);
      ADD_FAILURE() << file << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::IO) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto write = [](const std::string& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; };
  write(temp_path("trunc.npz"), bytes.substr(0, bytes.size() / 2));
  expect_io(temp_path("trunc.npz"), "", *a);
  std::string flipped = bytes;
  flipped[100] ^= 0x5a;  // inside the first array's data
  write(temp_path("flipped.npz"), flipped);
  expect_io(temp_path("flipped.npz"), "CRC", *a);
  auto bigger = nn::mlp(ctx(), {3, 6, 2}, nn::Activation::ReLU, 1);
  expect_io(temp_path("good.npz"), "0.weight", *bigger);
  auto deeper = nn::mlp(ctx(), {3, 5, 2, 2}, nn::Activation::ReLU, 1);
  expect_io(temp_path("good.npz"), "no array for parameter '4.weight'", *deeper);
  expect_io(temp_path("missing.npz"), "cannot open", *a);
  // A refused file leaves the model untouched.
  Tensor x = rand_tensor({2, 3}, 13);
  auto before = bigger->forward(Var(x)).value().to_vector<float>();
  expect_io(temp_path("good.npz"), "", *bigger);
  EXPECT_EQ(bigger->forward(Var(x)).value().to_vector<float>(), before);
}

TEST(Optim, AdamAndAdamWMatchHostReference) {
  for (bool decoupled : {false, true}) {
    Tensor p0 = rand_tensor({37}, 14);
    Var p = Var::param(p0.clone());
    std::vector<double> hp = HostArray::from(p0).values(), m(37, 0), v(37, 0);
    double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
    std::unique_ptr<optim::Optimizer> opt;
    if (decoupled)
      opt = std::make_unique<optim::AdamW>(std::vector<Var>{p}, lr, b1, b2, eps, wd);
    else
      opt = std::make_unique<optim::Adam>(std::vector<Var>{p}, lr, b1, b2, eps, wd);
    for (int t = 1; t <= 5; ++t) {
      // loss = sum(p³)/3 → grad p²
      opt->zero_grad();
      (p.pow(3) / 3.0).sum().backward();
      opt->step();
      for (size_t i = 0; i < 37; ++i) {
        double g = hp[i] * hp[i];
        if (!decoupled) g += wd * hp[i];
        m[i] = b1 * m[i] + (1 - b1) * g;
        v[i] = b2 * v[i] + (1 - b2) * g * g;
        if (decoupled) hp[i] -= lr * wd * hp[i];
        hp[i] -= lr * (m[i] / (1 - std::pow(b1, t))) / (std::sqrt(v[i] / (1 - std::pow(b2, t))) + eps);
      }
    }
    auto got = p.value().to_vector<float>();
    for (size_t i = 0; i < 37; ++i) EXPECT_NEAR(got[i], hp[i], 2e-5) << (decoupled ? "AdamW" : "Adam") << " at " << i;
  }
}

// Plain SGD (no momentum) once bound the parameter as its own momentum buffer, which WebGPU
// refuses (one buffer bound twice, writable).
TEST(Optim, SgdWithoutMomentumMatchesHostReference) {
  Tensor p0 = rand_tensor({23}, 16);
  Var p = Var::param(p0.clone());
  std::vector<double> hp = HostArray::from(p0).values();
  optim::SGD opt({p}, 0.25);
  for (int t = 0; t < 3; ++t) {
    opt.zero_grad();
    (p * p).sum().backward();  // grad 2p
    opt.step();
    for (double& v : hp) v -= 0.25 * 2 * v;
  }
  auto got = p.value().to_vector<float>();
  for (size_t i = 0; i < 23; ++i) EXPECT_NEAR(got[i], hp[i], 1e-5);
}

TEST(Optim, SgdMomentumNesterovMatchHostReference) {
  for (bool nesterov : {false, true}) {
    Tensor p0 = rand_tensor({19}, 15);
    Var p = Var::param(p0.clone());
    std::vector<double> hp = HostArray::from(p0).values(), buf(19, 0);
    optim::SGD opt({p}, 0.1, 0.9, 0.01, nesterov);
    for (int t = 0; t < 4; ++t) {
      opt.zero_grad();
      (p * p).sum().backward();  // grad 2p
      opt.step();
      for (size_t i = 0; i < 19; ++i) {
        double d = 2 * hp[i] + 0.01 * hp[i];
        buf[i] = 0.9 * buf[i] + d;
        d = nesterov ? d + 0.9 * buf[i] : buf[i];
        hp[i] -= 0.1 * d;
      }
    }
    auto got = p.value().to_vector<float>();
    for (size_t i = 0; i < 19; ++i) EXPECT_NEAR(got[i], hp[i], 1e-5);
  }
}

TEST(Optim, SchedulesAndBadParameters) {
  Var p = Var::param(Tensor::ones(ctx(), {2}));
  optim::SGD opt({p}, 1.0);
  optim::StepLR step(opt, 2, 0.5);
  std::vector<double> lrs;
  for (int i = 0; i < 5; ++i) step.step(), lrs.push_back(opt.lr());
  EXPECT_EQ(lrs, (std::vector<double>{1, 0.5, 0.5, 0.25, 0.25}));
  optim::SGD opt2({p}, 1.0);
  optim::CosineLR cos(opt2, 4, 0.0);
  cos.step();
  EXPECT_NEAR(opt2.lr(), 0.5 * (1 + std::cos(3.141592653589793 / 4)), 1e-12);
  for (int i = 0; i < 10; ++i) cos.step();
  EXPECT_NEAR(opt2.lr(), 0.0, 1e-12);
  try {
    optim::Adam bad({Var(Tensor::ones(ctx(), {2}))});
    FAIL() << "accepted a tensor without grad";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Var::param"), std::string::npos) << e.what();
  }
  EXPECT_THROW(optim::SGD({p}, -1.0), Error);
}

TEST(Optim, TrainsASmallRegression) {
  // y = 3x₀ − 2x₁ + 1 from noiseless samples: Adam must find it.
  Tensor x = rand_tensor({64, 2}, 16);
  HostArray hx = HostArray::from(x);
  std::vector<float> y(64);
  for (int i = 0; i < 64; ++i)
    y[size_t(i)] = float(3 * hx.values()[size_t(2 * i)] - 2 * hx.values()[size_t(2 * i + 1)] + 1);
  Tensor target = Tensor::from_vector(ctx(), y, {64, 1});
  nn::Linear layer(ctx(), 2, 1, 3);
  optim::Adam opt(layer.parameters(), 0.1);
  float loss = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Var l = nn::mse_loss(layer.forward(Var(x)), target);
    l.backward();
    opt.step();
    if (step == 299) loss = l.value().to_vector<float>()[0];
  }
  EXPECT_LT(loss, 1e-4);
  auto w = layer.weight.value().to_vector<float>();
  EXPECT_NEAR(w[0], 3, 0.02);
  EXPECT_NEAR(w[1], -2, 0.02);
  EXPECT_NEAR(layer.bias.value().to_vector<float>()[0], 1, 0.02);
}
