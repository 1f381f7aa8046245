#include "worker/worker_session.h"

#include <algorithm>
#include <cstdio>

#include "common/log.h"
#include "common/zmq_messaging.h"
#include "worker/worker_metrics.h"

namespace kb {
namespace {

using std::chrono::milliseconds;
using wire::MessageType;

// Messages handled per on_readable call: a flood on one session must not starve the others.
constexpr int kMaxMessagesPerRead = 256;

double steady_ms(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
}

}  // namespace

std::string_view to_string(SessionState state) {
  switch (state) {
    case SessionState::kConnecting:
      return "connecting";
    case SessionState::kRegistered:
      return "registered";
    case SessionState::kBackoff:
      return "backoff";
    case SessionState::kStopped:
      return "stopped";
  }
  return "unknown";
}

void WorkerSession::warn(const std::string& text) const { KB_LOG_WARN("{}: {}", config_.name, text); }

WorkerSession::WorkerSession(zmq::context_t& context, SessionConfig config,
                             std::unique_ptr<JobRunner> runner, ResultSpool spool, PackCache packs)
    : context_(context),
      config_(std::move(config)),
      runner_(std::move(runner)),
      spool_(std::move(spool)),
      packs_(std::move(packs)),
      random_(std::random_device{}()),
      heartbeat_(config_.heartbeat),
      backoff_(config_.backoff_initial),
      liveness_(config_.liveness) {
  // Results left by an earlier run of this worker are sent after the first WELCOME.
  for (ResultSpool::Entry& e : spool_.list()) unacked_[{e.job_id, e.attempt}] = std::move(e.result);
}

WorkerSession::~WorkerSession() {
  if (runner_) runner_->abort();
}

void WorkerSession::start(SteadyClock::time_point now) {
  connect(now);
}

std::optional<zmq::pollitem_t> WorkerSession::pollitem() {
  if (!socket_) return std::nullopt;
  return zmq::pollitem_t{socket_->handle(), 0, ZMQ_POLLIN, 0};
}

void WorkerSession::connect(SteadyClock::time_point now) {
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random_()));
  routing_id_ = config_.name + "-" + suffix;
  try {
    socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    wire::configure_socket(*socket_, 10000);
    socket_->set(zmq::sockopt::routing_id, routing_id_);
    if (config_.curve_keys && !config_.coordinator_key.empty()) {
      curve::configure_client(*socket_, *config_.curve_keys, config_.coordinator_key);
    }
    socket_->connect(config_.endpoint);
  } catch (const zmq::error_t& e) {
    socket_.reset();
    lose(now, std::string("cannot connect to ") + config_.endpoint + ": " + e.what());
    return;
  }
  ++stats_.connects;
  state_ = SessionState::kConnecting;
  heartbeat_ = config_.heartbeat;
  liveness_ = config_.liveness;
  last_heard_ = now;
  packs_requested_.clear();
  send(ready_message(), now);
}

void WorkerSession::lose(SteadyClock::time_point now, const std::string& why) {
  socket_.reset();
  state_ = SessionState::kBackoff;
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  const auto wait =
      milliseconds(static_cast<int64_t>(static_cast<double>(backoff_.count()) * jitter(random_)));
  reconnect_at_ = now + wait;
  backoff_ = std::min(backoff_ * 2, config_.backoff_max);
  warn(why + "; reconnecting in " + std::to_string(wait.count()) + " ms");
}

bool WorkerSession::send(const wire::Message& message, SteadyClock::time_point now) {
  if (!socket_) return false;
  last_sent_ = now;
  return wire::send_message(*socket_, message);
}

wire::ReadyMessage WorkerSession::ready_message() const {
  wire::ReadyMessage ready{.worker = config_.name,
                           .device = config_.device,
                           .software = config_.software,
                           .host = config_.host,
                           .protocol = wire::kProtocolVersion};
  if (running_) ready.in_flight.push_back(running_->token());
  for (const JobSpec& j : held_) ready.in_flight.push_back(j.token());
  // A finished job whose result is unacked is still ours: its lease should wait for the resend.
  for (const auto& [key, result] : unacked_) ready.in_flight.push_back(result.token);
  return ready;
}

