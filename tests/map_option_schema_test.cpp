// The map-option schema: every record is consistent (names unique per front end, default in its
// range, set/get round trip, strict text), every option out of range is refused naming it, the
// ranges the front ends once disagreed on are the schema's, and messages print integers as
// integers and say why no value fits a tiny job.
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace surfgrad;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(int(e.kind()), int(ErrorKind::Value)) << e.what();
    return e.message();
  }
  return "";
}

MapMethod method_of(const MapOptionSpec& s) {
  return std::string(s.method) == "umap" ? MapMethod::Umap : MapMethod::Tsne;
}

}  // namespace

TEST(MapOptionSchema, NamesAreUniquePerMethodAndFrontEnd) {
  for (MapMethod m : {MapMethod::Tsne, MapMethod::Umap}) {
    std::set<std::string> keys, cli, js, python;
    for (const MapOptionSpec& s : map_option_schema()) {
      if (!map_option_applies(s, m)) continue;
      EXPECT_TRUE(keys.insert(s.key).second) << s.key;
      EXPECT_TRUE(cli.insert(s.cli).second) << s.cli;
      EXPECT_TRUE(js.insert(s.js).second) << s.js;
      if (s.python[0]) {
        EXPECT_TRUE(python.insert(s.python).second) << s.python;
      }
      EXPECT_EQ(std::string(s.cli).rfind("--", 0), 0u) << s.cli;
      EXPECT_EQ(std::string(s.js).find('_'), std::string::npos) << "camelCase: " << s.js;
      EXPECT_EQ(find_map_option(s.key, m), &s);
      EXPECT_EQ(find_map_option(s.js, m, &MapOptionSpec::js), &s);
      EXPECT_EQ(find_map_option(s.cli, m, &MapOptionSpec::cli), &s);
    }
  }
}

TEST(MapOptionSchema, DefaultsAreInRangeAndRoundTrip) {
  for (const MapOptionSpec& s : map_option_schema()) {
    MapOptions o;
    o.method = method_of(s);
    EXPECT_NO_THROW(check_map_option(s, s.get(o))) << s.key;
    std::string text = map_option_default(s);
    set_map_option(o, s, text, s.cli);
    EXPECT_EQ(map_option_text(s, o), text) << s.key;
    if (s.type == MapOptionType::Choice) {
      for (const std::string& w : s.choices) {
        set_map_option(o, s, w, s.cli);
        EXPECT_EQ(map_option_text(s, o), w);
      }
      EXPECT_NE(message_of([&] { set_map_option(o, s, "nonsense", s.cli); }).find(s.cli), std::string::npos);
    }
  }
  MapOptions ok;
  EXPECT_NO_THROW(validate(ok, 1000, 20));
}

TEST(MapOptionSchema, EveryNumberOutOfRangeIsRefusedNamingIt) {
  for (const MapOptionSpec& s : map_option_schema()) {
    if (s.type == MapOptionType::Choice) continue;
    const double step = s.type == MapOptionType::Integer ? 1 : 1e-9 * std::max(1.0, std::fabs(s.lo));
    double below = s.lo_open ? s.lo : s.lo - step, above = s.hi_open ? s.hi : s.hi + (s.hi > 1e8 ? 1e3 : step);
    if (s.has_automatic && below == 0) below = -1;
    for (double v : {below, above, std::nan("")}) {
      MapOptions o;
      o.method = method_of(s);
      s.set(o, v);
      std::string msg = message_of([&] { validate(o, 100000, 2000000); });
      EXPECT_NE(msg.find(std::string(s.key) + " (" + s.cli), std::string::npos) << s.key << " = " << v << ": " << msg;
      // The front ends' setters refuse it too, with the same words.
      MapOptions p;
      p.method = o.method;
      EXPECT_NE(message_of([&] { set_map_option(p, s, v, s.js); }).find(s.key), std::string::npos) << s.key;
    }
  }
}

