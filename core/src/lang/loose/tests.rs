use super::*;
use proptest::prelude::*;
use serde_json::json;

fn v(t: &str) -> Value {
    read(t, 0).map(|r| r.value).unwrap_or(Value::Null)
}

#[test]
fn repairs_what_models_write() {
    assert_eq!(
        v("{a: 1, 'b': 'x', \"c\": [1, 2,],}"),
        json!({"a": 1, "b": "x", "c": [1, 2]})
    );
    assert_eq!(v("{\"a\": [1, 2"), json!({"a": [1, 2]}));
    assert_eq!(v("{\"a\": \"x // y\" // note\n}"), json!({"a": "x // y"}));
    assert_eq!(
        v("{\"a\": True, \"b\": None}"),
        json!({"a": true, "b": null})
    );
    assert_eq!(
        v("{\"a\": \"he said \"hi\", and left\", \"b\": 1}"),
        json!({"a": "he said \"hi\", and left", "b": 1})
    );
    assert_eq!(v("[\"\\u00e9\\ud83d\\ude00\"]"), json!(["é😀"]));
}

#[test]
fn deep_nesting_stops() {
    assert!(read(&"[".repeat(MAX_DEPTH + 1), 0).is_none());
    assert!(read(&"[".repeat(MAX_DEPTH), 0).is_some());
    // Far deeper than any call stack: still a clear `None`.
    assert!(read(&"{\"a\":[".repeat(200_000), 0).is_none());
}

#[test]
fn a_long_comment_of_wide_characters_in_a_look_ahead_is_read() {
    // The look-ahead stops inside the comment, in the middle of a character.
    for pad in 0..4 {
        let t = format!("[\"a\",{} //{}\n]", " ".repeat(pad), "é".repeat(200));
        assert!(read(&t, 0).is_some(), "{pad}");
    }
}

#[test]
fn line_breaks_after_unquoted_text_are_read_in_linear_time() {
    // Each line break looks ahead over the rest of the run: measured once, not once per break.
    let t = format!("{{a: x{}", "\n".repeat(400_000));
    let r = read(&t, 0);
    assert_eq!(r.map(|r| r.value), Some(json!({"a": "x"})));
}

/// What a scan from `start` says, against what [`read`] reads from there.
fn agrees(t: &str, start: usize, scanned: Option<Scanned>) -> Result<(), TestCaseError> {
    let r = read(t, start);
    prop_assert_eq!(scanned.is_some(), r.is_some(), "{:?} from {}", t, start);
    if let (Some(s), Some(r)) = (scanned, r) {
        prop_assert_eq!(s.end, r.end, "{:?} from {}", t, start);
        prop_assert_eq!(s.truncated, r.truncated, "{:?} from {}", t, start);
        let kind = match r.value {
            Value::Object(_) => Kind::Object,
            Value::Array(_) => Kind::List,
            _ => Kind::Scalar,
        };
        prop_assert_eq!(s.kind, kind, "{:?} from {}", t, start);
        if let Some(fp) = s.fp {
            prop_assert_eq!(Some(fp), fingerprint(&r.value), "{:?} from {}", t, start);
        }
    }
    Ok(())
}

/// Text made of what the reader's decisions turn on.
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => "[{}\\[\\]\",: a\n'/*\\\\1t-]",
        1 => Just("true".to_string()),
        1 => Just("\"\"\"".to_string()),
        1 => Just("//".to_string()),
        1 => Just("é".to_string()),
        1 => (1usize..120).prop_map(|n| "[".repeat(n)),
        1 => (1usize..120).prop_map(|n| "{\"a\":".repeat(n)),
        1 => (1usize..60).prop_map(|n| "]}".repeat(n)),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

/// Short text of the tokens the reader's decisions turn on.
fn dense() -> impl Strategy<Value = String> {
    let token = proptest::sample::select(vec![
        "{", "}", "[", "]", "\"a\"", "\"", ",", ":", " ", "a", "\n", "'", "//", "/*", "*/", "true",
        "1", "\\",
    ]);
    proptest::collection::vec(token, 0..16).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A scan ends where the reading ends, is cut off where it is, and fingerprints its value.
    #[test]
    fn a_scan_finds_what_the_reading_reads(t in hostile()) {
        let mut sc = Scanner::new(&t);
        for start in 0..=t.len() {
            if t.is_char_boundary(start) {
                agrees(&t, start, sc.scan(start))?;
            }
        }
    }

    /// What a scan cut off by the end says of the values inside it that the end cut off is what
    /// a scan from each of their starts finds (the window it looked at included), and so what
    /// the reading from there reads.
    #[test]
    fn values_cut_off_inside_a_cut_off_value_are_what_their_own_scans_find(
        t in prop_oneof![hostile(), dense()],
    ) {
        let mut sc = Scanner::new(&t);
        for start in t.match_indices(['{', '[']).map(|(i, _)| i) {
            if sc.scan(start).is_none() {
                continue;
            }
            for (inner, known) in sc.cut_inside() {
                let own = Scanner::new(&t).scan(inner);
                prop_assert_eq!(Some(known), own, "{:?} from {} inside {}", t, inner, start);
                agrees(&t, inner, Some(known))?;
            }
        }
    }

    /// A scan that went too deep, taken on from its next value in, is the reading from there.
    #[test]
    fn a_deep_scan_goes_on_as_the_reading_from_the_next_value_in(t in hostile()) {
        let mut sc = Scanner::new(&t);
        for start in t.match_indices(['{', '[']).map(|(i, _)| i) {
            if sc.scan(start).is_some() {
                continue;
            }
            while let Some(next) = sc.next_in() {
                let resumed = sc.resume();
                agrees(&t, next, resumed)?;
            }
        }
    }
}

