//! A session's messages as stored: chunks of consecutive messages, one sled key each.
//!
//! One key per message made a store of long histories mostly keys: sled keeps
//! a page-table entry and cache bookkeeping for every node it has, and its
//! start reads them all, so a hub's start time and memory grew with the number
//! of messages ever written. A chunk holds up to [`CHUNK_MESSAGES`] messages or
//! [`CHUNK_BYTES`] (a larger message gets a chunk of its own), keyed by
//! token ‖ seq of its first message (u64 BE), so a history is still one prefix
//! scan in order, and appending rewrites at most one small chunk.
//!
//! A chunk's value is its entries back to back: `[seq u64 BE][len u32 BE][message JSON]`.

use super::StoreError;

/// At most this many messages share a chunk.
pub const CHUNK_MESSAGES: usize = 16;
/// A chunk takes another message only while it stays within this size.
pub const CHUNK_BYTES: usize = 8 * 1024;

const ENTRY_HEAD: usize = 12;

fn malformed() -> StoreError {
    StoreError::Decode("a stored chunk of messages is malformed".into())
}

/// The entries of a chunk's value, in order: `(seq, message JSON)`.
pub fn entries(mut value: &[u8]) -> Result<Vec<(u64, &[u8])>, StoreError> {
    let mut out = Vec::with_capacity(CHUNK_MESSAGES);
    while !value.is_empty() {
        let (seq, rest) = value.split_first_chunk::<8>().ok_or_else(malformed)?;
        let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(malformed)?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(malformed());
        }
        let (message, rest) = rest.split_at(len);
        out.push((u64::from_be_bytes(*seq), message));
        value = rest;
    }
    Ok(out)
}

/// The chunk that messages are being appended to, as one write builds it.
#[derive(Debug)]
pub struct Chunk {
    /// The seq of its first message: with the token, its key.
    pub first: u64,
    /// The stored value.
    pub value: Vec<u8>,
    count: usize,
    last: Option<u64>,
    /// Whether `value` differs from what is stored.
    pub changed: bool,
}

impl Chunk {
    /// A chunk as stored under `first`.
    pub fn stored(first: u64, value: Vec<u8>) -> Result<Chunk, StoreError> {
        let (count, last) = {
            let e = entries(&value)?;
            (e.len(), e.last().map(|(seq, _)| *seq))
        };
        Ok(Chunk {
            first,
            value,
            count,
            last,
            changed: false,
        })
    }

    /// A new chunk starting with message `first`.
    pub fn starting_at(first: u64) -> Chunk {
        Chunk {
            first,
            value: Vec::new(),
            count: 0,
            last: None,
            changed: false,
        }
    }

    /// Whether a message of `len` bytes belongs in this chunk rather than a new one.
    pub fn takes(&self, len: usize) -> bool {
        self.count == 0
            || (self.count < CHUNK_MESSAGES && self.value.len() + ENTRY_HEAD + len <= CHUNK_BYTES)
    }

    /// Whether `seq` may follow what the chunk holds (histories only grow).
    pub fn follows(&self, seq: u64) -> bool {
        self.last.is_none_or(|last| seq > last)
    }

    pub fn push(&mut self, seq: u64, message: &[u8]) {
        debug_assert!(self.follows(seq), "message {seq} appended out of order");
        let len = u32::try_from(message.len()).expect("a message is under 4 GiB");
        self.value.extend_from_slice(&seq.to_be_bytes());
        self.value.extend_from_slice(&len.to_be_bytes());
        self.value.extend_from_slice(message);
        self.count += 1;
        self.last = Some(seq);
        self.changed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fill_by_count_and_size_and_read_back() {
        let mut c = Chunk::starting_at(3);
        assert!(c.takes(CHUNK_BYTES * 4), "an empty chunk takes any message");
        c.push(3, b"{\"a\":1}");
        c.push(4, b"");
        assert!(!c.follows(4) && c.follows(5));
        assert_eq!(
            entries(&c.value).unwrap(),
            vec![(3, &b"{\"a\":1}"[..]), (4, &b""[..])]
        );
        let again = Chunk::stored(3, c.value.clone()).unwrap();
        assert!(!again.changed && again.follows(5) && !again.follows(4));

        assert!(
            !c.takes(CHUNK_BYTES),
            "a full-size message starts a new chunk"
        );
        let mut full = Chunk::starting_at(0);
        for seq in 0..CHUNK_MESSAGES as u64 {
            assert!(full.takes(1));
            full.push(seq, b"x");
        }
        assert!(!full.takes(1), "no more than {CHUNK_MESSAGES} messages");
    }

    #[test]
    fn a_malformed_chunk_is_refused() {
        let mut c = Chunk::starting_at(0);
        c.push(0, b"{}");
        let v = c.value;
        for bad in [&v[..5], &v[..11], &v[..v.len() - 1]] {
            assert!(entries(bad).is_err(), "{bad:?} accepted");
            assert!(Chunk::stored(0, bad.to_vec()).is_err());
        }
        assert_eq!(entries(&[]).unwrap(), vec![]);
    }
}
