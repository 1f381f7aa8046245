// The scheduler's leases (scheduler.h): starting and ending them, fencing the results against
// their tokens, registrations, BYE and the admin's drain / resume / release.
#include <algorithm>

#include "coordinator/scheduler.h"

namespace kb::coord {
namespace {

// Lease ids stay below 2^53 so that a JSON reader keeping numbers as doubles echoes them exactly.
constexpr uint64_t kLeaseIdMask = (uint64_t{1} << 53) - 1;

ResultVerdict reject(std::string reason) {
  return {ResultDisposition::kRejected, std::move(reason)};
}

}  // namespace

void Scheduler::lease(Job& job, Worker& worker, int attempt) {
  const SteadyTime now = clock_.steady_now();
  const Run& run = runs_[job.record.run_id];
  job.state = JobState::kLeased;
  job.holder = worker.id;
  job.in_grace = false;
  job.record.attempt = attempt;
  do {
    job.lease_id = lease_ids_() & kLeaseIdMask;
  } while (job.lease_id == 0);
  job.deadline = now + lease_budget(job.record.predicted_ms, run.time_cap_s, run.job_timeout_s);
  deadlines_.insert({job.deadline, job.record.id});
  held_[worker.id].insert(job.record.id);
  const auto to_system = std::chrono::duration_cast<SystemTime::duration>(job.deadline - now);
  pending_.leases.push_back(
      {job.record.id, attempt, worker.id, clock_.system_now() + to_system, job.lease_id});
  // A lease supersedes a requeue of the same job that is still in the pending batch (the store
  // applies leases before requeues).
  if (auto it = pending_requeue_.find(job.record.id); it != pending_requeue_.end()) {
    pending_.requeues[it->second].job_id = -1;
    pending_requeue_.erase(it);
  }
  if (!run.running) {
    runs_[job.record.run_id].running = true;
    set_run_state(job.record.run_id, "running");
  }
}

// The lease is remembered as `previous`: its holder's result is still accepted within lease_grace.
void Scheduler::end_lease(Job& job) {
  deadlines_.erase({job.deadline, job.record.id});
  if (auto it = held_.find(job.holder); it != held_.end()) {
    it->second.erase(job.record.id);
    if (it->second.empty()) held_.erase(it);
  }
  job.previous = EndedLease{job.holder, job.record.attempt, job.lease_id, clock_.steady_now()};
  job.holder = 0;
  job.lease_id = 0;
  job.in_grace = false;
}

void Scheduler::requeue(Job& job, const std::string& reason, bool counted) {
  end_lease(job);
  ++requeues_;
  if (!counted) ++job.free_leases;
  if (job.record.attempt - job.free_leases >= job.record.max_attempts) {
    pending_.failures.push_back(
        {job.record.id, "lost " + std::to_string(job.record.attempt) + " leases; last: " + reason});
    finish_job(job, /*failed=*/true);
    return;
  }
  pending_requeue_[job.record.id] = pending_.requeues.size();
  pending_.requeues.push_back({job.record.id, reason});
  enqueue(job);
}

// The job leaves the open set; a failed job is forgotten now, a done one after its commit.
void Scheduler::finish_job(Job& job, bool failed) {
  const int64_t run_id = job.record.run_id;
  if (failed) {
    ++failed_;
    jobs_.erase(job.record.id);
  } else {
    ++completed_;
    job.state = JobState::kDone;
  }
  auto run = runs_.find(run_id);
  if (run != runs_.end() && --run->second.open == 0) {
    runs_.erase(run);
    set_run_state(run_id, "done");
  }
}

void Scheduler::set_run_state(int64_t run_id, const std::string& state) {
  pending_.run_states.push_back({run_id, state});
}

void Scheduler::revoke(int64_t worker_id, const LeaseToken& token, const std::string& reason) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return;  // no session: it learns at its next READY
  outbox_.push_back({it->second.routing_id, wire::to_message(wire::RevokeMessage{token, reason})});
}

// A lease id of 0 on the job is a lease loaded from a row written before lease ids existed.
bool Scheduler::holds(const Job& job, int64_t worker_id, const LeaseToken& token) const {
  return job.state == JobState::kLeased && job.holder == worker_id &&
         job.record.attempt == token.attempt &&
         (job.lease_id == 0 || job.lease_id == token.lease_id);
}

bool Scheduler::accepts_jobs(const Worker& worker) const {
  return !draining_ && !paused_ && !worker.leaving && !drained_.count(worker.name) &&
         !quarantined_.count(worker.name);
}

bool Scheduler::lease_is_current(const LeaseToken& token) const {
  auto it = jobs_.find(token.job_id);
  return it != jobs_.end() && it->second.state == JobState::kLeased &&
         it->second.lease_id == token.lease_id && it->second.record.attempt == token.attempt;
}

