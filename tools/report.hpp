// Human-readable formatting for the moeperm command's report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moeperm::cli {

std::string format_bytes(double bytes);                 // "470.0 MB" (decimal units)
std::string format_seconds(double seconds);             // "12.345 ms", "3.21 s", "15.2 us"
std::string format_gbps(double bytes, double seconds);  // "4.07 GB/s"

double min_of(const std::vector<double> &v);
double mean_of(const std::vector<double> &v);

}  // namespace moeperm::cli
