//! This module exists because `lazy_static` causes TSAN to
//! be very unhappy. We rely heavily on TSAN for finding
//! races, so we don't use `lazy_static`.
//!
//! Herald: backed by `std::sync::OnceLock`, so that a thread finding the
//! value being made by another waits blocked rather than spinning on a
//! flag (see HERALD.md, 13).

use std::sync::OnceLock;

/// A lazily initialized value
pub struct Lazy<T, F> {
    value: OnceLock<T>,
    init: F,
}

impl<T, F> Lazy<T, F> {
    /// Create a new Lazy
    pub const fn new(init: F) -> Self
    where
        F: Sized,
    {
        Self { value: OnceLock::new(), init }
    }
}

impl<T, F> std::ops::Deref for Lazy<T, F>
where
    F: Fn() -> T,
{
    type Target = T;

    fn deref(&self) -> &T {
        self.value.get_or_init(|| (self.init)())
    }
}

#[cfg(test)]
mod tests {
    use super::Lazy;
    use std::time::Duration;

    /// CPU time the calling thread has used.
    fn thread_cpu() -> Duration {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        #[allow(unsafe_code)]
        let usage = unsafe {
            assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()), 0);
            usage.assume_init()
        };
        let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
    }

    fn slow() -> u64 {
        std::thread::sleep(Duration::from_millis(400));
        7
    }

    static SLOW: Lazy<u64, fn() -> u64> = Lazy::new(slow);

    /// A thread that derefs while another thread's initialization runs
    /// waits without using the CPU (released sled spun on a flag: the
    /// whole wait on a core), then sees the same value.
    #[test]
    fn herald_lazy_waits_without_spinning() {
        let maker = std::thread::spawn(|| *SLOW);
        std::thread::sleep(Duration::from_millis(50));
        let waiter = std::thread::spawn(|| {
            let before = thread_cpu();
            let value = *SLOW;
            (value, thread_cpu() - before)
        });
        let (value, cpu) = waiter.join().unwrap();
        assert_eq!(maker.join().unwrap(), 7);
        assert_eq!(value, 7);
        assert!(cpu < Duration::from_millis(100), "the waiter used {:?} of CPU while waiting", cpu);
    }
}
