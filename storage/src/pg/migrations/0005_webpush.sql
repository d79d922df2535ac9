-- Version 5: apps' Web Push credentials (storage/src/web_push.rs), a record
-- beside each app's: the VAPID key pair (private key sealed) and subject.

CREATE TABLE app_web_push (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);
