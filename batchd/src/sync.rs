//! The one way batchd locks a mutex.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering it if a thread panicked while holding it: the data is plain
/// state that every operation leaves consistent between statements that matter.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
