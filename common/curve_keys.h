// ZeroMQ CURVE keys for kbfleet (docs/design.md#trust-model): the coordinator has a server key pair
// and an allow-list of worker and client public keys; workers and clients have their own pairs
// and know the coordinator's public key. Keys are Z85 text (40 characters).
//
// Key file format (written by `kb keygen`, mode 0600):
//   public: <40 Z85 characters>
//   secret: <40 Z85 characters>
// A public-key file (what is given to the other side) holds only the `public:` line.
// The coordinator's allow-lists (one file per role) are read by coordinator/access_control.h.
//
// Without keys, the coordinator binds to loopback only (coordinator/); these helpers only
// configure sockets.
//
// Thread safety: pure functions; configure_* touch one socket (owned by one thread).
#pragma once

#include <zmq.hpp>

#include <map>
#include <string>

#include "common/status.h"

namespace kb::curve {

struct KeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85; empty for a public-key-only file
};

bool curve_available();  // libzmq was built with CURVE (libsodium)
Result<KeyPair> generate_key_pair();
// Reads a key file; the secret line is optional only when require_secret is false.
Result<KeyPair> load_key_file(const std::string& path, bool require_secret);
bool is_z85_key(const std::string& text);  // 40 characters that decode to 32 bytes
// Public + secret. The file is created with O_EXCL and mode 0600 (never readable by others, not
// even for an instant); an existing file is an error unless `replace`, which unlinks it first.
Status write_key_file(const std::string& path, const KeyPair& keys, bool replace = false);
Status write_public_key_file(const std::string& path, const KeyPair& keys, bool replace = false);

// `zap_domain` names the socket to the ZAP handler, which admits different roles on each.
void configure_server(zmq::socket_t& socket, const KeyPair& server_keys,
                      const std::string& zap_domain);
void configure_client(zmq::socket_t& socket, const KeyPair& own_keys,
                      const std::string& server_public_key);

}  // namespace kb::curve
