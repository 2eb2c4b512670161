//! The store's unit tests: writes, reads, chunks, upgrades and damage, on real sled
//! databases in temporary folders.

use super::testing::reopen;
use super::*;
use crate::session::Role;

fn msg(i: u64) -> Message {
    Message::new(Role::Assistant, format!("m{i}"), i as i64)
}

#[test]
fn messages_page_backwards_and_queue_keeps_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let s = Session::new(Token::generate(), "t", "/w", "h", "hub");
    let mut w = Write::new();
    w.session(&s);
    for i in 0..10 {
        w.message(&s.token, i, msg(i));
    }
    let (a, b) = (
        QueuedReply::new("a".into(), vec![], false),
        QueuedReply::new("b".into(), vec![], false),
    );
    w.enqueue(&s.token, a.clone()).enqueue(&s.token, b.clone());
    store.apply(&w).unwrap();

    let last3 = store.messages(&s.token, None, 3).unwrap();
    assert_eq!(last3.iter().map(|m| m.0).collect::<Vec<_>>(), vec![7, 8, 9]);
    let before7 = store.messages(&s.token, Some(7), 2).unwrap();
    assert_eq!(before7.iter().map(|m| m.0).collect::<Vec<_>>(), vec![5, 6]);

    assert_eq!(store.first_reply(&s.token).unwrap().unwrap().id, a.id);
    let mut w = Write::new();
    w.dequeue(&s.token, &a.id);
    store.apply(&w).unwrap();
    assert_eq!(store.first_reply(&s.token).unwrap().unwrap().id, b.id);
}

/// Every way of reading a history, against the messages as written.
fn assert_history(store: &Store, token: &Token, want: &[Message]) {
    let all: Vec<(u64, Message)> = want
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, m)| (i as u64, m))
        .collect();
    let n = all.len() as u64;
    assert_eq!(store.messages(token, None, usize::MAX).unwrap(), all);
    for before in [0, 1, 5, 15, 16, 17, 31, 32, 33, n - 1, n, n + 3] {
        for limit in [0, 1, 3, 16, 20, 100] {
            let upto = before.min(n) as usize;
            let want = &all[upto.saturating_sub(limit)..upto];
            let got = store.messages(token, Some(before), limit).unwrap();
            assert_eq!(got, want, "before {before}, limit {limit}");
        }
    }
    for from in [0, 1, 15, 16, 17, 32, n - 1, n, n + 1] {
        let want = &all[(from.min(n) as usize)..];
        assert_eq!(
            store.messages_from(token, from).unwrap(),
            want,
            "from {from}"
        );
    }
    let last = &want[want.len() - 1].content;
    assert!(store.messages_contain(token, &last.to_lowercase()).unwrap());
    assert!(!store.messages_contain(token, "never written").unwrap());
}

#[test]
fn histories_are_stored_in_chunks_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let (a, b) = (Token::generate(), Token::generate());
    let mut written: HashMap<Token, Vec<Message>> = HashMap::new();
    let mut append = |w: &mut Write, t: &Token, m: Message| {
        let h = written.entry(t.clone()).or_default();
        w.message(t, h.len() as u64, m.clone());
        h.push(m);
    };
    // One write of 20 for a, interleaved with b; then single appends, one
    // too large to share a chunk, then a batch that spans chunks.
    let mut w = Write::new();
    for i in 0..20 {
        append(&mut w, &a, msg(i));
        append(&mut w, &b, msg(100 + i));
    }
    store.apply(&w).unwrap();
    for i in 20..45 {
        let mut w = Write::new();
        let mut m = msg(i);
        if i == 30 {
            m.content = format!("Large {}", "x".repeat(history::CHUNK_BYTES));
        }
        append(&mut w, &a, m);
        store.apply(&w).unwrap();
    }
    let mut w = Write::new();
    for i in 45..70 {
        append(&mut w, &a, msg(i));
    }
    store.apply(&w).unwrap();

    assert_history(&store, &a, &written[&a]);
    assert_history(&store, &b, &written[&b]);
    let chunks = store.t().unwrap().history.scan_prefix(a.as_str()).count();
    assert!((5..=7).contains(&chunks), "70 messages in {chunks} chunks");

    // Histories only grow: a message already stored is refused, nothing written.
    let mut w = Write::new();
    w.message(&a, 69, msg(0));
    assert!(store.apply(&w).is_err());
    assert_history(&store, &a, &written[&a]);
    drop(store);
    assert_history(&reopen(dir.path()).unwrap(), &a, &written[&a]);
}

