-- Fenced leases (schemas/protocol.md, "Leases and fencing").
--
-- kb_epoch: one random id per database, made when this migration runs. WELCOME carries it; a
-- worker drops a spooled result whose JOB came from another epoch (the database was recreated or
-- replaced, so its job ids mean other jobs now).
CREATE TABLE kb_epoch (
  only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  epoch     text NOT NULL
);
INSERT INTO kb_epoch (epoch) VALUES (gen_random_uuid()::text);

-- The current lease's random id (with job id and attempt, the fencing token the worker echoes).
ALTER TABLE jobs ADD COLUMN lease_id bigint;

-- Workers an admin drained, and workers quarantined after consecutive infrastructure failures.
ALTER TABLE workers DROP CONSTRAINT workers_state_check;
ALTER TABLE workers ADD CONSTRAINT workers_state_check
  CHECK (state IN ('idle', 'busy', 'lost', 'gone', 'draining', 'quarantined'));
