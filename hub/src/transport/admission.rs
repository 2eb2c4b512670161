//! Which connections the hub keeps open: a connection that has not yet shown
//! the secret is "untrusted" and counts against small caps (per peer address
//! and in total); one that has is "trusted" and counts only against the file
//! descriptors the process may open. Invariant: untrusted + trusted
//! connections never exceed the descriptor budget, and untrusted ones never
//! take the room kept for trusted ones (the person and the connected agents).
//!
//! A new connection is always taken: when its peer (or everyone) is at the
//! untrusted cap, the oldest untrusted connection of that peer (or of anyone)
//! older than [`GRACE`] is told to close instead. A legitimate client shows
//! the secret in its first request, milliseconds after connecting, so an
//! attacker holding connections open only ever evicts its own. (The grace
//! lets a burst of agents connecting at once past the caps briefly; the
//! descriptor budget itself is never passed: at it, the oldest untrusted
//! connection goes whatever its age.)

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use holdline_store::lock::Unpoisoned as _;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Descriptors kept for the store, the log, the listener and the admin
/// commands' own connections.
const RESERVED_FDS: usize = 64;
/// Untrusted connections one peer address may hold.
pub const PER_PEER_UNTRUSTED: usize = 64;
/// Untrusted connections everyone together may hold (less on a small budget).
pub const MAX_UNTRUSTED: usize = 512;
/// An untrusted connection younger than this is evicted only to stay within
/// the descriptor budget: time for a client to send its first request.
pub const GRACE: Duration = Duration::from_secs(2);

/// How many connections of each kind the hub keeps.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub total: usize,
    pub untrusted: usize,
    pub per_peer: usize,
}

impl Caps {
    /// Caps for a process that may open `fds` descriptors: a quarter of what
    /// is left after the reserve may be untrusted, at most [`MAX_UNTRUSTED`].
    pub fn for_fds(fds: usize) -> Caps {
        let total = fds.saturating_sub(RESERVED_FDS).max(8);
        let untrusted = (total / 4).clamp(2, MAX_UNTRUSTED);
        Caps {
            total,
            untrusted,
            per_peer: PER_PEER_UNTRUSTED.min(untrusted),
        }
    }

    /// Caps for this process's open-files limit (its soft limit).
    pub fn for_this_process() -> Caps {
        Caps::for_fds(open_files_limit())
    }
}

/// Raises this process's soft open-files limit to its hard limit (systemd's
/// default soft limit is 1,024 whatever `LimitNOFILE` allows) and answers the
/// limit in force.
pub fn raise_open_files_limit() -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    // An unlimited hard limit (macOS) cannot be the soft one: try a large
    // finite value, then the usual macOS per-process maximum.
    let wanted = limit.maximum.unwrap_or(65_536);
    for soft in [wanted, 10_240] {
        if limit.current.is_some_and(|c| c >= soft) {
            break;
        }
        let raised = rustix::process::Rlimit {
            current: Some(soft),
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            break;
        }
    }
    open_files_limit()
}

fn open_files_limit() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit
        .current
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
        .min(1 << 20)
}

/// The hub's connection counts; cheap to clone.
#[derive(Clone)]
pub struct Admission {
    shared: Arc<Shared>,
}

struct Shared {
    caps: Caps,
    /// A std mutex: a few map updates per connection, never across `.await`.
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    trusted: usize,
    /// Untrusted connections by age (their ids grow), with their peer, when
    /// they opened and the token that tells them to close.
    untrusted: BTreeMap<u64, (IpAddr, Instant, CancellationToken)>,
    per_peer: HashMap<IpAddr, usize>,
    next_id: u64,
}

impl Admission {
    pub fn new(caps: Caps) -> Admission {
        Admission {
            shared: Arc::new(Shared {
                caps,
                counts: Mutex::default(),
            }),
        }
    }

    pub fn caps(&self) -> Caps {
        self.shared.caps
    }

    /// Takes a new connection from `peer` as untrusted, evicting an older
    /// untrusted one when a cap is reached (so untrusted + trusted never pass
    /// the total: trusted ones stop at `total - untrusted`).
    pub fn admit(&self, peer: IpAddr) -> Ticket {
        let caps = self.shared.caps;
        let mut counts = self.shared.lock();
        let now = Instant::now();
        if counts.per_peer.get(&peer).copied().unwrap_or(0) >= caps.per_peer {
            counts.evict_oldest(Some(peer), now.checked_sub(GRACE));
        }
        if counts.untrusted.len() >= caps.untrusted {
            counts.evict_oldest(None, now.checked_sub(GRACE));
        }
        while counts.trusted + counts.untrusted.len() >= caps.total
            && counts.evict_oldest(None, Some(now))
        {}
        let id = counts.next_id;
        counts.next_id += 1;
        let close = CancellationToken::new();
        counts.untrusted.insert(id, (peer, now, close.clone()));
        *counts.per_peer.entry(peer).or_default() += 1;
        Ticket {
            shared: self.shared.clone(),
            peer,
            id,
            close,
            trusted: AtomicBool::new(false),
        }
    }

    /// Connections open now: (trusted, untrusted).
    pub fn open(&self) -> (usize, usize) {
        let counts = self.shared.lock();
        (counts.trusted, counts.untrusted.len())
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock_unpoisoned()
    }
}