#[test]
fn a_write_cut_short_by_a_crash_is_finished_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let s = Session::new(Token::generate(), "t", "/w", "h", "hub");
    let mut w = Write::new();
    w.session(&s)
        .message(&s.token, 0, msg(0))
        .bind(BindingKind::Chat, "/w::t@h", Some(&s.token));
    // What a crash right after the journal record leaves: the record, no keys.
    // As `apply` records it: the write's keys and the manifest after it.
    let t = store.t().unwrap();
    let mut ops = store.ops(&t, &w).unwrap();
    let manifest = *store.writing.lock().unwrap();
    ops.push(manifest.after(&t, &ops).op());
    store
        .t()
        .unwrap()
        .journal
        .insert(7u64.to_be_bytes(), journal::encode(&ops))
        .unwrap();
    store.flush_blocking().unwrap();
    drop((t, store));

    let store = reopen(dir.path()).unwrap();
    assert_eq!(
        store.load_summaries().unwrap().get(&s.token.to_raw()),
        Some(&Summary::of(&s))
    );
    assert_eq!(store.session(&s.token).unwrap(), Some(s.clone()));
    assert_eq!(store.messages(&s.token, None, 10).unwrap().len(), 1);
    assert_eq!(
        store.binding(BindingKind::Chat, "/w::t@h").unwrap(),
        Some(s.token.clone())
    );
    assert!(
        store.t().unwrap().journal.is_empty(),
        "the record is gone once replayed"
    );
}

#[test]
fn a_damaged_journal_record_is_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    store
        .t()
        .unwrap()
        .journal
        .insert(1u64.to_be_bytes(), &[1u8, 0, 0][..])
        .unwrap();
    store.flush_blocking().unwrap();
    drop(store);
    match reopen(dir.path()) {
        Err(StoreError::Corrupt { .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a damaged journal was accepted"),
    }
}

#[test]
fn summaries_round_trip_and_damage_is_refused() {
    for s in [
        Summary::new(
            Status::Waiting,
            false,
            Some(1_780_000_000_123),
            1_780_000_000_456,
        ),
        Summary::new(Status::Archived, true, None, -1),
        Summary::new(Status::Init, false, Some(0), 0),
    ] {
        assert_eq!(summary_from(&summary_bytes(&s)).unwrap(), s);
    }
    let good = summary_bytes(&Summary::new(Status::Holding, false, None, 5));
    let mut bad_status = good;
    bad_status[0] = 7;
    let mut bad_flags = good;
    bad_flags[1] = 4;
    for bad in [&good[..17], &bad_status[..], &bad_flags[..], &[]] {
        assert!(summary_from(bad).is_err(), "{bad:?} accepted");
    }
}

/// sled itself on `dir`, once a dropped store has let go of its lock.
fn sled_open(dir: &Path) -> sled::Db {
    for _ in 0..50 {
        match sled::open(dir) {
            Err(sled::Error::Io(e)) if e.to_string().contains("lock") => {
                std::thread::sleep(std::time::Duration::from_millis(100))
            }
            other => return other.unwrap(),
        }
    }
    panic!("{} stayed locked", dir.display())
}

/// A store as an earlier build left it: schema `version` (1: no
/// summaries), `sessions` plus `raw` session records, and `messages` one per
/// key in the old `messages` tree.
fn write_old_version(
    dir: &Path,
    version: u32,
    sessions: &[Session],
    raw: &[(&str, &str)],
    messages: &[(&Token, Vec<Message>)],
) {
    let db = sled::open(dir).unwrap();
    db.open_tree("meta")
        .unwrap()
        .insert("schema_version", &version.to_be_bytes())
        .unwrap();
    let tree = db.open_tree("sessions").unwrap();
    let summaries = db.open_tree("summaries").unwrap();
    for s in sessions {
        tree.insert(s.token.as_str(), encode(s)).unwrap();
        if version == 2 {
            summaries
                .insert(s.token.to_raw(), &summary_bytes(&Summary::of(s))[..])
                .unwrap();
        }
    }
    for (k, v) in raw {
        tree.insert(k, *v).unwrap();
    }
    let old = db.open_tree(LEGACY_MESSAGES).unwrap();
    for (token, history) in messages {
        for (seq, m) in history.iter().enumerate() {
            old.insert(key(token, seq as u64), encode(m)).unwrap();
        }
    }
    db.flush().unwrap();
}

#[test]
fn a_version_2_store_gets_its_messages_in_chunks_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        Session::new(Token::generate(), "a", "/w", "h", "hub"),
        Session::new(Token::generate(), "b", "/w", "h", "hub"),
    );
    let mut long: Vec<Message> = (0..40).map(msg).collect();
    long[17].content = "y".repeat(3 * history::CHUNK_BYTES);
    let short: Vec<Message> = (0..3).map(msg).collect();
    write_old_version(
        dir.path(),
        2,
        &[a.clone(), b.clone()],
        &[],
        &[(&a.token, long.clone()), (&b.token, short.clone())],
    );
    // What an upgrade stopped half-way leaves: some chunks already written.
    {
        let db = sled_open(dir.path());
        db.open_tree("history")
            .unwrap()
            .insert(key(&a.token, 5), &b"half"[..])
            .unwrap();
        db.flush().unwrap();
    }

    let store = reopen(dir.path()).unwrap();
    assert_history(&store, &a.token, &long);
    assert_history(&store, &b.token, &short);
    let version = store
        .t()
        .unwrap()
        .meta
        .get("schema_version")
        .unwrap()
        .unwrap();
    assert_eq!(version.as_ref(), &SCHEMA_VERSION.to_be_bytes());
    assert!(
        !store
            .t()
            .unwrap()
            .db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == b"messages")
    );
    assert_eq!(store.load_summaries().unwrap().len(), 2);
    // The upgraded store takes new messages after the old ones.
    let mut w = Write::new();
    w.message(&b.token, 3, msg(3));
    store.apply(&w).unwrap();
    drop(store);
    let store = reopen(dir.path()).unwrap();
    let mut grown = short;
    grown.push(msg(3));
    assert_history(&store, &b.token, &grown);
    assert_history(&store, &a.token, &long);
}