bool Scheduler::send_or_requeue(const LeaseToken& token) {
  if (!lease_is_current(token)) return false;
  Job& job = jobs_.at(token.job_id);
  auto holder = workers_.find(job.holder);
  if (holder == workers_.end()) return true;
  if (!holder->second.leaving && !drained_.count(holder->second.name)) return true;
  requeue(job, "its worker is draining", /*counted=*/false);
  dispatch_all();
  return false;
}

void Scheduler::lease_not_stored(const LeaseToken& token) {
  if (!lease_is_current(token)) return;
  requeue(jobs_.at(token.job_id), "its lease was not stored", /*counted=*/false);
  dispatch_all();
}

// --- results ------------------------------------------------------------------------------------

ResultVerdict Scheduler::result(const std::string& routing_id, const ResultClaim& claim,
                                ResultRow row) {
  Worker* worker = worker_by_routing_id(routing_id);
  if (!worker) return {ResultDisposition::kUnknownWorker, ""};
  const SteadyTime now = clock_.steady_now();
  worker->last_heard = now;
  auto it = jobs_.find(claim.token.job_id);
  if (it == jobs_.end()) return reject("unknown_job");
  Job& job = it->second;
  const LeaseToken& token = claim.token;
  if (job.state == JobState::kDone) {
    const bool same = job.holder == worker->id && job.lease_id == token.lease_id &&
                      job.record.attempt == token.attempt;
    return same ? ResultVerdict{ResultDisposition::kDuplicate, ""} : reject("done");
  }
  const bool current = holds(job, worker->id, token);
  const bool just_ended = !current && job.previous && job.previous->holder == worker->id &&
                          job.previous->attempt == token.attempt &&
                          job.previous->lease_id == token.lease_id &&
                          now - job.previous->ended_at <= config_.lease_grace;
  if (!current && !just_ended) {
    if (job.state == JobState::kLeased && job.holder != worker->id) return reject("not_holder");
    if (job.state == JobState::kQueued && !(job.previous && job.previous->holder == worker->id))
      return reject("not_leased");
    return reject("stale_lease");
  }
  if (claim.problem != job.record.problem_id || claim.preset != job.record.preset)
    return reject("mismatch");
  if (!claim.infra_failure.empty()) {
    // A pack that came late waited on the coordinator (a database outage), not on this worker:
    // it neither uses up an attempt nor counts toward quarantine.
    const bool workers_fault = claim.infra_failure.rfind("pack_late", 0) != 0;
    if (current) {
      requeue(job, "infrastructure failure on " + worker->name + ": " + claim.infra_failure,
              workers_fault);
    }
    if (workers_fault) count_infra_failure(*worker);
    dispatch_all();
    return {ResultDisposition::kInfraFailure, ""};
  }
  infra_failures_.erase(worker->name);
  if (job.state == JobState::kLeased) {
    if (!current) revoke(job.holder, {job.record.id, job.record.attempt, job.lease_id}, "superseded");
    end_lease(job);
  }
  if (job.state == JobState::kQueued) dequeue(job);
  row.job_id = token.job_id;
  row.attempt = token.attempt;
  row.worker_id = worker->id;
  pending_.results.push_back(std::move(row));
  job.holder = worker->id;  // the accepted token: a repeat of it is a duplicate
  job.lease_id = token.lease_id;
  job.record.attempt = token.attempt;
  finish_job(job, /*failed=*/false);
  return {ResultDisposition::kAccepted, ""};
}

void Scheduler::count_infra_failure(Worker& worker) {
  if (++infra_failures_[worker.name] < config_.failures_before_quarantine) return;
  if (!quarantined_.insert(worker.name).second) return;
  ++quarantines_;
  pending_.worker_states.push_back({worker.id, "quarantined"});
}

void Scheduler::committed(const Batch& batch) {
  for (const ResultRow& row : batch.results) {
    auto it = jobs_.find(row.job_id);
    if (it != jobs_.end() && it->second.state == JobState::kDone) jobs_.erase(it);
  }
}

// --- registrations, BYE, admin ------------------------------------------------------------------

void Scheduler::worker_ready(int64_t worker_id, const std::string& routing_id,
                             const WorkerIdentity& identity, const std::vector<InFlight>& in_flight) {
  if (auto old = workers_.find(worker_id); old != workers_.end()) {
    by_routing_id_.erase(old->second.routing_id);
    workers_.erase(old);
  }
  if (auto other = by_routing_id_.find(routing_id); other != by_routing_id_.end()) {
    Worker& previous = workers_.at(other->second);
    lose_worker(previous, "its connection was taken over");
  }
  Worker& worker = workers_[worker_id];
  worker = Worker{worker_id, identity.name, routing_id, identity.gpu_model, identity.device_kind, 0,
                  clock_.steady_now(), false};
  by_routing_id_[routing_id] = worker_id;
  hungry_.erase(worker_id);
  lost_.erase(worker_id);
  release_leases_of(worker_id, in_flight, &worker, "worker re-registered without it");
  const char* state = quarantined_.count(identity.name) ? "quarantined"
                      : drained_.count(identity.name)   ? "draining"
                      : held_.count(worker_id)          ? "busy"
                                                        : "idle";
  pending_.worker_states.push_back({worker_id, state});
  dispatch_all();  // requeued jobs may suit other workers
}

