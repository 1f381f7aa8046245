// The workers' side of the coordinator: READY/WELCOME, HEARTBEAT, REQUEST, RESULT/ACK, BYE and
// PACK_REQUEST/PACK (schemas/protocol.md).
#include <algorithm>
#include <cstdio>

#include "common/json_fields.h"
#include "common/log.h"
#include "common/protocol_messages.h"
#include "common/zmq_messaging.h"
#include "coordinator/coordinator.h"

namespace kb::coord {
namespace {

constexpr size_t kPackCacheSize = 4;  // packs are ~MBs; a run uses one

bool is_from_worker(wire::MessageType type) {
  using T = wire::MessageType;
  return type == T::kReady || type == T::kHeartbeat || type == T::kRequest || type == T::kResult ||
         type == T::kPackRequest || type == T::kBye;
}

std::optional<WorkerIdentity> parse_identity(const wire::ReadyMessage& ready) {
  WorkerIdentity id;
  id.name = ready.worker;
  id.device_kind = ready.device.kind;
  id.gpu_model = ready.device.model;
  id.gpu_uuid = ready.device.uuid;
  id.compute_capability = ready.device.compute_capability;
  id.memory_bytes = ready.device.memory_bytes;
  id.host = ready.host;
  id.software = ready.software;
  if (id.name.empty() || id.name.size() > 200) return std::nullopt;
  if (id.device_kind != "cuda" && id.device_kind != "cpu" && id.device_kind != "sim") return std::nullopt;
  if (id.gpu_model.empty()) id.gpu_model = id.device_kind;
  return id;
}

}  // namespace

const char* coordinator_version() { return KB_VERSION; }

std::string Coordinator::refuse_ready(const std::string& routing_id, const Peer& peer,
                                      const WorkerIdentity& identity,
                                      const wire::ReadyMessage& ready) const {
  if (ready.protocol != wire::kProtocolVersion) {
    return "protocol version " +
           (ready.protocol ? std::to_string(*ready.protocol) : std::string("(none)")) +
           " is not this coordinator's " + std::to_string(wire::kProtocolVersion);
  }
  const std::string software = json_fields::value_or<std::string>(identity.software, "kbfleet", "");
  if (!wire::software_compatible(software, KB_VERSION)) {
    return "worker kbfleet " + (software.empty() ? std::string("(none)") : software) +
           " is incompatible with coordinator kbfleet " + KB_VERSION +
           " (same major and minor version needed)";
  }
  if (peer.authenticated && identity.name != peer.name) {
    return "this key belongs to worker '" + peer.name + "', not '" + identity.name + "'";
  }
  // With keys only: without them (one trusted machine) a restarted worker takes its name over at
  // once, as the fault tests' kill-and-restart expects.
  for (const auto& [worker_id, session] : sessions_) {
    if (!zap_ || session.name != identity.name) continue;
    const std::string current = scheduler_.routing_id_of(worker_id);
    if (!current.empty() && current != routing_id) {
      return "worker name '" + identity.name + "' is in use by a live session";
    }
  }
  return "";
}

size_t Coordinator::receive_from_workers(size_t max) {
  size_t n = 0;
  for (; n < max; ++n) {
    std::optional<wire::ReceivedMessage> received = wire::receive_message(workers_, true);
    if (!received) break;
    if (!received->decoded.ok) {
      metrics_.count_dropped(received->decoded.error);
      continue;
    }
    // The ZAP handler admits only worker keys here; checked again per message. Without CURVE the
    // peer is the local admin, which may act as any worker.
    const std::optional<Peer> peer = peer_from_user_id(received->user_id);
    const bool curve_peer = peer && peer->authenticated;
    if (!peer || (curve_peer && peer->role != Role::kWorker) || (zap_ && !curve_peer)) {
      metrics_.count_dropped(kDropForbidden);
      continue;
    }
    on_worker_message(received->routing_id, *peer, received->decoded.body);
  }
  maybe_flush_batch();
  return n;
}

void Coordinator::on_worker_message(const std::string& routing_id, const Peer& peer,
                                    const wire::AnyMessage& message) {
  if (!is_from_worker(wire::type_of(message))) {
    metrics_.count_dropped(kDropWrongDirection);
    return;
  }
  if (const auto* ready = std::get_if<wire::ReadyMessage>(&message)) {
    return on_ready(routing_id, peer, *ready);
  }
  if (registering_.count(routing_id)) return;  // its WELCOME is on the way
  if (const auto* result = std::get_if<wire::ResultMessage>(&message)) {
    return on_result(routing_id, *result);
  }
  if (!scheduler_.heard(routing_id)) {
    metrics_.count_dropped(kDropUnknownPeer);
    return disconnect(routing_id, "register first");
  }
  if (const auto* bye = std::get_if<wire::ByeMessage>(&message)) {
    on_bye(routing_id, *bye);
  } else if (const auto* request = std::get_if<wire::RequestMessage>(&message)) {
    const int64_t c = request->credits;
    if (!draining_ && c >= 1 && c <= 1000) scheduler_.add_credits(routing_id, static_cast<int>(c));
  } else if (const auto* ask = std::get_if<wire::PackRequestMessage>(&message)) {
    on_pack_request(routing_id, ask->pack);
  }
}

void Coordinator::disconnect(const std::string& routing_id, const std::string& reason) {
  send_to_worker(routing_id, wire::to_message(wire::DisconnectMessage{reason}));
}

void Coordinator::on_ready(const std::string& routing_id, const Peer& peer,
                           const wire::ReadyMessage& ready) {
  if (draining_) return disconnect(routing_id, "draining");
  std::optional<WorkerIdentity> identity = parse_identity(ready);
  if (!identity) {
    metrics_.count_dropped(wire::DecodeError::kMissingField);
    return disconnect(routing_id, "bad READY: needs worker (a name) and device.kind cuda|cpu|sim");
  }
  if (const std::string why = refuse_ready(routing_id, peer, *identity, ready); !why.empty()) {
    metrics_.count_dropped(kDropForbidden);
    std::fprintf(stderr, "kb-coordinator: READY from %s refused: %s\n", identity->name.c_str(),
                 why.c_str());
    return disconnect(routing_id, why);
  }
  if (!registering_.insert(routing_id).second) return;  // a repeat while the first is pending
  auto worker_id = std::make_shared<int64_t>(0);
  const std::vector<InFlight>& in_flight = ready.in_flight;
  db_->submit(
      [identity = *identity, worker_id](JobStore& store) -> Status {
        KB_ASSIGN_OR_RETURN(*worker_id, store.upsert_worker(identity));
        return Status::ok();
      },
      [this, routing_id, identity = *identity, in_flight, worker_id](const Status& status) {
        post_to_loop([this, routing_id, identity, in_flight, worker_id, status] {
          registering_.erase(routing_id);
          if (!status.is_ok()) {
            KB_LOGF_INFO("registering %s: %s", identity.name.c_str(),
                         status.to_string().c_str());
            disconnect(routing_id, "registration failed: " + status.message());
          } else {
            on_registered(routing_id, identity, in_flight, *worker_id);
          }
          maybe_flush_batch();
        });
      });
}

void Coordinator::on_registered(const std::string& routing_id, const WorkerIdentity& identity,
                                const std::vector<InFlight>& in_flight, int64_t worker_id) {
  if (draining_) return disconnect(routing_id, "draining");
  // A READY for the same name may have passed refuse_ready while this one was on the database.
  if (const std::string current = scheduler_.routing_id_of(worker_id);
      zap_ && !current.empty() && current != routing_id) {
    metrics_.count_dropped(kDropForbidden);
    return disconnect(routing_id, "worker name '" + identity.name + "' is in use by a live session");
  }
  sessions_[worker_id] = Session{identity.gpu_model, identity.device_kind, identity.name};
  const wire::WelcomeMessage welcome{.worker_id = worker_id,
                                     .heartbeat_ms = config_.scheduler.heartbeat.count(),
                                     .liveness = config_.scheduler.liveness,
                                     .epoch = epoch_};
  send_to_worker(routing_id, wire::to_message(welcome));  // before any JOB it may dispatch
  scheduler_.worker_ready(worker_id, routing_id, identity, in_flight);
  KB_LOGF_INFO("worker %s (%s) registered as %lld, %zu in flight",
               identity.name.c_str(), identity.gpu_model.c_str(), static_cast<long long>(worker_id),
               in_flight.size());
}

void Coordinator::on_result(const std::string& routing_id, const wire::ResultMessage& result) {
  const int64_t job_id = result.token.job_id;
  const int attempt = result.token.attempt;
  const int64_t worker_id = scheduler_.worker_id_of(routing_id);
  // A result spooled under another database: its job id names another job here.
  if (worker_id != 0 && !epoch_.empty() && !result.epoch.empty() && result.epoch != epoch_) {
    return reject_result(routing_id, job_id, attempt, "epoch");
  }
  ResultClaim claim;
  claim.token = result.token;
  claim.problem = json_fields::value_or<std::string>(result.result, "problem_id", "");
  claim.preset = json_fields::value_or<std::string>(result.result, "preset", "");
  claim.infra_failure = result.infra_failure;
  ResultRow row;
  if (worker_id != 0) {
    const Session& session = sessions_[worker_id];
    row.gpu_model = session.gpu_model;
    row.device_kind = session.device_kind;
  }
  row.wall_ms = result.wall_ms;
  row.result = result.result;
  const ResultVerdict verdict = scheduler_.result(routing_id, claim, std::move(row));
  switch (verdict.disposition) {
    case ResultDisposition::kAccepted:
    case ResultDisposition::kDuplicate:
    case ResultDisposition::kInfraFailure:
      acks_next_.push_back({worker_id, job_id, attempt});
      if (verdict.disposition == ResultDisposition::kInfraFailure) {
        std::fprintf(stderr,
                     "kb-coordinator: job %lld attempt %d: infrastructure failure on %s: %s\n",
                     static_cast<long long>(job_id), attempt, routing_id.c_str(),
                     claim.infra_failure.c_str());
      }
      break;
    case ResultDisposition::kRejected:
      reject_result(routing_id, job_id, attempt, verdict.reason);
      break;
    case ResultDisposition::kUnknownWorker:
      metrics_.count_dropped(kDropUnknownPeer);
      disconnect(routing_id, "register first");
      break;
  }
}

// BYE {release, draining, final} (schemas/protocol.md, Drain).
void Coordinator::on_bye(const std::string& routing_id, const wire::ByeMessage& bye) {
  const auto kind = bye.final      ? Scheduler::ByeKind::kFinal
                    : bye.draining ? Scheduler::ByeKind::kDraining
                                   : Scheduler::ByeKind::kGiveBack;
  const std::vector<LeaseToken>& release = bye.release;
  if (kind != Scheduler::ByeKind::kGiveBack) {
    KB_LOGF_INFO("%s said BYE (%s), %zu job(s) given back", routing_id.c_str(),
                 bye.final ? "leaving" : "draining", release.size());
  }
  scheduler_.worker_bye(routing_id, release, kind);
}

void Coordinator::on_pack_request(const std::string& routing_id, const std::string& hash) {
  for (auto it = pack_cache_.begin(); it != pack_cache_.end(); ++it) {
    if (it->first == hash) {
      pack_cache_.splice(pack_cache_.begin(), pack_cache_, it);
      return reply_pack(routing_id, hash);
    }
  }
  std::vector<std::string>& waiters = pack_waiters_[hash];
  // One pending answer per worker and pack, however often it asks while the load is pending.
  if (std::find(waiters.begin(), waiters.end(), routing_id) != waiters.end()) return;
  waiters.push_back(routing_id);
  if (waiters.size() > 1) return;  // already being loaded
  auto bytes = std::make_shared<std::string>();
  auto found = std::make_shared<bool>(false);
  db_->submit(
      [hash, bytes, found](JobStore& store) -> Status {
        Result<std::string> r = store.load_pack(hash);
        if (r.is_ok()) {
          *bytes = std::move(r.value());
          *found = true;
          return Status::ok();
        }
        return r.status().code() == StatusCode::kNotFound ? Status::ok() : r.status();
      },
      [this, hash, bytes, found](const Status&) {
        post_to_loop([this, hash, bytes, found] {
          if (*found) {
            pack_cache_.emplace_front(hash, bytes);
            if (pack_cache_.size() > kPackCacheSize) pack_cache_.pop_back();
          }
          std::vector<std::string> waiting = std::move(pack_waiters_[hash]);
          pack_waiters_.erase(hash);
          for (const std::string& id : waiting) reply_pack(id, hash);
        });
      });
}

// The payload frame shares the cached bytes (wire::send_message_shared): a hundred workers asking
// for one pack queue a hundred small headers and one copy of the pack, not a hundred copies.
void Coordinator::reply_pack(const std::string& routing_id, const std::string& hash) {
  if (!pack_cache_.empty() && pack_cache_.front().first == hash) {
    const wire::Message m = wire::to_message(wire::PackMessage{.pack = hash});
    if (!wire::send_message_shared(workers_, m, pack_cache_.front().second, routing_id)) {
      metrics_.count_dropped(kDropSendFailed);
    }
    workers_ready_->notify_sent();
    return;
  }
  // The worker reports its job as runtime_error.
  send_to_worker(routing_id, wire::to_message(wire::PackMessage{.pack = hash, .missing = true}));
}

}  // namespace kb::coord