/// A version-2 store with one session of one message, then `damage` done to
/// it with sled itself, as a damaged or interrupted store would have it.
fn version_2_with(damage: impl FnOnce(&sled::Db, &Session)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::new(Token::generate(), "a", "/w", "h", "hub");
    write_old_version(
        dir.path(),
        2,
        std::slice::from_ref(&s),
        &[],
        &[(&s.token, vec![msg(0)])],
    );
    let db = sled_open(dir.path());
    damage(&db, &s);
    db.flush().unwrap();
    dir
}

#[test]
fn a_version_2_store_with_a_malformed_message_key_is_refused_and_kept() {
    let dir = version_2_with(|db, _| {
        let old = db.open_tree(LEGACY_MESSAGES).unwrap();
        old.insert(&b"short"[..], encode(&msg(1))).unwrap();
    });
    for _ in 0..2 {
        match reopen(dir.path()) {
            Err(StoreError::Corrupt { detail, .. }) => {
                assert!(detail.contains("key is malformed"), "{detail}")
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("a malformed message key was upgraded"),
        }
    }
    // Still version 2 with its messages: nothing was given up on.
    let db = sled_open(dir.path());
    let version = db.open_tree("meta").unwrap().get("schema_version").unwrap();
    assert_eq!(version.unwrap().as_ref(), &2u32.to_be_bytes());
    assert_eq!(db.open_tree(LEGACY_MESSAGES).unwrap().len(), 2);
}

#[test]
fn a_crash_record_of_a_version_2_store_is_finished_then_upgraded() {
    let mut token = None;
    let dir = version_2_with(|db, s| {
        // Version 2 journalled a message as one key of the old tree.
        let op = Op {
            tree: TreeId::Messages,
            key: key(&s.token, 1),
            value: Some(encode(&msg(1))),
        };
        db.open_tree("journal")
            .unwrap()
            .insert(3u64.to_be_bytes(), journal::encode(&[op]))
            .unwrap();
        token = Some(s.token.clone());
    });
    let store = reopen(dir.path()).unwrap();
    assert_history(&store, &token.unwrap(), &[msg(0), msg(1)]);
}

#[test]
fn a_version_1_store_gets_its_summaries_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut waiting = Session::new(Token::generate(), "a", "/w", "h", "hub");
    waiting.status = Status::Waiting;
    waiting.wait = Some(crate::session::OpenWait {
        wait_id: "w1".into(),
        request_id: "r1".into(),
        since: 42,
        key: None,
        origin: Default::default(),
    });
    let mut mirror = Session::new(Token::generate(), "b", "/w", "h", "other");
    mirror.mirror = true;
    let history: Vec<Message> = (0..20).map(msg).collect();
    write_old_version(
        dir.path(),
        1,
        &[waiting.clone(), mirror.clone()],
        &[],
        &[(&waiting.token, history.clone())],
    );

    let store = reopen(dir.path()).unwrap();
    let summaries = store.load_summaries().unwrap();
    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[&waiting.token.to_raw()].wait_since(), Some(42));
    assert_eq!(summaries[&waiting.token.to_raw()], Summary::of(&waiting));
    assert_eq!(summaries[&mirror.token.to_raw()], Summary::of(&mirror));
    assert_history(&store, &waiting.token, &history);
    drop(store);
    // Upgraded once: the version says so, and a second open changes nothing.
    let store = reopen(dir.path()).unwrap();
    let version = store
        .t()
        .unwrap()
        .meta
        .get("schema_version")
        .unwrap()
        .unwrap();
    assert_eq!(version.as_ref(), &SCHEMA_VERSION.to_be_bytes());
    assert_eq!(store.load_summaries().unwrap(), summaries);
    assert_history(&store, &waiting.token, &history);
}

