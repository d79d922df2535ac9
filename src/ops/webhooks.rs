//! Webhooks: create, change, delete, replay.
