//! What a reading makes of what it reads: the values themselves ([`Build`]), or only their
//! fingerprints ([`Fingerprints`]), with no allocation per value. The reader's steps are the same
//! either way, so a scan ends where the reading ends and is cut off where it is cut off.
//!
//! A fingerprint is a 64-bit hash of a value: equal values have equal fingerprints, so two readings
//! with different fingerprints hold different values. An object whose keys hash alike (a key given
//! twice, which the reading overwrites) has none: only its value can say what it equals.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// How a reading keeps what it reads.
pub(super) trait Sink {
    /// A value read.
    type Val: Clone;
    /// A string being read.
    type Str: Default;
    /// An object being read.
    type Obj;
    /// A list being read.
    type List;
    /// Whether the reading names its repairs.
    const NOTES: bool;
    /// Whether the reading keeps the values the end of the text cut off (a scan does).
    const CUT: bool;

    fn push_str(s: &mut Self::Str, t: &str);
    fn push_char(s: &mut Self::Str, c: char);
    /// The key as a repair names it (only when [`Sink::NOTES`]).
    fn show(s: &Self::Str) -> String;
    fn string(&mut self, s: Self::Str) -> Self::Val;
    fn text(&mut self, t: &str) -> Self::Val;
    /// `null`, a boolean or a number.
    fn literal(&mut self, v: Value) -> Self::Val;
    fn object(&mut self) -> Self::Obj;
    fn insert(&mut self, o: &mut Self::Obj, k: Self::Str, v: Self::Val);
    fn object_end(&mut self, o: Self::Obj) -> Self::Val;
    fn list(&mut self) -> Self::List;
    fn push(&mut self, l: &mut Self::List, v: Self::Val);
    fn list_end(&mut self, l: Self::List) -> Self::Val;
}

/// An object being made: its entries in the order read, a later one with a key already given
/// replacing it as [`Map::insert`] does. serde_json's map is a B-tree: inserting forty thousand
/// keys one at a time walked the tree for each, and read "many keys" at half the speed of strict
/// JSON. A few entries are looked through for the key; past [`Entries::FEW`], a table of the
/// keys' hashes finds an earlier entry with the key, and the map is built once, at the end, from
/// the entries sorted.
#[derive(Debug, Default)]
pub(super) struct Entries {
    items: Vec<(String, Value)>,
    /// The hash of each entry's key past the first few, to the entry.
    index: HashMap<u64, usize, BuildHasherDefault<Prehashed>>,
}

impl Entries {
    const FEW: usize = 8;

    fn insert(&mut self, k: String, v: Value) {
        let n = self.items.len();
        if n < Self::FEW {
            if let Some(e) = self.items.iter_mut().find(|e| e.0 == k) {
                e.1 = v;
                return;
            }
        } else {
            if n == Self::FEW {
                for (i, (key, _)) in self.items.iter().enumerate() {
                    self.index.insert(StrHash::of(key).finish(), i);
                }
            }
            let h = StrHash::of(&k).finish();
            if let Some(e) = self.index.get(&h).and_then(|&i| self.items.get_mut(i)) {
                if e.0 == k {
                    e.1 = v;
                    return;
                }
            }
            // A new key (or another key with the same hash: the map keeps the last of equal
            // keys whatever the table says).
            self.index.insert(h, n);
        }
        self.items.push((k, v));
    }

    /// The map of the entries, for equal keys the last one read.
    fn into_map(self) -> Map<String, Value> {
        if self.items.len() <= Self::FEW {
            let mut m = Map::new();
            for (k, v) in self.items {
                m.insert(k, v);
            }
            m
        } else {
            // Sorted stably, then built in one pass that keeps the last of equal keys.
            self.items.into_iter().collect()
        }
    }
}

/// A hasher for keys that are hashes already ([`StrHash::finish`]).
#[derive(Debug, Default)]
pub(super) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = absorb(self.0, u64::from(b));
        }
    }
    fn write_u64(&mut self, h: u64) {
        self.0 = h;
    }
}

/// Makes the values.
#[derive(Debug, Default)]
pub(super) struct Build;

impl Sink for Build {
    type Val = Value;
    type Str = String;
    type Obj = Entries;
    type List = Vec<Value>;
    const NOTES: bool = true;
    const CUT: bool = false;

