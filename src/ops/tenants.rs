//! Tenants: creation with their admin and signing keys.
