#include "common/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fstream>

namespace kb::curve {
namespace {

constexpr size_t kZ85KeyLength = 40;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Creates `path` with O_EXCL and `mode` and writes `text`; an existing file is kept unless
// `replace` (then it is unlinked first, so the new file still gets O_EXCL's guarantees).
Status write_new_file(const std::string& path, const std::string& text, mode_t mode, bool replace) {
  if (replace && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::io_error(path + ": cannot replace: " + std::strerror(errno));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) {
    return Status::io_error(path + (errno == EEXIST ? ": exists" : ": cannot create: ") +
                            (errno == EEXIST ? std::string() : std::strerror(errno)));
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Status::io_error(path + ": write failed");
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  return ::close(fd) == 0 && synced ? Status::ok() : Status::io_error(path + ": write failed");
}

}  // namespace

bool is_z85_key(const std::string& text) {
  if (text.size() != kZ85KeyLength) return false;
  uint8_t decoded[32];
  return zmq_z85_decode(decoded, text.c_str()) != nullptr;
}

bool curve_available() { return zmq_has("curve") != 0; }

Result<KeyPair> generate_key_pair() {
  char public_key[kZ85KeyLength + 1], secret_key[kZ85KeyLength + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return Status::failed_precondition("CURVE is not available in this libzmq (built without libsodium)");
  }
  return KeyPair{public_key, secret_key};
}

Result<KeyPair> load_key_file(const std::string& path, bool require_secret) {
  std::ifstream in(path);
  if (!in) return Status::not_found(path + ": cannot open key file");
  KeyPair keys;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(':');
    const std::string field = colon == std::string::npos ? "" : trim(line.substr(0, colon));
    const std::string value = colon == std::string::npos ? "" : trim(line.substr(colon + 1));
    if ((field != "public" && field != "secret") || !is_z85_key(value)) {
      return Status::invalid_argument(path + ":" + std::to_string(line_number) +
                                      ": expected 'public: <40 Z85 chars>' or 'secret: <40 Z85 chars>'");
    }
    (field == "public" ? keys.public_key : keys.secret_key) = value;
  }
  if (keys.public_key.empty()) return Status::invalid_argument(path + ": no 'public:' line");
  if (require_secret && keys.secret_key.empty()) {
    return Status::invalid_argument(path + ": no 'secret:' line (this side needs its secret key)");
  }
  return keys;
}

Status write_key_file(const std::string& path, const KeyPair& keys, bool replace) {
  return write_new_file(path, "public: " + keys.public_key + "\nsecret: " + keys.secret_key + "\n",
                        0600, replace);
}

Status write_public_key_file(const std::string& path, const KeyPair& keys, bool replace) {
  return write_new_file(path, "public: " + keys.public_key + "\n", 0644, replace);
}

void configure_server(zmq::socket_t& socket, const KeyPair& server_keys,
                      const std::string& zap_domain) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, server_keys.secret_key);
  // ZAP requests go to the allow-list handler (coordinator/); with no handler bound, libzmq
  // would accept every client that knows the server key.
  socket.set(zmq::sockopt::zap_domain, zap_domain);
}

void configure_client(zmq::socket_t& socket, const KeyPair& own_keys,
                      const std::string& server_public_key) {
  socket.set(zmq::sockopt::curve_serverkey, server_public_key);
  socket.set(zmq::sockopt::curve_publickey, own_keys.public_key);
  socket.set(zmq::sockopt::curve_secretkey, own_keys.secret_key);
}

}  // namespace kb::curve