    fn push_str(s: &mut String, t: &str) {
        s.push_str(t);
    }
    fn push_char(s: &mut String, c: char) {
        s.push(c);
    }
    fn show(s: &String) -> String {
        format!("{s:?}")
    }
    fn string(&mut self, s: String) -> Value {
        Value::String(s)
    }
    fn text(&mut self, t: &str) -> Value {
        Value::String(t.to_string())
    }
    fn literal(&mut self, v: Value) -> Value {
        v
    }
    fn object(&mut self) -> Entries {
        Entries::default()
    }
    fn insert(&mut self, o: &mut Entries, k: String, v: Value) {
        o.insert(k, v);
    }
    fn object_end(&mut self, o: Entries) -> Value {
        Value::Object(o.into_map())
    }
    fn list(&mut self) -> Vec<Value> {
        Vec::new()
    }
    fn push(&mut self, l: &mut Vec<Value>, v: Value) {
        l.push(v);
    }
    fn list_end(&mut self, l: Vec<Value>) -> Value {
        Value::Array(l)
    }
}

/// Keeps fingerprints only. The entries of the objects being read share one stack.
#[derive(Debug, Default)]
pub(super) struct Fingerprints {
    /// (key, value) fingerprints of the open objects, innermost last.
    entries: Vec<(u64, u64)>,
}

impl Fingerprints {
    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }
}

/// An object being fingerprinted: where its entries start, and whether one has no fingerprint.
#[derive(Debug)]
pub(super) struct ObjPrint {
    base: usize,
    unknown: bool,
}

/// A list being fingerprinted: the running hash, the count, and whether an item has none.
#[derive(Debug)]
pub(super) struct ListPrint {
    h: u64,
    n: u64,
    unknown: bool,
}

impl Sink for Fingerprints {
    type Val = Option<u64>;
    type Str = StrHash;
    type Obj = ObjPrint;
    type List = ListPrint;
    const NOTES: bool = false;
    const CUT: bool = true;

    fn push_str(s: &mut StrHash, t: &str) {
        s.push(t.as_bytes());
    }
    fn push_char(s: &mut StrHash, c: char) {
        s.push(c.encode_utf8(&mut [0; 4]).as_bytes());
    }
    fn show(_: &StrHash) -> String {
        String::new()
    }
    fn string(&mut self, s: StrHash) -> Option<u64> {
        Some(of_string(&s))
    }
    fn text(&mut self, t: &str) -> Option<u64> {
        let mut s = StrHash::default();
        s.push(t.as_bytes());
        Some(of_string(&s))
    }
    fn literal(&mut self, v: Value) -> Option<u64> {
        fingerprint(&v)
    }
    fn object(&mut self) -> ObjPrint {
        ObjPrint {
            base: self.entries.len(),
            unknown: false,
        }
    }
    fn insert(&mut self, o: &mut ObjPrint, k: StrHash, v: Option<u64>) {
        match v {
            Some(v) => self.entries.push((k.finish(), v)),
            None => o.unknown = true,
        }
    }
    fn object_end(&mut self, o: ObjPrint) -> Option<u64> {
        let print = match self.entries.get_mut(o.base..) {
            Some(entries) if !o.unknown => of_entries(entries),
            _ => None,
        };
        self.entries.truncate(o.base);
        print
    }
    fn list(&mut self) -> ListPrint {
        ListPrint {
            h: LIST,
            n: 0,
            unknown: false,
        }
    }
    fn push(&mut self, l: &mut ListPrint, v: Option<u64>) {
        match v {
            Some(v) => l.h = absorb(l.h, v),
            None => l.unknown = true,
        }
        l.n += 1;
    }
    fn list_end(&mut self, l: ListPrint) -> Option<u64> {
        (!l.unknown).then(|| mix(absorb(l.h, l.n)))
    }
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;
const NULL: u64 = 1;
const BOOL: u64 = 2;
const UINT: u64 = 3;
const INT: u64 = 4;
const FLOAT: u64 = 5;
const STRING: u64 = 6;
const LIST: u64 = 7;
const OBJECT: u64 = 8;

fn absorb(h: u64, w: u64) -> u64 {
    (h.rotate_left(23) ^ w).wrapping_mul(K)
}

/// The splitmix64 finaliser.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A hash of a string's bytes, fed in pieces: the same whatever the pieces.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct StrHash {
    h: u64,
    /// The bytes of an unfinished 8-byte word, little-endian.
    tail: u64,
    n: u64,
}

