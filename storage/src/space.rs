//! Free disk space and write health: writes are refused (as [`Error::Full`])
//! while the data directory's filesystem has less free space than the
//! reserve, so the database rarely meets a full disk mid-write, and they
//! resume by themselves once space is freed.
//!
//! When it does meet one anyway (another process filled the disk and freed it
//! again between two samples), or any other storage fault fails a write, sled
//! refuses every write after that one until the database is reopened. Every
//! error of a write to the sled databases therefore comes back through
//! [`Space::write_error`]: the store is marked failed at once (`/readyz`
//! answers 503 saying why), and the watch thread reopens the database as soon
//! as the disk has room, whether or not a sample ever saw it full (README,
//! "A full disk").

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How often free space is measured.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// How often free space is measured while a failed database waits to be
/// reopened: writes come back this soon after space is freed.
pub(crate) const SAMPLE_FAILED_EVERY: Duration = Duration::from_millis(50);

/// The kinds of write failure `herald_storage_write_failures_total` counts.
pub const WRITE_FAILURE_KINDS: [&str; 4] = ["no_space", "io", "corruption", "other"];

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
    /// What the failed write met, for `/readyz`; written (under its lock)
    /// before `failed` is set.
    failure: Mutex<String>,
    /// The watch thread, woken by a failed write so it reopens the database
    /// without waiting out its sampling period.
    watcher: OnceLock<std::thread::Thread>,
}

impl Space {
    /// Measures now; the store's watch thread calls [`Space::sample`] after.
    pub(crate) fn new(dir: &Path, reserve: u64) -> Space {
        let space = Space::at(dir.to_path_buf(), reserve);
        space.sample();
        space
    }

    fn at(dir: PathBuf, reserve: u64) -> Space {
        Space {
            dir,
            reserve,
            free: AtomicU64::new(u64::MAX),
            failed: AtomicBool::new(false),
            failure: Mutex::new(String::new()),
            watcher: OnceLock::new(),
        }
    }

