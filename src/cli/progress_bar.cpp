#include "progress_bar.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace surfgrad::cli {

namespace {
constexpr int kBarWidth = 30;
constexpr double kRedrawSeconds = 0.1;  // a terminal need not be redrawn more than 10 times a second
}  // namespace

ProgressBar::ProgressBar(std::FILE* out) : out_(out) {
  const char* term = std::getenv("TERM");
  terminal_ = isatty(fileno(out)) && !(term && std::string(term) == "dumb");
}

void ProgressBar::update(const std::string& label, int64_t done, int64_t total) {
  auto now = std::chrono::steady_clock::now();
  if (label != label_) {
    finish();
    label_ = label, start_ = now, last_draw_ = {};
  }
  double elapsed = std::chrono::duration<double>(now - start_).count();
  bool last = done >= total;
  char line[160];
  if (!terminal_) {  // plain: one line per report, none for a phase's start
    if (done == 0) return;
    std::snprintf(line, sizeof line, "  %-12s %lld/%lld  %.1f s\n", label.c_str(), (long long)done, (long long)total,
                  elapsed);
    std::fputs(line, out_), std::fflush(out_);
    return;
  }
  if (!last && std::chrono::duration<double>(now - last_draw_).count() < kRedrawSeconds) return;
  last_draw_ = now;
  double share = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 0.0;
  int filled = int(share * kBarWidth);
  std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kBarWidth - filled), '.');
  double rate = elapsed > 0 ? double(done) / elapsed : 0;
  char eta[32] = "";
  if (!last && rate > 0)
    std::snprintf(eta, sizeof eta, "ETA %.0f s", double(total - done) / rate);
  else if (last)
    std::snprintf(eta, sizeof eta, "%.1f s", elapsed);
  if (total <= 1)  // a phase reported only at its start and end: its time is what there is to show
    std::snprintf(line, sizeof line, "\r  %-12s %s %-24s", label.c_str(), last ? "done" : "...", last ? eta : "");
  else
    std::snprintf(line, sizeof line, "\r  %-12s [%s] %lld/%lld  %.1f/s  %-12s", label.c_str(), bar.c_str(),
                  (long long)done, (long long)total, rate, eta);
  std::fputs(line, out_), std::fflush(out_);
  open_line_ = true;
}

void ProgressBar::finish() {
  if (open_line_) std::fputc('\n', out_), std::fflush(out_);
  open_line_ = false;
  label_.clear();
}

}  // namespace surfgrad::cli
