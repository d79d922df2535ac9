//! Free disk space and write health: writes are refused (as [`Error::Full`])
//! while the data directory's filesystem has less free space than the
//! reserve, so the database never meets a full disk mid-write (sled cannot
//! recover from that without a restart), and they resume by themselves once
//! space is freed.

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How often free space is measured.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// Space held in a file of the data directory and given up when the
/// databases must open on a full disk (sled writes when it opens: up to a
/// segment, 512 KiB, per database).
const BALLAST_BYTES: u64 = 8 << 20;
const BALLAST_FILE: &str = "reserve.ballast";

/// Free space beyond the reserve that a failed database waits for before it is reopened.
const REOPEN_ROOM: u64 = 2 << 20;

/// The store's view of its disk, sampled by its watch thread.
pub(crate) struct Space {
    dir: PathBuf,
    reserve: u64,
    free: AtomicU64,
    /// Set once the database failed a write: sled refuses every write after
    /// one until it is reopened.
    failed: AtomicBool,
}

impl Space {
    /// Measures now; the store's watch thread calls [`Space::sample`] after.
    pub(crate) fn new(dir: &Path, reserve: u64) -> Space {
        let space =
            Space { dir: dir.to_path_buf(), reserve, free: AtomicU64::new(u64::MAX), failed: AtomicBool::new(false) };
        space.sample();
        space
    }

    /// A store whose data is not on this machine's disk (PostgreSQL): never
    /// full here, and no ballast kept.
    pub(crate) fn unmetered() -> Space {
        Space { dir: PathBuf::new(), reserve: 0, free: AtomicU64::new(u64::MAX), failed: AtomicBool::new(false) }
    }

    /// Measures free space, and takes the ballast back when there is room for it.
    pub(crate) fn sample(&self) {
        match free_bytes(&self.dir) {
            Ok(free) => {
                let was_low = self.free.swap(free, Ordering::AcqRel) < self.reserve;
                let low = free < self.reserve;
                if low != was_low {
                    let state =
                        if low { "below the reserve: writes refused" } else { "has room again: writes accepted" };
                    tracing::warn!(free, reserve = self.reserve, "disk {state}");
                }
                metrics::gauge!("herald_storage_free_bytes").set(free as f64);
                if free >= self.reserve.saturating_add(BALLAST_BYTES) {
                    self.keep_ballast();
                }
            }
            Err(e) => tracing::warn!(error = %e, "measuring free disk space failed"),
        }
    }

    /// `Ok` when a write may be made now.
    pub(crate) fn writable(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::Unavailable("the database failed a write and is being reopened".into()));
        }
        if self.free.load(Ordering::Acquire) < self.reserve {
            return Err(Error::Full);
        }
        Ok(())
    }

    /// Records a failed flush: the database refuses writes until reopened.
    pub(crate) fn write_failed(&self) {
        self.failed.store(true, Ordering::Release);
        self.sample();
    }

    /// The database failed and there is room to reopen it (and to write a
    /// little more even with no reserve configured).
    pub(crate) fn needs_reopen(&self) -> bool {
        let room = self.reserve.saturating_add(REOPEN_ROOM);
        self.failed.load(Ordering::Acquire) && self.free.load(Ordering::Acquire) >= room
    }

    pub(crate) fn recovered(&self) {
        self.failed.store(false, Ordering::Release);
    }

    /// Deletes the ballast file; true when there was one to give up.
    pub(crate) fn give_up_ballast(&self) -> bool {
        std::fs::remove_file(self.dir.join(BALLAST_FILE)).is_ok()
    }

    /// Creates the ballast file (its blocks allocated, not sparse) when absent.
    fn keep_ballast(&self) {
        let path = self.dir.join(BALLAST_FILE);
        if path.exists() {
            return;
        }
        let made = std::fs::File::create(&path).and_then(|f| {
            rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, BALLAST_BYTES)?;
            f.sync_all()
        });
        if let Err(e) = made {
            tracing::warn!(error = %e, "could not keep the disk ballast");
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Room the databases need on the data directory's filesystem besides the
/// reserve and the ballast, for [`reserve_fits`].
const DATABASE_ROOM_BYTES: u64 = 16 << 20;

/// Refuses a reserve the data directory's filesystem cannot hold with the
/// ballast and some room for the databases: every write would be refused
/// for want of space on a nearly empty disk (README, "A full disk").
/// A filesystem that cannot be measured passes (sampling says so later).
pub(crate) fn reserve_fits(dir: &Path, reserve: u64) -> Result<()> {
    let Ok(s) = rustix::fs::statvfs(dir) else { return Ok(()) };
    let total = s.f_blocks.saturating_mul(s.f_frsize);
    let overhead = BALLAST_BYTES.saturating_add(DATABASE_ROOM_BYTES);
    if reserve == 0 || total >= reserve.saturating_add(overhead) {
        return Ok(());
    }
    let mib = |b: u64| b >> 20;
    let lower = match total.checked_sub(overhead) {
        Some(most) if most >= 1 << 20 => format!("lower the reserve to at most {} MiB", mib(most)),
        _ => "lower the reserve to 0 or use a larger filesystem".to_owned(),
    };
    Err(Error::Unavailable(format!(
        "--disk-reserve-mib {} does not fit: the data directory's filesystem holds only {} MiB, and besides the \
         reserve needs {} MiB for the ballast and the databases; {lower}",
        mib(reserve),
        mib(total),
        mib(overhead)
    )))
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
        let roomy = Space::new(dir.path(), 0);
        assert!(roomy.writable().is_ok());
        assert!(!roomy.needs_reopen(), "nothing failed");
        let tight = Space::new(dir.path(), u64::MAX);
        assert!(matches!(tight.writable(), Err(Error::Full)));
        assert!(!tight.needs_reopen());
        roomy.write_failed();
        assert!(matches!(roomy.writable(), Err(Error::Unavailable(_))), "a failed database takes no writes");
        assert!(roomy.needs_reopen(), "and is reopened once there is room");
        roomy.recovered();
        assert!(roomy.writable().is_ok());
    }

    #[test]
    fn the_ballast_is_kept_when_there_is_room_and_given_up_once() {
        let dir = tempfile::tempdir().unwrap();
        let space = Space::new(dir.path(), 0);
        let ballast = dir.path().join(BALLAST_FILE);
        assert_eq!(std::fs::metadata(&ballast).unwrap().len(), BALLAST_BYTES);
        assert!(space.give_up_ballast());
        assert!(!space.give_up_ballast(), "nothing left to give up");
        space.sample();
        assert!(ballast.exists(), "taken back when there is room");
    }

    #[test]
    fn no_space_is_recognised() {
        assert!(is_no_space(&std::io::Error::from_raw_os_error(28)));
        assert!(!is_no_space(&std::io::Error::from_raw_os_error(2)));
    }
}
