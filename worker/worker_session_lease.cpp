// WorkerSession (worker_session.h): the lease side of the protocol: REVOKE, the database epoch of
// spooled results, drain and BYE, and the execution log.
#include <cstdio>

#include "common/log.h"
#include "common/zmq_messaging.h"
#include "worker/worker_session.h"

namespace kb {
namespace {

using wire::MessageType;

std::string job_name(const JobSpec& job) {
  return "job " + std::to_string(job.job_id) + " attempt " + std::to_string(job.attempt);
}

}  // namespace

void WorkerSession::on_revoke(const wire::RevokeMessage& revoke, SteadyClock::time_point now) {
  const JobKey key{revoke.token.job_id, revoke.token.attempt};
  const std::string& reason = revoke.reason;
  // An admin's drain lets the running job finish; only a held job goes back.
  const bool drain = reason == "drain";
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (JobKey{it->job_id, it->attempt} != key) continue;
    ++stats_.revokes;
    warn(job_name(*it) + " revoked (" + reason + ") before it started");
    if (drain) send(wire::ByeMessage{.release = {it->token()}}, now);
    held_.erase(it);
    if (!draining_) send(wire::RequestMessage{1}, now);
    return;
  }
  if (drain || !running_ || JobKey{running_->job_id, running_->attempt} != key) return;
  ++stats_.revokes;
  warn(job_name(*running_) + " revoked (" + reason + "): its executor is killed");
  runner_->abort();  // kills the executor's process group; no result follows
  log_execution(*running_, "revoke");
  running_.reset();
  start_next_job(now);
  if (!draining_) send(wire::RequestMessage{1}, now);
}

// Results spooled under another database epoch name jobs of another database: never sent.
void WorkerSession::drop_foreign_results() {
  if (epoch_.empty()) return;
  for (auto it = unacked_.begin(); it != unacked_.end();) {
    const std::string& epoch = it->second.epoch;
    if (epoch.empty() || epoch == epoch_) {
      ++it;
      continue;
    }
    ++stats_.foreign_epoch;
    warn("dropped the spooled result of job " + std::to_string(it->first.first) +
                          " attempt " + std::to_string(it->first.second) + ": database epoch " +
                          epoch + ", the coordinator's is " + epoch_);
    if (Status s = spool_.remove(it->first.first, it->first.second); !s.is_ok())
      warn(s.to_string());
    it = unacked_.erase(it);
  }
}

void WorkerSession::drain(SteadyClock::time_point now) {
  if (draining_) return;
  draining_ = true;
  std::vector<wire::LeaseToken> release;
  for (const JobSpec& job : held_) release.push_back(job.token());
  held_.clear();
  warn("draining: " + std::to_string(release.size()) + " held job(s) given back" +
                        (running_ ? ", the running one finishes" : ""));
  send(wire::ByeMessage{.release = std::move(release), .draining = true}, now);
}

// The coordinator leased this job before it read our BYE {draining}: it goes back the same way,
// at once, rather than staying leased (and costing an attempt) until BYE {final} or its deadline.
void WorkerSession::give_back_while_draining(const JobSpec& job, SteadyClock::time_point now) {
  ++stats_.jobs_given_back;
  warn(job_name(job) + " arrived while draining: given back");
  send(wire::ByeMessage{.release = {job.token()}, .draining = true}, now);
}

void WorkerSession::stop_now(SteadyClock::time_point now) {
  draining_ = true;
  std::vector<wire::LeaseToken> release;
  for (const JobSpec& job : held_) release.push_back(job.token());
  held_.clear();
  if (running_) {
    release.push_back(running_->token());
    runner_->abort();
    log_execution(*running_, "abort");
    warn("stopping now: " + job_name(*running_) + " killed and given back");
    running_.reset();
  }
  said_goodbye_ = send(wire::ByeMessage{.release = std::move(release), .final = true}, now);
  if (said_goodbye_ && socket_) socket_->set(zmq::sockopt::linger, 1000);
}

void WorkerSession::say_goodbye(SteadyClock::time_point now) {
  if (said_goodbye_ || state_ != SessionState::kRegistered) return;
  said_goodbye_ = send(wire::ByeMessage{.final = true}, now);
  if (said_goodbye_ && socket_) socket_->set(zmq::sockopt::linger, 1000);
}

void WorkerSession::log_execution(const JobSpec& job, const char* event) const {
  if (config_.execution_log.empty()) return;
  // One short append per line: O_APPEND keeps lines whole across sessions and processes.
  if (std::FILE* f = std::fopen(config_.execution_log.c_str(), "a")) {
    std::fprintf(f, "%lld,%lld,%s,%s\n", static_cast<long long>(job.job_id),
                 static_cast<long long>(job.attempt), event, config_.name.c_str());
    std::fclose(f);
  }
}

}  // namespace kb
