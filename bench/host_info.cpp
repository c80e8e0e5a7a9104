#include "host_info.hpp"

#include <moeperm/moeperm.hpp>

#include "problem_model.hpp"

#include <fstream>
#include <thread>

namespace moeperm::bench {
namespace {

std::string first_line(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? ""
                                        : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "";
}

// "32K", "32768K", "1M" as bytes; 0 when unreadable.
int64_t size_bytes(const std::string &s) {
  if (s.empty()) return 0;
  int64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
  if (i < s.size() && (s[i] == 'K' || s[i] == 'k')) v <<= 10;
  if (i < s.size() && (s[i] == 'M' || s[i] == 'm')) v <<= 20;
  return v;
}

std::string size_text(int64_t bytes) {
  if (bytes == 0) return "?";
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

// From a plan of a tiny permute.
std::string cpu_variant() {
  PermuteDesc d;
  d.tokens = TensorDesc::contiguous(DType::f32, {2, 4});
  d.routing_map = TensorDesc::contiguous(DType::boolean, {2, 2});
  d.num_out_tokens = 2;
  d = infer_outputs(d);
  return plan_permute(d, {.backend = Backend::cpu}).variant();
}

HostInfo host_info() {
  HostInfo h;
  h.cpu_model = cpu_model();
  h.hardware_threads = std::thread::hardware_concurrency();
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = first_line(dir + "level"), type = first_line(dir + "type");
    if (level.empty()) continue;
    const int64_t bytes = size_bytes(first_line(dir + "size"));
    if (level == "1" && type == "Data") h.l1d_bytes = bytes;
    if (level == "2" && type != "Instruction") h.l2_bytes = bytes;
    if (level == "3" && type != "Instruction") h.l3_bytes = bytes;
  }
  h.cpu_variant = cpu_variant();
  h.thp_mode = problem_model::thp_mode();
  h.huge_page_advice = problem_model::huge_page_advice();
  return h;
}

std::string describe(const HostInfo &h) {
  return (h.cpu_model.empty() ? std::string("unknown CPU") : h.cpu_model) + ", " +
         std::to_string(h.hardware_threads) + " hardware threads, L1d " + size_text(h.l1d_bytes) +
         ", L2 " + size_text(h.l2_bytes) + ", L3 " + size_text(h.l3_bytes) +
         " (cpu0's); CPU kernels: " + h.cpu_variant +
         "; transparent huge pages: " + (h.thp_mode.empty() ? std::string("none") : h.thp_mode) +
         (h.huge_page_advice ? ", advised for the buffers (--huge-pages)"
                             : ", not advised for the buffers");
}

void write_json(std::ostream &out, const HostInfo &h) {
  std::string model;
  for (char c : h.cpu_model)
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) model += c;
  out << "{\"cpu\": \"" << model << "\", \"hardware_threads\": " << h.hardware_threads
      << ", \"l1d_bytes\": " << h.l1d_bytes << ", \"l2_bytes\": " << h.l2_bytes
      << ", \"l3_bytes\": " << h.l3_bytes << ", \"cpu_variant\": \"" << h.cpu_variant
      << "\", \"thp_mode\": \"" << h.thp_mode
      << "\", \"huge_pages\": " << (h.huge_page_advice ? "true" : "false") << "}";
}

}  // namespace moeperm::bench