milliseconds WorkerSession::silence_limit() const {
  return heartbeat_ * liveness_;
}

void WorkerSession::on_readable(SteadyClock::time_point now) {
  for (int i = 0; i < kMaxMessagesPerRead && socket_; ++i) {
    std::optional<wire::ReceivedMessage> received;
    try {
      received = wire::receive_message(*socket_, /*with_routing_id=*/false);
    } catch (const zmq::error_t& e) {
      lose(now, std::string("receive failed: ") + e.what());
      return;
    }
    if (!received) return;
    last_heard_ = now;
    if (!received->decoded.ok) {
      ++stats_.dropped_messages;
      warn("dropped a message: " + received->decoded.detail);
      continue;
    }
    handle(std::move(received->decoded.body), received->decoded.message.payload, now);
  }
}

void WorkerSession::handle(wire::AnyMessage message, const std::string& payload,
                           SteadyClock::time_point now) {
  switch (wire::type_of(message)) {
    case MessageType::kWelcome:
      on_welcome(std::get<wire::WelcomeMessage>(message), now);
      break;
    case MessageType::kJob:
      on_job(std::move(std::get<wire::JobMessage>(message)), now);
      break;
    case MessageType::kAck:
      on_ack(std::get<wire::AckMessage>(message));
      break;
    case MessageType::kPack:
      on_pack(std::get<wire::PackMessage>(message), payload, now);
      break;
    case MessageType::kRevoke:
      on_revoke(std::get<wire::RevokeMessage>(message), now);
      break;
    case MessageType::kHeartbeat:
      break;  // liveness only
    case MessageType::kDisconnect:
      lose(now, "the coordinator said DISCONNECT (" +
                    std::get<wire::DisconnectMessage>(message).reason + ")");
      break;
    default:
      ++stats_.dropped_messages;
      warn("ignored an unexpected " + std::string(wire::to_string(wire::type_of(message))));
  }
}

void WorkerSession::on_welcome(const wire::WelcomeMessage& welcome, SteadyClock::time_point now) {
  ++stats_.welcomes;
  state_ = SessionState::kRegistered;
  worker_id_ = welcome.worker_id;
  heartbeat_ = milliseconds(std::max<int64_t>(10, welcome.heartbeat_ms));
  liveness_ = std::max(1, welcome.liveness.value_or(config_.liveness));
  backoff_ = config_.backoff_initial;
  epoch_ = welcome.epoch;
  drop_foreign_results();
  const int credits = config_.capacity - static_cast<int>(held_jobs());
  if (!draining_ && credits > 0) send(wire::RequestMessage{credits}, now);
  for (const auto& [key, result] : unacked_) {
    if (send(result, now)) ++stats_.results_sent;
  }
  request_missing_packs(now);
}

bool WorkerSession::is_held(const JobKey& key) const {
  if (running_ && JobKey{running_->job_id, running_->attempt} == key) return true;
  for (const JobSpec& j : held_) {
    if (JobKey{j.job_id, j.attempt} == key) return true;
  }
  return unacked_.count(key) > 0;
}

void WorkerSession::on_job(wire::JobMessage message, SteadyClock::time_point now) {
  ++stats_.jobs_received;
  JobSpec job;
  static_cast<wire::JobMessage&>(job) = std::move(message);
  if (is_held({job.job_id, job.attempt})) {
    ++stats_.jobs_ignored;  // a duplicate
    return;
  }
  if (draining_) return give_back_while_draining(job, now);
  job.epoch = epoch_;
  if (config_.needs_packs)
    WorkerMetrics::global().pack_lookup(packs_.path_of(job.pack).has_value());
  held_.push_back(std::move(job));
  request_missing_packs(now);
  start_next_job(now);
}