impl Counts {
    /// Tells the oldest untrusted connection (of `peer`, or of anyone) to
    /// close if it opened at or before `opened_by`, and stops counting it;
    /// whether one was.
    fn evict_oldest(&mut self, peer: Option<IpAddr>, opened_by: Option<Instant>) -> bool {
        let oldest = self
            .untrusted
            .iter()
            .find(|(_, (p, _, _))| peer.is_none_or(|peer| *p == peer))
            .filter(|(_, (_, opened, _))| opened_by.is_some_and(|by| *opened <= by))
            .map(|(id, _)| *id);
        if let Some(id) = oldest {
            self.forget_untrusted(id);
        }
        oldest.is_some()
    }

    fn forget_untrusted(&mut self, id: u64) {
        if let Some((peer, _, close)) = self.untrusted.remove(&id) {
            close.cancel();
            if let Some(n) = self.per_peer.get_mut(&peer) {
                *n -= 1;
                if *n == 0 {
                    self.per_peer.remove(&peer);
                }
            }
        }
    }
}

/// One admitted connection; dropping it frees its place.
pub struct Ticket {
    shared: Arc<Shared>,
    peer: IpAddr,
    id: u64,
    close: CancellationToken,
    trusted: AtomicBool,
}

impl Ticket {
    pub fn peer(&self) -> IpAddr {
        self.peer
    }

    pub fn is_trusted(&self) -> bool {
        self.trusted.load(Ordering::Relaxed)
    }

    /// The connection showed the secret: it leaves the untrusted caps. False
    /// when trusted connections already fill the budget (the connection
    /// should close after this answer).
    pub fn trust(&self) -> bool {
        if self.is_trusted() {
            return true;
        }
        let mut counts = self.shared.lock();
        if counts.trusted >= self.shared.caps.total - self.shared.caps.untrusted {
            return false;
        }
        if counts.untrusted.remove(&self.id).is_none() {
            // Already evicted: it closes.
            return false;
        }
        if let Some(n) = counts.per_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                counts.per_peer.remove(&self.peer);
            }
        }
        counts.trusted += 1;
        self.trusted.store(true, Ordering::Relaxed);
        true
    }

    /// Completes when an untrusted connection must close (evicted); never
    /// for a trusted one.
    pub fn evicted(&self) -> WaitForCancellationFuture<'_> {
        self.close.cancelled()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut counts = self.shared.lock();
        if self.is_trusted() {
            counts.trusted -= 1;
        } else {
            let id = self.id;
            counts.forget_untrusted(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    /// Makes every open untrusted connection look older than the grace.
    fn age(gate: &Admission) {
        let mut counts = gate.shared.lock();
        for (_, opened, _) in counts.untrusted.values_mut() {
            *opened -= GRACE;
        }
    }

    #[test]
    fn a_peer_at_its_cap_evicts_its_own_oldest_connection() {
        let gate = Admission::new(Caps {
            total: 100,
            untrusted: 10,
            per_peer: 3,
        });
        let a: Vec<_> = (0..3).map(|_| gate.admit(ip(1))).collect();
        let other = gate.admit(ip(2));
        age(&gate);
        let fourth = gate.admit(ip(1));
        assert!(a[0].close.is_cancelled());
        assert!(!a[1].close.is_cancelled() && !other.close.is_cancelled());
        assert_eq!(gate.open(), (0, 4));
        drop(a);
        assert_eq!(gate.open(), (0, 2));
        assert!(fourth.trust());
        assert_eq!(gate.open(), (1, 1));
        drop(fourth);
        drop(other);
        assert_eq!(gate.open(), (0, 0));
    }

    #[test]
    fn a_burst_passes_the_caps_for_the_grace_but_never_the_budget() {
        let gate = Admission::new(Caps {
            total: 8,
            untrusted: 4,
            per_peer: 2,
        });
        let burst: Vec<_> = (0..8).map(|_| gate.admit(ip(1))).collect();
        assert!(burst.iter().all(|t| !t.close.is_cancelled()));
        assert_eq!(gate.open(), (0, 8));
        let ninth = gate.admit(ip(1));
        assert!(burst[0].close.is_cancelled(), "the budget is never passed");
        assert_eq!(gate.open(), (0, 8));
        drop(ninth);
    }

    #[test]
    fn trusted_connections_keep_their_room() {
        let gate = Admission::new(Caps {
            total: 6,
            untrusted: 2,
            per_peer: 2,
        });
        let trusted: Vec<_> = (0..4)
            .map(|i| {
                let t = gate.admit(ip(i));
                assert!(t.trust());
                t
            })
            .collect();
        let fifth = gate.admit(ip(9));
        assert!(!fifth.trust(), "the budget's trusted part is full");
        assert_eq!(gate.open(), (4, 1));
        drop(trusted);
        assert!(fifth.trust());
    }

    #[test]
    fn caps_follow_the_descriptor_budget() {
        let small = Caps::for_fds(256);
        assert_eq!(small.total, 192);
        assert_eq!(small.untrusted, 48);
        assert_eq!(small.per_peer, 48);
        let large = Caps::for_fds(65_536);
        assert_eq!(large.untrusted, MAX_UNTRUSTED);
        assert_eq!(large.per_peer, PER_PEER_UNTRUSTED);
    }
}
