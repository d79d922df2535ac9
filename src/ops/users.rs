//! Realm users: create, change (password hashed before the transaction), delete, token revocation, addresses.
