-- Tenants' quotas set by the operator, with each tenant's broadcast count
-- of the day (storage/src/limits.rs).
CREATE TABLE limits (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);

-- Broadcasts cancelled while running (storage/src/broadcasts.rs): every
-- engine running one of their partitions stops at its next checkpoint.
CREATE TABLE cancels (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
