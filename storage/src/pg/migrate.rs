//! The schema as numbered migrations, applied at start in one transaction
//! under an advisory lock: engines starting together apply each once, and an
//! engine never runs on a schema newer than it knows.

use super::fault;
use crate::{Error, Result};

/// The migrations in order: migration `i` brings the schema to version `i + 1`.
/// Append only; a released migration never changes.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_records.sql"),
    include_str!("migrations/0002_leases.sql"),
    include_str!("migrations/0003_schedules_idempotency.sql"),
    include_str!("migrations/0004_limits.sql"),
    include_str!("migrations/0005_webpush.sql"),
    include_str!("migrations/0006_batches.sql"),
    include_str!("migrations/0007_token_counts.sql"),
];

/// The schema version this engine runs on.
pub(crate) const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock's key, held while migrating ("herald" in ASCII).
const LOCK: i64 = 0x6865_7261_6c64;

/// Brings the database to [`SCHEMA_VERSION`]; refuses a newer one.
pub(crate) async fn migrate(client: &mut deadpool_postgres::Object) -> Result<()> {
    let tx = client.transaction().await.map_err(fault)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK]).await.map_err(fault)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS herald_schema (id INT PRIMARY KEY, version INT NOT NULL, migrated_ms BIGINT NOT NULL)",
    )
    .await
    .map_err(fault)?;
    let found: i32 = match tx.query_opt("SELECT version FROM herald_schema WHERE id = 1", &[]).await.map_err(fault)? {
        Some(row) => row.try_get(0).map_err(fault)?,
        None => 0,
    };
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew { database: found, engine: SCHEMA_VERSION });
    }
    if found == SCHEMA_VERSION {
        return tx.commit().await.map_err(fault);
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
        tx.batch_execute(sql).await.map_err(fault)?;
        tracing::info!(version = i.saturating_add(1), "database schema migrated");
    }
    let now = i64::try_from(crate::now_ms()).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO herald_schema (id, version, migrated_ms) VALUES (1, $1, $2) \
         ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, migrated_ms = EXCLUDED.migrated_ms",
        &[&SCHEMA_VERSION, &now],
    )
    .await
    .map_err(fault)?;
    tx.commit().await.map_err(fault)
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;
    use crate::databases::TREE_NAMES;

    #[test]
    fn every_tree_has_a_table() {
        let sql = MIGRATIONS.concat();
        for name in TREE_NAMES {
            assert!(sql.contains(&format!("CREATE TABLE {name} (")), "no table for the tree {name}");
        }
    }
}