    /// A store whose data is not on this machine's disk (PostgreSQL): never
    /// full here, and no ballast kept.
    pub(crate) fn unmetered() -> Space {
        Space::at(PathBuf::new(), 0)
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
            let failure = self.failure.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return Err(Error::Unavailable(format!("the database failed a write ({failure}) and is being reopened")));
        }
        if self.free.load(Ordering::Acquire) < self.reserve {
            return Err(Error::Full);
        }
        Ok(())
    }

    /// The one way back of every error of a write to the sled databases (a
    /// transaction's commit, a direct insert or removal, a flush, the
    /// broadcast index's update, the send records' writer and the flusher
    /// through those): a storage fault (a full disk, an I/O error, sled's
    /// corruption or bug reports) is counted by kind in
    /// `herald_storage_write_failures_total` and marks the store failed (no
    /// writes, `/readyz` 503) until the watch thread has reopened the
    /// database; free space is measured again and the watch thread woken.
    /// Any other error (a conflict, a record that does not decode...) is not
    /// the database's failure and is handed back untouched. Answers `e`.
    pub(crate) fn write_error(&self, e: Error) -> Error {
        let Some(kind) = failure_kind(&e) else { return e };
        metrics::counter!("herald_storage_write_failures_total", "kind" => kind).increment(1);
        {
            let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            if !self.failed.load(Ordering::Acquire) {
                *failure = e.to_string();
                self.failed.store(true, Ordering::Release);
                tracing::error!(kind, error = %e, "a write to the database failed: writes are refused until it is reopened, as soon as the disk has room");
            }
        }
        self.sample();
        if let Some(watcher) = self.watcher.get() {
            watcher.unpark();
        }
        e
    }

    /// Names the thread [`Space::write_error`] wakes (the store's watch thread).
    pub(crate) fn watched_by(&self, thread: std::thread::Thread) {
        let _ = self.watcher.set(thread);
    }

    /// Whether the database failed a write and waits to be reopened.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// The database failed and there is room to reopen it (and to write a
    /// little more even with no reserve configured).
    pub(crate) fn needs_reopen(&self) -> bool {
        let room = self.reserve.saturating_add(REOPEN_ROOM);
        self.failed.load(Ordering::Acquire) && self.free.load(Ordering::Acquire) >= room
    }

    pub(crate) fn recovered(&self) {
        let _failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
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

/// The kind (one of [`WRITE_FAILURE_KINDS`]) of a write's error that is the
/// database's failure; `None` for the expected outcomes and other errors.
fn failure_kind(e: &Error) -> Option<&'static str> {
    match e {
        Error::Full => Some("no_space"),
        Error::Engine(sled::Error::Io(_)) | Error::Io(_) => Some("io"),
        Error::Engine(sled::Error::Corruption { .. }) => Some("corruption"),
        Error::Engine(_) => Some("other"),
        _ => None,
    }
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
        let full = sled::Error::Io(std::io::Error::from_raw_os_error(28));
        assert!(matches!(roomy.write_error(full.into()), Error::Full), "handed back as it came");
        assert!(matches!(roomy.writable(), Err(Error::Unavailable(_))), "a failed database takes no writes");
        assert!(roomy.needs_reopen(), "and is reopened once there is room");
        roomy.recovered();
        assert!(roomy.writable().is_ok());
    }

    /// A write that meets the full disk inside sled marks the store failed
    /// by itself, saying why, whether or not a sample saw the disk full;
    /// the outcomes of writes that are not the database's failure mark
    /// nothing.
    #[test]
    fn a_failed_write_marks_the_store_failed_until_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let space = Space::new(dir.path(), 0);
        for expected in [Error::Conflict("user"), Error::NotFound("user"), Error::Codec("bad".into())] {
            let back = space.write_error(expected);
            assert!(!matches!(back, Error::Full | Error::Engine(_)));
            assert!(space.writable().is_ok(), "{back} is not the database's failure");
        }
        assert!(!space.failed() && !space.needs_reopen());

        let no_space = sled::Error::Io(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            "No space left on device", // as sled hands back its stored error
        ));
        let back = space.write_error(no_space.into());
        assert!(matches!(back, Error::Full), "the writer still answers 507");
        assert!(space.failed());
        let Err(Error::Unavailable(why)) = space.writable() else { panic!("a failed database takes no writes") };
        assert!(why.contains("no space left"), "{why}");
        assert!(space.needs_reopen(), "the disk has room: reopened at once");

        let tight = Space::new(dir.path(), u64::MAX);
        tight.write_error(Error::Engine(sled::Error::Io(std::io::Error::other("EIO"))));
        assert!(tight.writable().is_err());
        assert!(!tight.needs_reopen(), "not reopened while the disk has no room");

        let corrupt = Space::new(dir.path(), 0);
        corrupt.write_error(Error::Engine(sled::Error::ReportableBug("x".into())));
        assert!(matches!(corrupt.writable(), Err(Error::Unavailable(_))), "any fault of the database's");
        corrupt.recovered();
        assert!(corrupt.writable().is_ok());
    }

    #[test]
    fn write_failures_are_counted_by_kind() {
        let io = |kind| Error::Engine(sled::Error::Io(std::io::Error::new(kind, "x")));
        assert_eq!(failure_kind(&Error::Full), Some("no_space"));
        assert_eq!(failure_kind(&io(std::io::ErrorKind::PermissionDenied)), Some("io"));
        assert_eq!(failure_kind(&Error::Engine(sled::Error::ReportableBug("x".into()))), Some("other"));
        assert_eq!(failure_kind(&Error::Unavailable("reopening".into())), None, "a refusal, not a failure");
        assert_eq!(failure_kind(&Error::Fenced("lease".into())), None);
        for kind in [Error::Full, io(std::io::ErrorKind::Other)].iter().filter_map(failure_kind) {
            assert!(WRITE_FAILURE_KINDS.contains(&kind));
        }
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
