#include "coordinator/scheduler.h"

#include <algorithm>

namespace kb::coord {

Scheduler::Scheduler(SchedulerConfig config, const Clock& clock)
    : config_(config), clock_(clock) {}

// --- jobs ---------------------------------------------------------------------------------------

Scheduler::Queue& Scheduler::queue_for(const std::optional<std::string>& gpu_model) {
  return gpu_model ? by_model_[*gpu_model] : any_model_;
}

void Scheduler::enqueue(Job& job) {
  job.state = JobState::kQueued;
  queue_for(job.record.gpu_model).insert({-job.record.predicted_ms, job.record.id});
  ++queued_;
}

void Scheduler::dequeue(Job& job) {
  if (queue_for(job.record.gpu_model).erase({-job.record.predicted_ms, job.record.id}) > 0) --queued_;
}

void Scheduler::add_job(JobRecord record) {
  Run& run = runs_[record.run_id];
  ++run.open;
  run.pack_hash = record.pack_hash;
  const nlohmann::json& cap = record.run_config.contains("time_cap_s")
                                  ? record.run_config["time_cap_s"] : nlohmann::json(0);
  run.time_cap_s = cap.is_number() ? cap.get<double>() : 0;
  const nlohmann::json trials = record.run_config.value("trials", nlohmann::json(0));
  run.trials = trials.is_number_integer() ? trials.get<int64_t>() : 0;
  const nlohmann::json timeout = record.run_config.value("job_timeout_s", nlohmann::json(0));
  run.job_timeout_s = timeout.is_number() ? timeout.get<double>() : 0;
  record.run_config = nlohmann::json();  // the run holds it; keep jobs small
  record.pack_hash.clear();
  const int64_t id = record.id;
  jobs_[id].record = std::move(record);
}

void Scheduler::load(std::vector<JobRecord> jobs) {
  const SteadyTime now = clock_.steady_now();
  for (JobRecord& record : jobs) {
    const int64_t id = record.id;
    const bool leased = record.state == "leased" && record.worker_id.has_value();
    const int64_t holder = leased ? *record.worker_id : 0;
    add_job(std::move(record));
    Job& job = jobs_[id];
    if (leased) {
      job.state = JobState::kLeased;
      job.holder = holder;
      job.lease_id = job.record.lease_id;
      job.in_grace = true;
      job.deadline = now + config_.lease_grace;
      deadlines_.insert({job.deadline, id});
      held_[holder].insert(id);
      runs_[job.record.run_id].running = true;
    } else if (job.record.attempt >= job.record.max_attempts) {
      pending_.failures.push_back({id, "no attempts left after a coordinator restart"});
      finish_job(job, /*failed=*/true);
    } else {
      enqueue(job);
    }
  }
  dispatch_all();
}

void Scheduler::submit(std::vector<JobRecord> jobs) {
  for (JobRecord& record : jobs) {
    const int64_t id = record.id;
    add_job(std::move(record));
    enqueue(jobs_[id]);
  }
  dispatch_all();
}

size_t Scheduler::cancel(int64_t run_id) {
  size_t cancelled = 0;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& job = it->second;
    if (job.record.run_id != run_id || job.state == JobState::kDone) {
      ++it;
      continue;
    }
    if (job.state == JobState::kQueued) dequeue(job);
    if (job.state == JobState::kLeased) {
      revoke(job.holder, {job.record.id, job.record.attempt, job.lease_id}, "cancelled");
      end_lease(job);
    }
    it = jobs_.erase(it);
    ++cancelled;
  }
  runs_.erase(run_id);
  std::erase_if(pending_.run_states, [&](const RunState& r) { return r.run_id == run_id; });
  // Their JOBs must not go out after the cancel (the store cancels the jobs; the leases are void).
  auto of_run = [&](const Dispatch& d) { return !jobs_.count(d.token.job_id); };
  std::erase_if(pending_dispatches_, of_run);
  return cancelled;
}

bool Scheduler::heard(const std::string& routing_id) {
  auto it = by_routing_id_.find(routing_id);
  if (it == by_routing_id_.end()) return false;
  workers_.at(it->second).last_heard = clock_.steady_now();
  return true;
}

void Scheduler::add_credits(const std::string& routing_id, int credits) {
  auto it = by_routing_id_.find(routing_id);
  if (it == by_routing_id_.end()) return;
  Worker& worker = workers_.at(it->second);
  worker.last_heard = clock_.steady_now();
  worker.credits = std::clamp(worker.credits + credits, 0, config_.max_credits);
  dispatch(worker);
}

void Scheduler::lose_worker(Worker& worker, const std::string& reason) {
  const int64_t id = worker.id;
  by_routing_id_.erase(worker.routing_id);
  hungry_.erase(id);
  lost_.insert(id);
  workers_.erase(id);  // `worker` dangles from here on
  release_leases_of(id, {}, nullptr, reason);
  pending_.worker_states.push_back({id, "lost"});
}

Scheduler::Worker* Scheduler::worker_by_routing_id(const std::string& routing_id) {
  auto it = by_routing_id_.find(routing_id);
  return it == by_routing_id_.end() ? nullptr : &workers_.at(it->second);
}

void Scheduler::tick() {
  const SteadyTime now = clock_.steady_now();
  const auto silence = config_.heartbeat * config_.liveness;
  std::vector<int64_t> silent;
  for (const auto& [id, worker] : workers_) {
    if (now - worker.last_heard > silence) silent.push_back(id);
  }
  for (int64_t id : silent) lose_worker(workers_.at(id), "missed heartbeats");
  bool requeued = !silent.empty();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    Job& job = jobs_.at(deadlines_.begin()->second);
    ++lease_expiries_;
    if (!job.in_grace) revoke(job.holder, {job.record.id, job.record.attempt, job.lease_id}, "lease_expired");
    requeue(job, job.in_grace ? "lease grace expired" : "deadline passed");
    requeued = true;
  }
  if (requeued) dispatch_all();
}