impl StrHash {
    fn push(&mut self, mut b: &[u8]) {
        #[allow(clippy::cast_possible_truncation)]
        let fill = (self.n % 8) as usize;
        self.n += b.len() as u64;
        if fill != 0 {
            let take = (8 - fill).min(b.len());
            for (j, &c) in b[..take].iter().enumerate() {
                self.tail |= u64::from(c) << (8 * (fill + j));
            }
            b = &b[take..];
            if fill + take < 8 {
                return;
            }
            self.h = absorb(self.h, self.tail);
            self.tail = 0;
        }
        let mut words = b.chunks_exact(8);
        for w in &mut words {
            let w = [w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]];
            self.h = absorb(self.h, u64::from_le_bytes(w));
        }
        for (j, &c) in words.remainder().iter().enumerate() {
            self.tail |= u64::from(c) << (8 * j);
        }
    }

    /// The hash, not yet mixed.
    fn raw(&self) -> u64 {
        absorb(absorb(self.h, self.tail), self.n)
    }

    fn finish(&self) -> u64 {
        mix(self.raw())
    }

    fn of(s: &str) -> Self {
        let mut h = Self::default();
        h.push(s.as_bytes());
        h
    }
}

fn of_string(s: &StrHash) -> u64 {
    mix(absorb(s.raw(), STRING))
}

/// An object's fingerprint from its (key, value) fingerprints, in any order; none if two keys
/// hash alike.
fn of_entries(entries: &mut [(u64, u64)]) -> Option<u64> {
    entries.sort_unstable();
    if entries.windows(2).any(|w| w[0].0 == w[1].0) {
        return None;
    }
    let h = entries
        .iter()
        .fold(OBJECT, |h, (k, v)| absorb(absorb(h, *k), *v));
    Some(mix(absorb(h, entries.len() as u64)))
}

/// The fingerprint of a value, as a scan of a reading that makes it finds it (`None` only for an
/// object two of whose keys hash alike).
#[must_use]
pub fn fingerprint(v: &Value) -> Option<u64> {
    Some(match v {
        Value::Null => mix(NULL),
        Value::Bool(b) => mix(absorb(BOOL, u64::from(*b))),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                mix(absorb(UINT, u))
            } else if let Some(i) = n.as_i64() {
                #[allow(clippy::cast_sign_loss)]
                mix(absorb(INT, i as u64))
            } else {
                // `-0.0 == 0.0`, as numbers compare.
                let f = n.as_f64().unwrap_or(0.0);
                let f = if f == 0.0 { 0.0 } else { f };
                mix(absorb(FLOAT, f.to_bits()))
            }
        }
        Value::String(s) => of_string(&StrHash::of(s)),
        Value::Array(items) => {
            let mut h = LIST;
            for x in items {
                h = absorb(h, fingerprint(x)?);
            }
            mix(absorb(h, items.len() as u64))
        }
        Value::Object(m) => {
            let mut entries = m
                .iter()
                .map(|(k, x)| Some((StrHash::of(k).finish(), fingerprint(x)?)))
                .collect::<Option<Vec<_>>>()?;
            return of_entries(&mut entries);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_hashes_the_same_whatever_the_pieces() {
        let s = "a string of some length, with é and 😀 in it, longer than a word or two";
        let whole = StrHash::of(s).finish();
        for cut in 0..s.len() {
            for cut2 in cut..s.len() {
                let mut h = StrHash::default();
                h.push(&s.as_bytes()[..cut]);
                h.push(&s.as_bytes()[cut..cut2]);
                h.push(&s.as_bytes()[cut2..]);
                assert_eq!(h.finish(), whole, "{cut} {cut2}");
            }
        }
        assert_ne!(StrHash::of("ab").finish(), StrHash::of("ab\0").finish());
    }

    #[test]
    fn a_key_whose_hash_another_key_has_is_still_kept() {
        let mut e = Entries::default();
        for i in 0..10 {
            e.insert(format!("k{i}"), Value::from(i));
        }
        // The table sends "new" to the entry of "k2", as a hash both keys had would.
        let h = StrHash::of("new").finish();
        e.index.insert(h, 2);
        e.insert("new".into(), Value::from(100));
        e.insert("k2".into(), Value::from(200));
        let m = e.into_map();
        assert_eq!(m.get("new"), Some(&Value::from(100)));
        assert_eq!(m.get("k2"), Some(&Value::from(200)));
        assert_eq!(m.len(), 11);
    }

    #[test]
    fn numbers_print_as_they_compare() {
        let v = |t: &str| serde_json::from_str::<Value>(t).unwrap_or(Value::Null);
        assert_eq!(fingerprint(&v("0.0")), fingerprint(&v("-0.0")));
        assert_ne!(fingerprint(&v("1")), fingerprint(&v("1.0")));
        assert_ne!(fingerprint(&v("[1, 2]")), fingerprint(&v("[2, 1]")));
        assert_eq!(
            fingerprint(&v("{\"a\": 1, \"b\": 2}")),
            fingerprint(&v("{\"b\": 2, \"a\": 1}"))
        );
    }
}