void WorkerSession::on_ack(const wire::AckMessage& ack) {
  const JobKey key{ack.job_id, ack.attempt};
  if (unacked_.erase(key) == 0) return;  // a duplicate ACK
  ++stats_.acks;
  if (!ack.rejected.empty()) {
    ++stats_.rejected;
    warn("the coordinator rejected the result of job " + std::to_string(key.first) + " attempt " +
         std::to_string(key.second) + " (" + ack.rejected + "); dropped");
  }
  if (Status s = spool_.remove(key.first, key.second); !s.is_ok()) warn(s.to_string());
}

void WorkerSession::request_missing_packs(SteadyClock::time_point now) {
  if (!config_.needs_packs || state_ != SessionState::kRegistered) return;
  for (const JobSpec& j : held_) {
    if (packs_.path_of(j.pack) || packs_requested_.count(j.pack)) continue;
    if (!PackCache::is_valid_hash(j.pack)) continue;  // failed by start_next_job
    packs_requested_[j.pack] = now;
    send(wire::PackRequestMessage{j.pack}, now);
  }
}

void WorkerSession::expire_pack_requests(SteadyClock::time_point now) {
  for (auto it = packs_requested_.begin(); it != packs_requested_.end();) {
    const std::string hash = it->first;
    if (packs_.path_of(hash)) {  // it arrived: nothing waits for it any more
      it = packs_requested_.erase(it);
      continue;
    }
    const bool expired = now - it->second >= config_.pack_wait;
    ++it;  // fail_jobs_waiting_for erases the entry
    if (expired)
      fail_jobs_waiting_for(hash, "pack " + hash + " unavailable (no answer from the coordinator)",
                            now, "pack_late");
  }
}

void WorkerSession::on_pack(const wire::PackMessage& pack, const std::string& bytes,
                            SteadyClock::time_point now) {
  const std::string& hash = pack.pack;
  if (pack.missing) {
    fail_jobs_waiting_for(hash, "pack " + hash + " unavailable", now);
    return;
  }
  Result<std::string> stored = packs_.store(hash, bytes);
  if (!stored.is_ok()) {
    warn(stored.status().to_string());
    fail_jobs_waiting_for(hash, "pack " + hash + " unavailable: " + stored.status().message(), now,
                          "pack_fetch");
    return;
  }
  ++stats_.packs_received;
  packs_requested_.erase(hash);  // answered: no longer subject to the pack_wait expiry
  start_next_job(now);
}

void WorkerSession::fail_jobs_waiting_for(const std::string& pack, const std::string& why,
                                          SteadyClock::time_point now, const std::string& infra) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->pack != pack) {
      ++it;
      continue;
    }
    JobSpec job = std::move(*it);
    it = held_.erase(it);
    JobOutcome outcome{JobResult::failure(job.problem, job.preset, config_.device.kind,
                                          JobStatus::kRuntimeError, why),
                       now, now, ""};
    if (!infra.empty()) outcome.infra_failure = infra + ": " + why;
    if (!draining_) send(wire::RequestMessage{1}, now);
    finish_job(job, std::move(outcome), now);
  }
  packs_requested_.erase(pack);
}

void WorkerSession::start_next_job(SteadyClock::time_point now) {
  if (draining_ || runner_->busy()) return;
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (config_.needs_packs && !PackCache::is_valid_hash(it->pack)) {
      const std::string bad = it->pack;  // a copy: the failing erases the job
      fail_jobs_waiting_for(bad, "pack '" + bad.substr(0, 80) + "' is not a content hash", now);
      start_next_job(now);
      return;
    }
    std::optional<std::string> path =
        config_.needs_packs ? packs_.path_of(it->pack) : std::string();
    if (!path) continue;  // waits for its PACK
    JobSpec job = std::move(*it);
    held_.erase(it);
    job.pack_path = *path;
    log_execution(job, "start");
    WorkerMetrics::global().job_started(config_.name, job.job_id, job.attempt, job.problem);
    runner_->start(job, now);
    running_ = std::move(job);
    ++stats_.jobs_started;
    return;
  }
}

