#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace moeperm::cli {
namespace {

std::string printf_string(const char *format, double value, const char *unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value, unit);
  return buf;
}

}  // namespace

std::string format_bytes(double bytes) {
  if (bytes >= 1e9) return printf_string("%.2f %s", bytes / 1e9, "GB");
  if (bytes >= 1e6) return printf_string("%.1f %s", bytes / 1e6, "MB");
  if (bytes >= 1e3) return printf_string("%.1f %s", bytes / 1e3, "kB");
  return printf_string("%.0f %s", bytes, "B");
}

std::string format_seconds(double s) {
  if (s >= 1.0) return printf_string("%.2f %s", s, "s");
  // About four significant digits: "463.4 ms", "36.44 ms", "4.901 ms".
  if (s >= 0.1) return printf_string("%.1f %s", s * 1e3, "ms");
  if (s >= 1e-2) return printf_string("%.2f %s", s * 1e3, "ms");
  if (s >= 1e-3) return printf_string("%.3f %s", s * 1e3, "ms");
  return printf_string("%.1f %s", s * 1e6, "us");
}

std::string format_gbps(double bytes, double seconds) {
  if (seconds <= 0) return "-";
  return printf_string("%.2f %s", bytes / seconds / 1e9, "GB/s");
}

double min_of(const std::vector<double> &v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

double mean_of(const std::vector<double> &v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace moeperm::cli
