-- Version 3: idempotency keys of the send routes, and scheduled sends
-- (storage/src/idempotency.rs, storage/src/schedules.rs). Like every tree,
-- tables of (k, v) rows whose keys start with the tenant id, except the two
-- indexes by time (`idempotency_expiry`, `schedules_due`), whose keys start
-- with the time so that a range scan from the start finds what is due.

CREATE TABLE idempotency (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
CREATE TABLE idempotency_expiry (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
CREATE TABLE schedules (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
CREATE TABLE schedules_due (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
CREATE TABLE schedule_counts (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
CREATE TABLE schedule_links (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