// Ends the worker's leases that `keep` does not list with their token; with a keeper (a READY),
// REVOKEs the listed jobs it does not hold, so that a job it runs without a lease stops.
void Scheduler::release_leases_of(int64_t worker_id, const std::vector<InFlight>& keep,
                                  Worker* keeper, const std::string& reason) {
  std::vector<int64_t> held;
  if (auto it = held_.find(worker_id); it != held_.end()) held.assign(it->second.begin(), it->second.end());
  const SteadyTime now = clock_.steady_now();
  std::set<std::pair<int64_t, int>> kept;
  for (int64_t id : held) {
    Job& job = jobs_.at(id);
    auto listed = std::find_if(keep.begin(), keep.end(), [&](const InFlight& f) {
      return f.job_id == id && holds(job, worker_id, f.lease_id == 0 ? LeaseToken{id, f.attempt, job.lease_id} : f);
    });
    if (listed == keep.end()) {
      requeue(job, reason);
      continue;
    }
    kept.insert({id, listed->attempt});
    if (job.in_grace) {  // back after a coordinator restart: the stored deadline holds
      deadlines_.erase({job.deadline, id});
      job.in_grace = false;
      job.deadline = job.record.lease_deadline
                         ? now + std::chrono::duration_cast<SteadyTime::duration>(
                                     *job.record.lease_deadline - clock_.system_now())
                         : now + lease_budget(job.record.predicted_ms, 0);
      deadlines_.insert({job.deadline, id});
    }
  }
  if (!keeper) return;
  for (const InFlight& f : keep) {
    if (kept.count({f.job_id, f.attempt})) continue;
    auto it = jobs_.find(f.job_id);
    // A finished job whose result waits for its ACK is judged when that RESULT comes.
    const bool accepted_result = it != jobs_.end() && it->second.state == JobState::kDone;
    if (!accepted_result) revoke(worker_id, f, "not_yours");
  }
}

void Scheduler::worker_bye(const std::string& routing_id, const std::vector<LeaseToken>& release,
                           ByeKind kind) {
  Worker* worker = worker_by_routing_id(routing_id);
  if (!worker) return;
  worker->last_heard = clock_.steady_now();
  for (const LeaseToken& token : release) {
    auto it = jobs_.find(token.job_id);
    if (it == jobs_.end() || !holds(it->second, worker->id, token) ||
        it->second.lease_id != token.lease_id)
      continue;
    requeue(it->second, "given back by " + worker->name, /*counted=*/false);
  }
  const int64_t id = worker->id;
  if (kind == ByeKind::kFinal) {
    by_routing_id_.erase(worker->routing_id);
    hungry_.erase(id);
    workers_.erase(id);  // `worker` dangles from here on
    release_leases_of(id, {}, nullptr, "its worker left");
    pending_.worker_states.push_back({id, "gone"});
  } else if (kind == ByeKind::kDraining) {
    worker->leaving = true;
    pending_.worker_states.push_back({id, "draining"});
  }
  dispatch_all();
}

std::string Scheduler::control(const std::string& name, const std::string& action) {
  Worker* worker = nullptr;
  for (auto& [id, w] : workers_) {
    if (w.name == name) worker = &w;
  }
  if (action == "drain") {
    drained_.insert(name);
    if (!worker) return "";
    if (auto it = held_.find(worker->id); it != held_.end()) {
      for (int64_t job_id : it->second) {
        const Job& job = jobs_.at(job_id);
        revoke(worker->id, {job_id, job.record.attempt, job.lease_id}, "drain");
      }
    }
    pending_.worker_states.push_back({worker->id, "draining"});
    return "";
  }
  if (action == "resume") {
    drained_.erase(name);
  } else if (action == "release") {
    quarantined_.erase(name);
    infra_failures_.erase(name);
  } else {
    return "unknown action '" + action + "' (drain, resume or release)";
  }
  if (worker) {
    pending_.worker_states.push_back({worker->id, held_.count(worker->id) ? "busy" : "idle"});
  }
  dispatch_all();
  return "";
}

std::vector<std::string> Scheduler::quarantined() const {
  return {quarantined_.begin(), quarantined_.end()};
}

}  // namespace kb::coord
