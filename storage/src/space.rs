//! Free disk space and write health: writes are refused (as [`Error::Full`])
//! while the data directory's filesystem has less free space than the
//! reserve, so the database never meets a full disk mid-write (sled cannot
//! recover from that without a restart), and they resume by themselves once
//! space is freed.

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often free space is measured.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// The shared view of the disk, updated by a sampling thread.
pub(crate) struct Space {
    dir: PathBuf,
    reserve: u64,
    free: AtomicU64,
    /// Set for good once the database reported a write failure: it refuses
    /// writes until a restart.
    failed: AtomicBool,
}

impl Space {
    /// Measures now and starts a thread that keeps measuring while the store lives.
    pub(crate) fn watch(dir: &Path, reserve: u64) -> Arc<Space> {
        let space = Arc::new(Space {
            dir: dir.to_path_buf(),
            reserve,
            free: AtomicU64::new(u64::MAX),
            failed: AtomicBool::new(false),
        });
        space.sample();
        let weak = Arc::downgrade(&space);
        let spawned = std::thread::Builder::new().name("herald-disk-watch".into()).spawn(move || {
            while let Some(space) = weak.upgrade() {
                space.sample();
                drop(space);
                std::thread::sleep(SAMPLE_EVERY);
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the disk watch: free space is measured at start only");
        }
        space
    }

    fn sample(&self) {
        match free_bytes(&self.dir) {
            Ok(free) => {
                let was_low = self.free.swap(free, Ordering::AcqRel) < self.reserve;
                let low = free < self.reserve;
                if low != was_low {
                    tracing::warn!(
                        free,
                        reserve = self.reserve,
                        "disk {}",
                        if low { "below the reserve: writes refused" } else { "has room again: writes accepted" }
                    );
                }
                metrics::gauge!("herald_storage_free_bytes").set(free as f64);
            }
            Err(e) => tracing::warn!(error = %e, "measuring free disk space failed"),
        }
    }

    /// `Ok` when a write may be made now.
    pub(crate) fn writable(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::Unavailable("the database failed a write; restart Herald".into()));
        }
        if self.free.load(Ordering::Acquire) < self.reserve {
            return Err(Error::Full);
        }
        Ok(())
    }

    /// Records a failed write: a full disk is measured again at once (so
    /// writes stop before the next sample), anything else marks the database
    /// failed.
    pub(crate) fn write_failed(&self, e: &Error) {
        match e {
            Error::Full => self.sample(),
            _ => self.failed.store(true, Ordering::Release),
        }
    }
}

/// Bytes an unprivileged process may still write on the filesystem of `dir`.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let s = rustix::fs::statvfs(dir)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Whether an I/O error says the disk is full.
pub(crate) fn is_no_space(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull || e.raw_os_error() == Some(28)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_refused_below_the_reserve_and_after_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let roomy = Space::watch(dir.path(), 0);
        assert!(roomy.writable().is_ok());
        let tight = Space::watch(dir.path(), u64::MAX);
        assert!(matches!(tight.writable(), Err(Error::Full)));
        roomy.write_failed(&Error::Full);
        assert!(roomy.writable().is_ok(), "a full disk with room again is writable");
        roomy.write_failed(&Error::Codec("x".into()));
        assert!(matches!(roomy.writable(), Err(Error::Unavailable(_))), "other failures stay");
    }

    #[test]
    fn no_space_is_recognised() {
        assert!(is_no_space(&std::io::Error::from_raw_os_error(28)));
        assert!(!is_no_space(&std::io::Error::from_raw_os_error(2)));
    }
}
