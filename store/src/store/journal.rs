//! Intent records that make a multi-key write atomic without sled transactions.
//!
//! sled's transactions take its global write lock, which waits for every
//! flush in progress to finish its disk sync: each write would queue behind
//! the previous request's fsync. Instead a write that touches several keys is
//! first recorded whole in the `journal` tree (one insert, atomic on its own),
//! then applied key by key, then its record is removed. sled recovers a prefix
//! of the log after a crash, so a crash leaves either no record (nothing of the
//! write survives) or the record (replayed at the next open; every operation is
//! a put or delete of a fixed key, so replaying twice is harmless).

use super::StoreError;

/// Which tree an operation touches. The numbers are stored: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeId {
    Sessions = 0,
    /// One message per key, as schema versions 1 and 2 stored them: only in
    /// records a crash left in a store not yet upgraded.
    Messages = 1,
    Bindings = 2,
    Plans = 3,
    Threads = 4,
    Replies = 5,
    Summaries = 6,
    /// Chunks of messages (see `history`).
    History = 7,
    /// The store's manifest (see `manifest`), written with every write.
    Meta = 8,
    /// Schema version 3's files: attachment id → the file's bytes. Only in
    /// records a crash left in a store not yet upgraded.
    Attachments = 9,
    /// Attachment id → its file's record (see `files`).
    Files = 10,
}

impl TreeId {
    /// The tree a stored number names (also how the manifest counts each tree).
    pub(super) fn from_u8(b: u8) -> Option<TreeId> {
        Some(match b {
            0 => TreeId::Sessions,
            1 => TreeId::Messages,
            2 => TreeId::Bindings,
            3 => TreeId::Plans,
            4 => TreeId::Threads,
            5 => TreeId::Replies,
            6 => TreeId::Summaries,
            7 => TreeId::History,
            8 => TreeId::Meta,
            9 => TreeId::Attachments,
            10 => TreeId::Files,
            _ => return None,
        })
    }
}

/// One key's change: `value` `None` deletes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub tree: TreeId,
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

/// `[put=1|del=2][tree][key len u32 BE][key]` then, for a put, `[value len u32 BE][value]`.
pub fn encode(ops: &[Op]) -> Vec<u8> {
    let size: usize = ops
        .iter()
        .map(|o| 10 + o.key.len() + o.value.as_ref().map_or(0, Vec::len))
        .sum();
    let mut out = Vec::with_capacity(size);
    for op in ops {
        out.push(if op.value.is_some() { 1 } else { 2 });
        out.push(op.tree as u8);
        push_bytes(&mut out, &op.key);
        if let Some(v) = &op.value {
            push_bytes(&mut out, v);
        }
    }
    out
}

fn push_bytes(out: &mut Vec<u8>, b: &[u8]) {
    let len = u32::try_from(b.len()).expect("a stored value is under 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(b);
}

pub fn decode(mut b: &[u8]) -> Result<Vec<Op>, StoreError> {
    let bad = || StoreError::Decode("an unfinished write's journal record is malformed".into());
    let mut ops = Vec::new();
    while let [kind, tree, rest @ ..] = b {
        let tree = TreeId::from_u8(*tree).ok_or_else(bad)?;
        let (key, rest) = take_bytes(rest).ok_or_else(bad)?;
        let (value, rest) = match kind {
            1 => {
                let (v, rest) = take_bytes(rest).ok_or_else(bad)?;
                (Some(v.to_vec()), rest)
            }
            2 => (None, rest),
            _ => return Err(bad()),
        };
        ops.push(Op {
            tree,
            key: key.to_vec(),
            value,
        });
        b = rest;
    }
    if b.is_empty() { Ok(ops) } else { Err(bad()) }
}

fn take_bytes(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = b.split_first_chunk::<4>()?;
    let len = u32::from_be_bytes(*len) as usize;
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_refused() {
        let ops = vec![
            Op {
                tree: TreeId::Messages,
                key: b"ct_x\0\0\0\0\0\0\0\x01".to_vec(),
                value: Some(b"{\"content\":\"hi\"}".to_vec()),
            },
            Op {
                tree: TreeId::Replies,
                key: b"ct_x\0\0\0\0\0\0\0\x07".to_vec(),
                value: None,
            },
            Op {
                tree: TreeId::Sessions,
                key: b"ct_x".to_vec(),
                value: Some(Vec::new()),
            },
            Op {
                tree: TreeId::Attachments,
                key: b"at_1".to_vec(),
                value: Some(vec![0, 1, 2, 255]),
            },
        ];
        let bytes = encode(&ops);
        assert_eq!(decode(&bytes).unwrap(), ops);
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        let mut bad_tree = bytes.clone();
        bad_tree[1] = 11;
        assert!(decode(&bad_tree).is_err());
        assert_eq!(decode(&[]).unwrap(), vec![]);
    }
}