#[test]
fn a_version_1_store_with_a_damaged_session_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = Session::new(Token::generate(), "a", "/w", "h", "hub");
    write_old_version(dir.path(), 1, &[s], &[("ct_x", "{")], &[]);
    match reopen(dir.path()) {
        Err(StoreError::Corrupt { .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a damaged session was upgraded"),
    }
    // Still version 1, and refused again: nothing was given up on.
    assert!(matches!(
        reopen(dir.path()),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn second_open_reports_the_lock_and_wrong_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    match Store::open(dir.path(), 1 << 20) {
        Err(StoreError::Locked { .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("second open succeeded"),
    }
    store
        .t()
        .unwrap()
        .meta
        .insert("schema_version", &99u32.to_be_bytes())
        .unwrap();
    store.flush_blocking().unwrap();
    drop(store);
    match reopen(dir.path()) {
        Err(StoreError::Schema { found: 99, .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("wrong schema accepted"),
    }
}

#[test]
fn a_queued_reply_goes_after_the_queue_whatever_sleds_id_counter_says() {
    // A restored store's id counter starts again below the ids it holds.
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let s = Session::new(Token::generate(), "t", "/w", "h", "hub");
    let early = QueuedReply::new("early".into(), vec![], false);
    store
        .t()
        .unwrap()
        .replies
        .insert(key(&s.token, 1 << 40), encode(&early))
        .unwrap();
    let (a, b) = (
        QueuedReply::new("a".into(), vec![], false),
        QueuedReply::new("b".into(), vec![], false),
    );
    let mut w = Write::new();
    w.session(&s)
        .enqueue(&s.token, a.clone())
        .enqueue(&s.token, b.clone());
    store.apply(&w).unwrap();
    let ids: Vec<String> = store
        .queued_replies(&s.token)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, vec![early.id, a.id, b.id]);
}

#[test]
fn the_manifest_counts_sessions_and_replies_and_a_missing_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let s = Session::new(Token::generate(), "t", "/w", "h", "hub");
    let r = QueuedReply::new("r".into(), vec![], false);
    let mut w = Write::new();
    // The same session twice in one write counts once.
    w.session(&s).session(&s).enqueue(&s.token, r.clone());
    store.apply(&w).unwrap();
    let mut w = Write::new();
    w.session(&s).dequeue(&s.token, &r.id);
    store.apply(&w).unwrap();
    let m = *store.writing.lock().unwrap();
    assert_eq!((m.generation, m.sessions, m.replies), (2, 1, 0));
    store.flush_blocking().unwrap();
    // A session lost behind the manifest's back: the next open refuses.
    store
        .t()
        .unwrap()
        .summaries
        .remove(s.token.to_raw())
        .unwrap();
    store.flush_blocking().unwrap();
    drop(store);
    match reopen(dir.path()) {
        Err(StoreError::Corrupt { detail, .. }) => {
            assert!(detail.contains("holds 0 sessions"), "{detail}")
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a store missing a session opened"),
    }
}

#[test]
fn a_store_behind_its_witness_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let s = Session::new(Token::generate(), "t", "/w", "h", "hub");
    let mut w = Write::new();
    w.session(&s);
    store.apply(&w).unwrap();
    store.flush_blocking().unwrap();
    drop(store);
    // As if the disk had confirmed writes this store no longer has.
    manifest::witness(dir.path(), 5);
    match reopen(dir.path()) {
        Err(StoreError::Corrupt { detail, .. }) => {
            assert!(
                detail.contains("lacks 4 of the writes the disk confirmed"),
                "{detail}"
            )
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a store behind its witness opened"),
    }
}

#[test]
fn a_panic_while_opening_is_caught_quietly() {
    let caught = open::quiet_panics(|| -> u32 { panic!("sled read a damaged page\nmore") });
    assert_eq!(
        caught,
        Err(open::Panicked("sled read a damaged page".to_owned()))
    );
    assert_eq!(open::quiet_panics(|| 7), Ok(7));
}

#[test]
fn a_reopened_store_has_what_was_flushed_and_takes_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let s = Session::new(Token::generate(), "t", "/w", "h", "hub");
    let mut w = Write::new();
    w.session(&s).message(&s.token, 0, msg(0));
    store.apply(&w).unwrap();
    store.flush_blocking().unwrap();
    let _ = store.write_failed("No space left on device");
    assert!(matches!(store.state(), StoreState::Failing { .. }));
    // Failing: writes are refused without asking sled.
    let mut w = Write::new();
    w.message(&s.token, 1, msg(1));
    assert!(matches!(store.apply(&w), Err(StoreError::Io(_))));
    store.reopen().unwrap();
    // Reopened, still refusing until its keeper reloaded what it keeps.
    assert!(store.apply(&w).is_err());
    store.healed();
    assert_eq!(store.state(), StoreState::Ok);
    assert_eq!(store.session(&s.token).unwrap(), Some(s.clone()));
    store.apply(&w).unwrap();
    store.flush_blocking().unwrap();
    assert_eq!(store.messages(&s.token, None, 10).unwrap().len(), 2);
}

#[test]
fn an_upgrade_is_backed_up_first_and_the_backup_verifies() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("db");
    let s = Session::new(Token::generate(), "a", "/w", "h", "hub");
    write_old_version(
        &dir,
        2,
        std::slice::from_ref(&s),
        &[],
        &[(&s.token, vec![msg(0), msg(1)])],
    );
    let store = reopen(&dir).unwrap();
    assert_history(&store, &s.token, &[msg(0), msg(1)]);
    let backups: Vec<_> = std::fs::read_dir(backups_dir(home.path()))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    // The backup holds the store as it was before the upgrade.
    let old = sled_open(&backups[0]);
    let version = old
        .open_tree("meta")
        .unwrap()
        .get("schema_version")
        .unwrap();
    assert_eq!(version.unwrap().as_ref(), &2u32.to_be_bytes());
    assert_eq!(old.open_tree(LEGACY_MESSAGES).unwrap().len(), 2);
    drop(old);
    let checked = verify(&backups[0]).unwrap();
    assert_eq!(
        (checked.sessions, checked.messages, checked.older_schema),
        (1, 2, Some(2))
    );
    // Verifying it left it as it was, not upgraded.
    let old = sled_open(&backups[0]);
    assert_eq!(old.open_tree(LEGACY_MESSAGES).unwrap().len(), 2);
}

#[test]
fn a_torn_witness_is_not_trusted_and_a_whole_one_is_rewritten_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    let s = Session::new(Token::generate(), "t", "/w", "h", "hub");
    let mut w = Write::new();
    w.session(&s);
    store.apply(&w).unwrap();
    store.flush_blocking().unwrap();
    store.apply(&w).unwrap();
    store.flush_blocking().unwrap();
    let noted = std::fs::read_to_string(dir.path().join("holdline-generation")).unwrap();
    assert!(noted.starts_with("00000000000000000002 "), "{noted:?}");
    drop(store);
    // A power cut tore it: a number far ahead, its check wrong. Not a refusal.
    std::fs::write(
        dir.path().join("holdline-generation"),
        "00000000000000000999 00000000000000000001\n",
    )
    .unwrap();
    let store = reopen(dir.path()).unwrap();
    assert_eq!(store.session(&s.token).unwrap().unwrap().token, s.token);
}

#[test]
fn manual_backups_never_rotate_out_the_daily_ones() {
    let home = tempfile::tempdir().unwrap();
    let store = Store::open(&home.path().join("db"), 1 << 20).unwrap();
    let backups = backups_dir(home.path());
    // Seven dailies of last week, then many backups asked for by hand.
    for day in 1..=7 {
        std::fs::create_dir_all(backups.join(format!("store-2026010{day}T000000Z-daily"))).unwrap();
    }
    assert!(store.newest_daily_backup_age().is_some());
    for i in 0..9 {
        std::fs::create_dir_all(backups.join(format!("store-2026011{i}T000000Z"))).unwrap();
    }
    store.backup().unwrap();
    let names: Vec<String> = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let dailies = names.iter().filter(|n| n.ends_with("-daily")).count();
    assert_eq!(dailies, 7, "{names:?}");
    assert_eq!(names.len() - dailies, backup::KEPT, "{names:?}");
    // The daily one counts dailies only: a manual backup does not postpone it.
    std::fs::remove_dir_all(&backups).unwrap();
    store.backup().unwrap();
    assert!(store.newest_daily_backup_age().is_none());
    let daily = store.daily_backup().unwrap();
    assert!(daily.path.to_string_lossy().ends_with("-daily"));
    assert!(store.newest_daily_backup_age().is_some());
    assert!(verify(&daily.path).is_ok());
}

/// A version-3 store kept each file's bytes in the `attachments` tree by id: at
/// open they become files beside sled, stored once by content, each counted
/// for the owner of the session whose message carries it; the tree goes.
#[test]
fn a_version_3_store_gets_its_files_out_of_sled_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::new(Token::generate(), "a", "/w", "h", "hub");
    s.owner = Some(crate::names::KeyName::parse("laptop").unwrap());
    let file = |id: &str, size: u64| crate::session::AttachmentRef {
        id: id.into(),
        name: "shot.png".into(),
        mime_type: "image/png".into(),
        size,
        released: false,
    };
    let (one, two) = (
        crate::session::AttachmentRef::new_id(),
        crate::session::AttachmentRef::new_id(),
    );
    let bytes = b"the same bytes twice".to_vec();
    {
        let store = reopen(dir.path()).unwrap();
        let mut m = msg(0);
        m.attachments = vec![
            file(&one, bytes.len() as u64),
            file(&two, bytes.len() as u64),
        ];
        let mut w = Write::new();
        w.session(&s).message(&s.token, 0, m);
        store.apply(&w).unwrap();
        store.flush_blocking().unwrap();
    }
    {
        // What a version-3 build wrote beside the message.
        let db = sled_open(dir.path());
        let old = db.open_tree(files::LEGACY_TREE).unwrap();
        old.insert(one.as_bytes(), bytes.as_slice()).unwrap();
        old.insert(two.as_bytes(), bytes.as_slice()).unwrap();
        db.open_tree("meta")
            .unwrap()
            .insert("schema_version", &3u32.to_be_bytes())
            .unwrap();
        db.flush().unwrap();
    }

    let store = reopen(dir.path()).unwrap();
    assert_eq!(store.attachment(&one).unwrap().unwrap(), bytes);
    assert_eq!(store.attachment(&two).unwrap().unwrap(), bytes);
    let record = store.file_record(&one).unwrap().unwrap();
    assert_eq!(record.owner.as_deref(), Some("laptop"));
    assert_eq!(record.token, s.token.to_string());
    let (owners, total) = store.file_usage();
    assert_eq!(
        total,
        Usage {
            files: 1,
            bytes: bytes.len() as u64
        }
    );
    assert_eq!(owners, vec![(Some("laptop".to_owned()), total)]);
    let on_disk = std::fs::read_dir(dir.path().join(files::FOLDER))
        .unwrap()
        .count();
    assert_eq!(on_disk, 1, "stored once");
    let t = store.t().unwrap();
    assert!(
        !t.db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == files::LEGACY_TREE.as_bytes())
    );
    let version = t.meta.get("schema_version").unwrap().unwrap();
    assert_eq!(version.as_ref(), &SCHEMA_VERSION.to_be_bytes());
    drop(t);
    drop(store);
    // verify knows the files: one gone missing is damage.
    std::fs::remove_dir_all(dir.path().join(files::FOLDER)).unwrap();
    let err = super::verify(dir.path()).unwrap_err().to_string();
    assert!(err.contains("missing"), "{err}");
}

/// A write that asks for the quota is refused whole past it, and counts a file
/// its owner already holds once.
#[test]
fn the_quota_is_checked_in_the_write_that_would_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path()).unwrap();
    store.set_file_quota(Quota {
        per_owner: 100,
        total: 150,
    });
    let s = Session::new(Token::generate(), "a", "/w", "h", "hub");
    let record = |staged: &Staged, owner: Option<&str>| FileRecord {
        sha: staged.sha.clone(),
        size: staged.size,
        owner: owner.map(str::to_owned),
        token: s.token.to_string(),
        request: "q".into(),
        at: 0,
    };
    let a = store.stage_file(&[1; 60]).unwrap();
    let b = store.stage_file(&[2; 60]).unwrap();
    let mut w = Write::new();
    w.session(&s)
        .attachment("at_1", record(&a, None))
        .attachment("at_2", record(&a, None));
    w.within_quota();
    store.apply(&w).unwrap();
    let mut over = Write::new();
    over.session(&s)
        .attachment("at_3", record(&b, None))
        .within_quota();
    assert!(matches!(
        store.apply(&over),
        Err(StoreError::Quota(QuotaExceeded::Owner { .. }))
    ));
    assert!(store.file_record("at_3").unwrap().is_none());
    let mut other = Write::new();
    other
        .attachment("at_4", record(&b, Some("k")))
        .within_quota();
    store.apply(&other).unwrap();
    let mut total = Write::new();
    let c = store.stage_file(&[3; 60]).unwrap();
    total
        .attachment("at_5", record(&c, Some("j")))
        .within_quota();
    assert!(matches!(
        store.apply(&total),
        Err(StoreError::Quota(QuotaExceeded::Total { .. }))
    ));
    assert_eq!(
        store.file_usage().1,
        Usage {
            files: 2,
            bytes: 120
        }
    );
    // Released and swept: the unnamed file `c` goes, and `a` once nothing names it.
    drop((a, c));
    let mut release = Write::new();
    release.release("at_1").release("at_2");
    store.apply(&release).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let freed = rt.block_on(store.sweep_files()).unwrap();
    assert_eq!(freed, 120);
    assert_eq!(
        store.file_usage().1,
        Usage {
            files: 1,
            bytes: 60
        }
    );
}

/// A backup carries the files its records name, and verifies; one without them does not.
#[test]
fn a_backup_carries_the_attachments_files() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("db");
    let store = reopen(&db).unwrap();
    let s = Session::new(Token::generate(), "a", "/w", "h", "hub");
    let staged = store.stage_file(b"a screenshot").unwrap();
    let mut w = Write::new();
    w.session(&s).attachment(
        "at_1",
        FileRecord {
            sha: staged.sha.clone(),
            size: staged.size,
            owner: None,
            token: s.token.to_string(),
            request: "q".into(),
            at: 0,
        },
    );
    store.apply(&w).unwrap();
    store.flush_blocking().unwrap();
    let backup = store.backup().unwrap();
    let copied = backup.path.join(files::FOLDER).join(&staged.sha);
    assert_eq!(std::fs::read(&copied).unwrap(), b"a screenshot");
    assert!(super::verify(&backup.path).is_ok());
    std::fs::remove_file(&copied).unwrap();
    assert!(super::verify(&backup.path).is_err());
}
