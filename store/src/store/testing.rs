//! Helpers for tests of crates above the store (the `testing` feature); no product code
//! calls them.

use std::path::Path;

use super::{Store, StoreError};

/// Opens `dir`, waiting out the lock sled lets go of shortly after a drop (a store the
/// test just wrote, or one it reopens).
pub fn reopen(dir: &Path) -> Result<Store, StoreError> {
    let mut reopened = Store::open(dir, 1 << 20);
    for _ in 0..50 {
        if !matches!(reopened, Err(StoreError::Locked { .. })) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        reopened = Store::open(dir, 1 << 20);
    }
    reopened
}
