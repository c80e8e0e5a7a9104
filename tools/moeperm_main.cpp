// moeperm: the command-line entry point. Dispatches to a subcommand; prints help.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace {

int usage_error(const std::string &message) {
  std::fprintf(stderr, "moeperm: %s\n", message.c_str());
  return moeperm::cli::kExitUsage;
}

}  // namespace

int main(int argc, char **argv) {
  using namespace moeperm::cli;
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kMainHelp, stderr);
    return kExitUsage;
  }
  const std::string_view command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    if (args.size() > 1 && args[1] == "run") {
      std::fputs(kRunHelp, stdout);
      return kExitOk;
    }
    if (args.size() > 1 && args[1] == "bench") {
      std::fputs(kBenchHelp, stdout);
      return kExitOk;
    }
    std::fputs(kMainHelp, stdout);
    return kExitOk;
  }
  if (command == "--version") {
    std::puts("moeperm " MOEPERM_VERSION);
    return kExitOk;
  }
  if (command == "run") return run_command(std::span(args).subspan(1));
  if (command == "bench") return bench_command(std::span(args).subspan(1));
  if (command.starts_with("-"))
    return usage_error("unknown flag '" + std::string(command) + "' (see moeperm --help)");
  return usage_error("unknown command '" + std::string(command) + "' (see moeperm --help)");
}
