//! Locks that stay usable after a holder panicked: [`Unpoisoned`] for std's `Mutex` and
//! `RwLock`, the one place the hub decides what a poisoned lock means.
//!
//! Invariant: every critical section in the hub leaves its data whole at each step (an
//! insert, a remove, a counter bumped), so what a panicking holder left is as valid as
//! what any holder leaves. Refusing it would turn one panic (a bug, logged) into every
//! later request failing, so poisoning is ignored here and nowhere else by hand.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locking that ignores poisoning (see the module's invariant for why that is sound).
pub trait Unpoisoned<T: ?Sized> {
    /// The mutex's guard, whether or not an earlier holder panicked.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Unpoisoned<T> for Mutex<T> {
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Reading and writing an `RwLock` whether or not an earlier holder panicked.
pub trait UnpoisonedRw<T: ?Sized> {
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T>;
    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> UnpoisonedRw<T> for RwLock<T> {
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T> {
        self.read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T> {
        self.write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_whose_holder_panicked_still_gives_its_data() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let held = m.clone();
        let _ = std::thread::spawn(move || {
            let mut g = held.lock().unwrap();
            *g = 2;
            panic!("a holder panics");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*m.lock_unpoisoned(), 2);
        let rw = RwLock::new(3);
        *rw.write_unpoisoned() += 1;
        assert_eq!(*rw.read_unpoisoned(), 4);
    }
}
