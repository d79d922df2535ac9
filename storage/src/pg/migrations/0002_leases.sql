-- Version 2: leases, so that work which must run once (a broadcast's
-- partitions, a webhook's deliveries, the sweeper) runs on one engine at a
-- time. `expires_at` is always set from the database's clock; `epoch` grows
-- with every change of holder, and every write made under a lease checks it.
-- A free lease expired at '-infinity'; a parked one (nothing to do until
-- an engine makes it free again) at 'infinity'.

CREATE TABLE herald_leases (
    name TEXT PRIMARY KEY,
    holder TEXT,
    epoch BIGINT NOT NULL DEFAULT 0,
    expires_at TIMESTAMPTZ NOT NULL DEFAULT '-infinity'
);
CREATE INDEX herald_leases_holder ON herald_leases (holder);
CREATE INDEX herald_leases_expiry ON herald_leases (expires_at, name);

-- Partitions of running broadcasts (storage/src/broadcasts.rs).
CREATE TABLE parts (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