std::vector<std::string> Scheduler::drain() {
  draining_ = true;
  return routing_ids();
}

// --- dispatch -----------------------------------------------------------------------------------

Scheduler::Job* Scheduler::best_job_for(const Worker& worker) {
  const QueueKey* best = any_model_.empty() ? nullptr : &*any_model_.begin();
  if (auto it = by_model_.find(worker.gpu_model); it != by_model_.end() && !it->second.empty()) {
    const QueueKey& own = *it->second.begin();
    if (!best || own < *best) best = &own;
  }
  return best ? &jobs_.at(best->second) : nullptr;
}

void Scheduler::set_paused(bool paused) {
  if (paused_ == paused) return;
  paused_ = paused;
  if (!paused_) dispatch_all();
}

bool Scheduler::dispatch_one(Worker& worker) {
  Job* job = !accepts_jobs(worker) || worker.credits <= 0 ? nullptr : best_job_for(worker);
  if (job) {
    dequeue(*job);
    lease(*job, worker, job->record.attempt + 1);
    pending_dispatches_.push_back({worker.routing_id,
                                   {job->record.id, job->record.attempt, job->lease_id},
                                   job_message(*job)});
    --worker.credits;
  }
  if (worker.credits > 0) {
    hungry_.insert(worker.id);
  } else {
    hungry_.erase(worker.id);
  }
  return job != nullptr;
}

void Scheduler::dispatch(Worker& worker) {
  while (dispatch_one(worker)) {
  }
}

double Scheduler::held_work_ms(int64_t worker_id) const {
  double ms = 0;
  if (auto it = held_.find(worker_id); it != held_.end()) {
    for (int64_t job_id : it->second) ms += jobs_.at(job_id).record.predicted_ms;
  }
  return ms;
}

// List scheduling (the LPT rule): jobs leave the queue longest first, one at a time, each to the
// hungry worker holding the least predicted work, i.e. the one expected to be free first. Giving
// a worker all its credits at once would hand the two longest jobs to the same worker.
void Scheduler::dispatch_all() {
  while (queued_ > 0 && !draining_ && !paused_ && !hungry_.empty()) {
    Worker* best = nullptr;
    double best_load = 0;
    for (int64_t id : hungry_) {
      Worker& w = workers_.at(id);
      if (!accepts_jobs(w) || !best_job_for(w)) continue;  // drained, or nothing for its model
      const double load = held_work_ms(id);
      if (!best || load < best_load) {
        best = &w;
        best_load = load;
      }
    }
    if (!best || !dispatch_one(*best)) break;
  }
}

wire::JobMessage Scheduler::job_message(const Job& job) const {
  const JobRecord& r = job.record;
  const Run& run = runs_.at(r.run_id);
  return {.job_id = r.id,
          .attempt = r.attempt,
          .lease_id = job.lease_id,
          .seed = r.seed,
          .problem = r.problem_id,
          .preset = r.preset,
          .pack = run.pack_hash,
          .run_id = r.run_id,
          .time_cap_s = run.time_cap_s,
          .trials = run.trials,
          .deadline_ms = lease_budget(r.predicted_ms, run.time_cap_s, run.job_timeout_s).count(),
          .params = r.params.is_object() ? r.params : nlohmann::json::object()};
}

// --- outboxes and views -------------------------------------------------------------------------

Batch Scheduler::take_batch() {
  Batch batch = std::move(pending_);
  pending_ = Batch();
  dispatches_.insert(dispatches_.end(), std::make_move_iterator(pending_dispatches_.begin()),
                     std::make_move_iterator(pending_dispatches_.end()));
  pending_dispatches_.clear();
  pending_requeue_.clear();
  std::erase_if(batch.requeues, [](const Requeue& r) { return r.job_id < 0; });
  return batch;
}

std::vector<Dispatch> Scheduler::take_dispatches() {
  std::vector<Dispatch> out = std::move(dispatches_);
  dispatches_.clear();
  return out;
}

std::vector<OutgoingMessage> Scheduler::take_messages() {
  std::vector<OutgoingMessage> out = std::move(outbox_);
  outbox_.clear();
  return out;
}

std::string Scheduler::routing_id_of(int64_t worker_id) const {
  auto it = workers_.find(worker_id);
  return it == workers_.end() ? "" : it->second.routing_id;
}

int64_t Scheduler::worker_id_of(const std::string& routing_id) const {
  auto it = by_routing_id_.find(routing_id);
  return it == by_routing_id_.end() ? 0 : it->second;
}

std::vector<std::string> Scheduler::routing_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, worker] : workers_) ids.push_back(worker.routing_id);
  return ids;
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.queued = queued_;
  s.leased = deadlines_.size();
  s.jobs_in_memory = jobs_.size();
  s.runs = runs_.size();
  for (const auto& [id, worker] : workers_) (held_.count(id) ? s.workers_busy : s.workers_idle)++;
  s.workers_lost = lost_.size();
  s.workers_quarantined = quarantined_.size();
  s.workers_draining = drained_.size();
  s.lease_expiries = lease_expiries_;
  s.requeues = requeues_;
  s.quarantines = quarantines_;
  s.jobs_completed = completed_;
  s.jobs_failed = failed_;
  return s;
}

}  // namespace kb::coord