/// `t` with what follows byte `seen` replaced by `tail` (kept up to a character boundary).
fn past(t: &str, seen: usize, tail: &str) -> Option<String> {
    let mut cut = seen + 1;
    if cut >= t.len() {
        return None;
    }
    while !t.is_char_boundary(cut) {
        cut += 1;
    }
    Some(format!("{}{tail}", &t[..cut]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A reading is a function of the bytes up to the furthest one its scan looked at: whatever
    /// follows, the reading is the same (so two readings of the same bytes hold the same value).
    #[test]
    fn a_reading_does_not_depend_on_what_its_scan_did_not_look_at(
        t in prop_oneof![hostile(), dense()],
        tail in prop_oneof![hostile(), dense()],
    ) {
        let mut sc = Scanner::new(&t);
        for start in t.match_indices(['{', '[']).map(|(i, _)| i).chain([0]) {
            let Some(s) = sc.scan(start) else { continue };
            if let Some(other) = past(&t, s.seen, &tail) {
                prop_assert_eq!(read(&t, start), read(&other, start), "{:?} / {:?} from {}", t, other, start);
            }
        }
    }
}

#[test]
fn each_look_ahead_marks_how_far_it_looked() {
    // (text, what then follows): the reading from 0 must not change, or must have looked.
    let cases = [
        // A quoted key looked for after a comma, not closed before the end.
        ("{\"a\": \"x\", \"} jj", "\": 1}"),
        ("[{\"a\": \"x\", \"} jj", "\": 1}]"),
        // An unquoted key looked for.
        ("{\"a\": \"x\", b", ": 1}"),
        // A comment looked into.
        ("{\"a\": \"x\" /* c", " */, \"b\": 1}"),
        ("[\"x\", tr", "ue]"),
        ("[\"\\ud83d", "\\ude00\"]"),
        ("[\"", "\"\"x\"\"\"]"),
        ("{a: x,", " b: 1}"),
        ("{a: x\n", "b: 1}"),
    ];
    for (t, tail) in cases {
        let mut sc = Scanner::new(t);
        let Some(s) = sc.scan(0) else { continue };
        if let Some(other) = past(t, s.seen, tail) {
            assert_eq!(read(t, 0), read(&other, 0), "{t:?} / {other:?}");
        }
    }
}

/// Strict JSON objects whose keys repeat, the keys drawn from a few or from many, nested.
fn objects_with_repeated_keys() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        (0u8..3).prop_map(|i| format!("k{i}")),
        (0u16..40).prop_map(|i| format!("k{i}")),
        Just("K1".to_string()),
    ];
    let leaf = prop_oneof![
        (0u32..5).prop_map(|n| n.to_string()),
        Just("\"x\"".to_string())
    ];
    leaf.prop_recursive(3, 200, 60, move |inner| {
        proptest::collection::vec((key.clone(), inner), 0..60).prop_map(|entries| {
            let body = entries
                .iter()
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{{{body}}}")
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// On strict JSON the reading is serde_json's: a key given again replaces the earlier
    /// value, whatever the number of keys (the few looked through, the many kept and sorted).
    #[test]
    fn a_key_given_again_replaces_the_earlier_value(t in objects_with_repeated_keys()) {
        let strict: Value = serde_json::from_str(&t).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(read(&t, 0).map(|r| r.value), Some(strict), "{}", t);
    }
}

#[test]
fn the_last_of_a_key_given_past_the_first_few_is_kept() {
    let keys = (0..12)
        .map(|i| format!("\"k{i}\": {i}"))
        .collect::<Vec<_>>();
    let t = format!(
        "{{{}, \"k3\": \"again\", \"k11\": \"again\"}}",
        keys.join(", ")
    );
    let v = read(&t, 0).map(|r| r.value).unwrap_or(Value::Null);
    assert_eq!(v["k3"], json!("again"));
    assert_eq!(v["k11"], json!("again"));
    assert_eq!(v.as_object().map(serde_json::Map::len), Some(12));
}
