// Who may do what on the coordinator (docs/security.md): a peer's role comes from its CURVE key,
// never from a message body. The allow-lists are one file per role (`<Z85 public key> <name>`
// a line, '#' comments); the ZAP handler (zap_handler.h) admits a key on a socket only when its
// role belongs there and hands "<role>:<name>" to libzmq as the ZAP User-Id, which the coordinator
// reads back from every message (wire::ReceivedMessage::user_id) and turns into a Peer here.
//
//   role       socket    may
//   worker     workers   register under its own name only; run jobs; fetch packs
//   submitter  clients   submit runs and upload packs (quota), cancel its own runs, query
//   admin      clients   everything a submitter may, cancel any run, set unsafe job options
//
// Without CURVE keys (loopback only) every peer is the local admin (and, on the workers' socket,
// a worker that may take any name).
//
// Thread safety: pure functions and values; AllowLists is copied into the ZAP handler on reload.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/protocol_messages.h"
#include "common/status.h"

namespace kb::coord {

enum class Role { kWorker, kSubmitter, kAdmin };
const char* to_string(Role role);

struct Peer {
  Role role = Role::kAdmin;
  std::string name;        // the key's name in its allow-list ("local" without keys)
  bool authenticated = false;  // false: loopback without keys
};

struct AllowListFiles {
  std::string workers, submitters, admins;  // "" = none of that role
  bool any() const { return !workers.empty() || !submitters.empty() || !admins.empty(); }
};
// --allow-dir DIR: DIR/workers.txt, DIR/submitters.txt, DIR/admins.txt (missing files = none).
AllowListFiles allow_list_files_in(const std::string& dir);

struct AllowedKey {
  Role role;
  std::string name;
};
// Z85 public key -> role and name.
using AllowLists = std::map<std::string, AllowedKey>;

// Reads every file given; a key listed twice (in two roles, or twice in one) or a line without a
// name is an error, so that a key never has two meanings.
Result<AllowLists> load_allow_lists(const AllowListFiles& files);

// The ZAP User-Id for a key, and back. from_user_id("") is the local admin (no CURVE).
std::string user_id_of(const AllowedKey& key);
std::optional<Peer> peer_from_user_id(const std::string& user_id);

// Job options only an admin may set (anything a submitter could use to hog the pool).
inline constexpr int kMaxSubmitterAttempts = 3;
inline constexpr double kMaxSubmitterJobTimeoutS = 600;
// The timing cap sets the lease budget (common/job_deadline.h: 2 x the cap + 30 s beside the
// prediction): above 120 s a submitter could hold a GPU past kMaxSubmitterJobTimeoutS.
inline constexpr double kMaxSubmitterTimeCapS = 120;
// (Correctness trials are not among them: the fleet's floor, kMinVerifiedTrials, holds for
// every key, admins' too: wire::submit_rules.)
// "" when allowed; otherwise why not, naming the option (answered as ERROR code "forbidden").
std::string refused_job_option(const Peer& peer, const wire::SubmitMessage& submit);
// Whether `peer` may cancel a run submitted by `owner`.
bool may_cancel(const Peer& peer, const std::string& owner);

}  // namespace kb::coord
