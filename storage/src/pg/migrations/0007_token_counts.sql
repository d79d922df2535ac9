-- Version 7: counts of push tokens per app's broadcast index and per tenant
-- (storage/src/token_counts.rs), each spread over keys by a hash of the
-- client id. The engine fills them from the tokens as it opens a database
-- that has none, once.

CREATE TABLE app_token_counts (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
CREATE TABLE tenant_token_counts (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
