#include "cli/cli_app.h"

#include <cstdio>
#include <exception>

namespace kb::cli {

void fail(int exit_code, const std::string& message) {
  std::fprintf(stderr, "kb: %s\n", message.c_str());
  throw CLI::RuntimeError(exit_code);
}

void fail(const Status& status) {
  const bool usage = status.code() == StatusCode::kInvalidArgument ||
                     status.code() == StatusCode::kNotFound ||
                     status.code() == StatusCode::kFailedPrecondition;
  fail(usage ? kExitUsage : kExitFailure, status.message());
}

int run_app(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // fail(): the message is already printed
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the parse error with a hint
    return code == 0 ? kExitOk : kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kb: %s\n", e.what());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace kb::cli