TEST(MapOptionSchema, TheRangesFrontEndsDisagreedOn) {
  auto range = [](const char* key, MapMethod m) { return map_option_range(*find_map_option(key, m)); };
  EXPECT_EQ(range("early_exaggeration", MapMethod::Tsne), "a number in (0, 1000]");
  EXPECT_EQ(range("min_dist", MapMethod::Umap), "a number in [0, 1]");
  EXPECT_EQ(range("n_neighbors", MapMethod::Umap), "an integer in [2, 128]");
  // 43 is refused (k = 129 > 128), and the message says so: "(1, 43)", not "(1, 43]".
  EXPECT_EQ(range("perplexity", MapMethod::Tsne), "a number in (1, 43)");
  MapOptions o;
  o.tsne.perplexity = 43;
  EXPECT_NE(message_of([&] { validate(o, 100000, 20); }).find("(1, 43)"), std::string::npos);
  o.tsne.perplexity = 42.9;
  EXPECT_NO_THROW(validate(o, 100000, 20));
  // UMAP's learning rate and negative sample rate and the metric are options of every front end.
  EXPECT_NE(find_map_option("--learning-rate", MapMethod::Umap), nullptr);
  EXPECT_NE(find_map_option("negativeSampleRate", MapMethod::Umap, &MapOptionSpec::js), nullptr);
  EXPECT_NE(find_map_option("--metric", MapMethod::Tsne, &MapOptionSpec::cli), nullptr);
}

TEST(MapOptionSchema, MessagesPrintIntegersAndSayWhenNoValueFits) {
  MapOptions o;
  o.pca_components = 1048577;
  std::string msg = message_of([&] { validate(o, 2000000, 2000000); });
  EXPECT_NE(msg.find("got 1048577"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("e+06"), std::string::npos) << msg;
  // 2 or 4 points: no perplexity fits (it must be > 1 and <= (N − 1)/3): no empty range printed.
  for (int64_t n : {2, 4}) {
    MapOptions t;
    msg = message_of([&] { validate(t, n, 3); });
    EXPECT_NE(msg.find("no value fits a job of " + std::to_string(n) + " points"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at least 5 points"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("0.333333"), std::string::npos) << msg;
  }
  MapOptions u;
  u.method = MapMethod::Umap;
  msg = message_of([&] { validate(u, 2, 3); });
  EXPECT_NE(msg.find("at least 3 points"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("[2, 1]"), std::string::npos) << msg;
  // The job's bound is stated with the points: perplexity at most 33 for 100 points.
  MapOptions big;
  big.tsne.perplexity = 40;
  msg = message_of([&] { validate(big, 100, 3); });
  EXPECT_NE(msg.find("(1, 33] for 100 points"), std::string::npos) << msg;
}

TEST(MapOptionSchema, TextIsReadStrictly) {
  const MapOptionSpec& iterations = *find_map_option("iterations", MapMethod::Tsne);
  const MapOptionSpec& rate = *find_map_option("learning_rate", MapMethod::Tsne);
  MapOptions o;
  for (const char* bad : {"1e9", "12x", "", "1.5", "0x10", "nan"})
    EXPECT_NE(message_of([&] { set_map_option(o, iterations, bad, "--iterations"); }).find("--iterations"),
              std::string::npos)
        << bad;
  set_map_option(o, iterations, "010", "--iterations");
  EXPECT_EQ(o.tsne.iterations, 10);
  set_map_option(o, rate, "auto", "--learning-rate");
  EXPECT_EQ(o.tsne.learning_rate, 0);
  set_map_option(o, rate, "200", "--learning-rate");
  EXPECT_EQ(o.tsne.learning_rate, 200);
  EXPECT_NE(message_of([&] { set_map_option(o, rate, "inf", "--learning-rate"); }), "");
  EXPECT_NE(message_of([&] { set_map_option(o, iterations, 2.5, "iterations"); }).find("whole"), std::string::npos);
}

TEST(MapOptionSchema, JsonListsEveryRecord) {
  std::string json = map_option_schema_json();
  for (const MapOptionSpec& s : map_option_schema()) {
    EXPECT_NE(json.find(std::string("\"cli\":\"") + s.cli + "\""), std::string::npos) << s.cli;
    EXPECT_NE(json.find(std::string("\"js\":\"") + s.js + "\""), std::string::npos) << s.js;
  }
}

TEST(MapOptionSchema, MethodNamesParseInOnePlace) {
  EXPECT_EQ(parse_map_method("tsne"), MapMethod::Tsne);
  EXPECT_EQ(parse_map_method("umap"), MapMethod::Umap);
  EXPECT_NE(message_of([] { parse_map_method("pca", "fit"); }).find("fit: method is 'tsne' or 'umap'"),
            std::string::npos);
  MapOptions o;
  EXPECT_EQ(describe_map_options(o), "t-SNE (perplexity 30, 750 iterations)");
  o.method = MapMethod::Umap;
  EXPECT_EQ(describe_map_options(o), "UMAP (n_neighbors 15, min_dist 0.1)");
}
