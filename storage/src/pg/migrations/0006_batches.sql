-- Version 6: the sends of a send-batch request, one record per request
-- (storage/src/deliveries.rs, `BatchRecord`), keyed by its last notification id.

CREATE TABLE batches (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
