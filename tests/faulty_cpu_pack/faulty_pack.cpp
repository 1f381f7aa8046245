// The faulty CPU candidate pack (see CMakeLists.txt here): kernels/pack.cpp's honest table
// (renamed kb_pack_v1_honest), with run() wrapped so that the custom variant of some problems
// misbehaves on purpose:
//   L1_098  segfaults                                     -> `crashed`
//   L1_003  never returns                                 -> `timeout`
//   L1_075  aborts on its 10th call (mid-timing)           -> `crashed`
//   L2_093  honest                                        -> `ok` (the control)
// and, for the sandbox tests (docs/sandbox.md), tries something a sandboxed pack must not do; when
// the attempt fails the call fails with the attempt's errno (`runtime_error`), when it succeeds
// the variant hides it and computes the honest output, as a real attacker would:
//   L1_054  connects to 127.0.0.1:$KB_HOSTILE_PORT (TCP)
//   L1_060  creates a file in $HOME
//   L1_070  creates a file in $KB_HOSTILE_STATE_DIR (the worker's state dir)
//   L1_073  reads $KB_HOSTILE_KEY_FILE (the worker's key) and puts it into its error text
// The hostile targets come from the environment because the worker passes its environment on.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/spec_loader.h"
#include "tests/support/wrapped_pack.h"

namespace {

const kb_pack_v1_t& honest() {
  return kb::testing::honest_pack();
}

std::mutex g_mutex;
std::unordered_map<const kb_instance_v1*, std::string> g_problem;  // instance -> problem id

int32_t fail(const std::string& message, char* error, size_t error_len) {
  if (error && error_len) std::snprintf(error, error_len, "%s", message.c_str());
  return KB_PACK_ERROR;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// Each returns "" when the hostile act succeeded, else what stopped it.
std::string try_connect() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return errno_text("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(env_or("KB_HOSTILE_PORT", "9").c_str())));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const std::string why = rc == 0 ? "" : errno_text("connect 127.0.0.1");
  close(fd);
  return why;
}

std::string try_create(const std::string& dir) {
  const std::string path = dir + "/kb-hostile-was-here";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return errno_text("open " + path);
  close(fd);
  return "";
}

std::string try_read_key(std::string* leaked) {
  const std::string path = env_or("KB_HOSTILE_KEY_FILE", "/nonexistent");
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return errno_text("open " + path);
  char buf[512] = "";
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  *leaked = std::string(buf, n);
  return "";
}

// The hostile act of `problem`, or "" for problems without one; "" also when the act succeeded.
std::string hostile_act(const std::string& problem, std::string* leaked) {
  if (problem == "L1_054") return try_connect();
  if (problem == "L1_060") return try_create(env_or("HOME", "/root"));
  if (problem == "L1_070") return try_create(env_or("KB_HOSTILE_STATE_DIR", "/nonexistent"));
  if (problem == "L1_073") return try_read_key(leaked);
  return "";
}

int32_t create(const char* spec_yaml, const char* spec_file, const kb_dim_v1* dims, int32_t num_dims,
               int32_t variant, void* stream, kb_instance_v1** out, char* error, size_t error_len) {
  const int32_t code =
      honest().create(spec_yaml, spec_file, dims, num_dims, variant, stream, out, error, error_len);
  if (code != KB_PACK_OK) return code;
  auto spec = kb::parse_problem_spec(spec_yaml, spec_file ? spec_file : "<spec>");
  std::lock_guard lock(g_mutex);
  g_problem[*out] = spec.is_ok() ? spec.value()->id : "";
  return KB_PACK_OK;
}

int32_t run(kb_instance_v1* inst, const kb_tensor_v1* inputs, int32_t num_inputs, const kb_tensor_v1* params,
            int32_t num_params, const kb_tensor_v1* output, void* stream, char* error, size_t error_len) {
  std::string problem;
  {
    std::lock_guard lock(g_mutex);
    problem = g_problem[inst];
  }
  static int calls = 0;
  ++calls;
  if (problem == "L1_098") ::raise(SIGSEGV);
  if (problem == "L1_003") {
    for (;;) ::pause();
  }
  if (problem == "L1_075" && calls >= 10) std::abort();
  std::string leaked;
  if (std::string why = hostile_act(problem, &leaked); !why.empty()) return fail("hostile " + why, error, error_len);
  if (!leaked.empty()) return fail("hostile read the key: " + leaked, error, error_len);
  return honest().run(inst, inputs, num_inputs, params, num_params, output, stream, error, error_len);
}

void destroy(kb_instance_v1* inst) {
  {
    std::lock_guard lock(g_mutex);
    g_problem.erase(inst);
  }
  honest().destroy(inst);
}

kb_pack_v1_t make_table() {
  kb_pack_v1_t table = honest();
  table.create = &create;
  table.run = &run;
  table.destroy = &destroy;
  return table;
}

}  // namespace

KB_WRAPPED_PACK_ENTRY(make_table)