void WorkerSession::finish_job(const JobSpec& job, JobOutcome outcome,
                               SteadyClock::time_point now) {
  const JobKey key{job.job_id, job.attempt};
  WorkerMetrics::global().job_finished(
      config_.name, job.job_id, job.attempt, to_string(outcome.result.status),
      std::chrono::duration<double>(outcome.finished_at - outcome.started_at).count());
  nlohmann::json result = to_json(outcome.result);
  // The job's span on this worker's steady clock: stored with the result, it is how the fleet
  // benchmark (tools/fleet_bench.cpp) measures dispatch gaps and makespan.
  result["worker_clock"] = {{"started_at_ms", steady_ms(outcome.started_at)},
                            {"finished_at_ms", steady_ms(outcome.finished_at)}};
  wire::ResultMessage message{
      .token = job.token(),
      .epoch = job.epoch,
      .result = std::move(result),
      .wall_ms = std::chrono::duration<double, std::milli>(outcome.finished_at - outcome.started_at)
                     .count(),
      .started_at_ms = steady_ms(outcome.started_at),
      .finished_at_ms = steady_ms(outcome.finished_at),
      .infra_failure = outcome.infra_failure};
  // On disk before it is sent: from here on a crash of the worker cannot lose it. A result that
  // cannot be made durable is not delivered: the job runs again elsewhere.
  if (Status s = spool_.put(message); !s.is_ok()) {
    warn(s.to_string());
    if (message.infra_failure.empty()) message.infra_failure = "spool: " + s.message();
  }
  if (state_ == SessionState::kRegistered && send(message, now)) ++stats_.results_sent;
  unacked_[key] = std::move(message);
}

void WorkerSession::on_tick(SteadyClock::time_point now) {
  if (running_) {
    if (std::optional<JobOutcome> outcome = runner_->poll(now)) {
      JobSpec job = std::move(*running_);
      running_.reset();
      log_execution(job, "finish");
      // The next job starts before this result is written, so the device idles as little as
      // possible; then one credit refills the prefetch slot (capacity = running + prefetched).
      start_next_job(now);
      if (!draining_) send(wire::RequestMessage{1}, now);
      finish_job(job, std::move(*outcome), now);
    }
  }
  expire_pack_requests(now);
  switch (state_) {
    case SessionState::kBackoff:
      if (now >= reconnect_at_) connect(now);
      break;
    case SessionState::kConnecting:
    case SessionState::kRegistered:
      if (now - last_heard_ >= silence_limit()) {
        lose(now,
             "no word from the coordinator for " + std::to_string(silence_limit().count()) + " ms");
      } else if (state_ == SessionState::kRegistered && now - last_sent_ >= heartbeat_) {
        send(wire::Message{MessageType::kHeartbeat, nlohmann::json::object(), {}}, now);
      }
      break;
    case SessionState::kStopped:
      break;
  }
}

SteadyClock::time_point WorkerSession::next_deadline() const {
  SteadyClock::time_point next = SteadyClock::time_point::max();
  if (running_) {
    if (auto poll_at = runner_->next_poll()) next = *poll_at;
  }
  for (const auto& [hash, asked_at] : packs_requested_)
    next = std::min(next, asked_at + config_.pack_wait);
  switch (state_) {
    case SessionState::kBackoff:
      next = std::min(next, reconnect_at_);
      break;
    case SessionState::kConnecting:
      next = std::min(next, last_heard_ + silence_limit());
      break;
    case SessionState::kRegistered:
      next = std::min({next, last_heard_ + silence_limit(), last_sent_ + heartbeat_});
      break;
    case SessionState::kStopped:
      break;
  }
  return next;
}

}  // namespace kb
