//! What a reading makes of what it reads: the values themselves ([`Build`]), or only their
//! fingerprints ([`Fingerprints`]), with no allocation per value. The reader's steps are the same
//! either way, so a scan ends where the reading ends and is cut off where it is cut off.
//!
//! A fingerprint is a 64-bit hash of a value: equal values have equal fingerprints, so two readings
//! with different fingerprints hold different values. An object whose keys hash alike (a key given
//! twice, which the reading overwrites) has none: only its value can say what it equals.

use serde_json::{Map, Value};

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

/// An object being made: its members in the order read, each key once, a later member with a
/// key already given replacing the earlier one's value as [`Map::insert`] does. serde_json's map
/// is a B-tree of keys and values: inserting forty thousand members one at a time compared keys
/// all the way down for each, and read "many keys" at half the speed of strict JSON. Here the
/// first few are looked through for the key; past [`Entries::FEW`] a table of the keys' 64-bit
/// hashes finds an earlier member, and the map is built once, at the end, from the members
/// sorted. The hash is no secret, so an answer can be made whose keys' hashes crowd one part of
/// the table: a look that has to pass [`Entries::MAX_PROBE`] members stops using the table, and
/// the object's keys are then found by name in a tree (what inserting into the map cost before).
#[derive(Debug, Default)]
pub(super) struct Entries {
    items: Vec<(String, Value)>,
    /// Each member's key's hash, past the first few.
    hashes: Vec<u64>,
    /// Open addressing over the hashes: 0 for an empty slot, else a member's place + 1. Its
    /// length is a power of two, at least twice the members.
    slots: Vec<u32>,
    /// Once a look ran too long: each key to its member's place (serde_json's own map, whose
    /// code the package holds already).
    named: Option<Map<String, Value>>,
}

impl Entries {
    const FEW: usize = 8;
    /// The most members a look passes: a bound on each insert's cost whatever the hashes. At
    /// half load the ordinary clusters of 40,000 keys passed 32, so it is well above that.
    const MAX_PROBE: usize = 128;
    /// The table's first length (a power of two), when the first few are put in it.
    const FIRST_SLOTS: usize = (Self::FEW * 4).next_power_of_two();

    fn insert(&mut self, k: String, v: Value) {
        let n = self.items.len();
        let found = if n < Self::FEW {
            self.items.iter().position(|e| e.0 == k)
        } else {
            if self.hashes.len() < n {
                // The first few, into the table.
                self.hashes = self
                    .items
                    .iter()
                    .map(|e| StrHash::of(&e.0).finish())
                    .collect();
                self.rebuild(Self::FIRST_SLOTS);
            }
            self.find_or_note(&k, n)
        };
        match found.and_then(|i| self.items.get_mut(i)) {
            Some(e) => e.1 = v,
            None => self.items.push((k, v)),
        }
    }

    /// The member whose key is `k`; or `None`, having noted that member `n` will have it.
    fn find_or_note(&mut self, k: &str, n: usize) -> Option<usize> {
        let h = StrHash::of(k).finish();
        if self.named.is_none() && (self.hashes.len() + 1) * 2 > self.slots.len() {
            self.rebuild(self.slots.len() * 2);
        }
        if self.named.is_none() {
            match self.probe(k, h) {
                Ok(found) => {
                    if found.is_none() {
                        self.hashes.push(h);
                    }
                    return found;
                }
                Err(()) => self.name_all(),
            }
        }
        let named = self.named.get_or_insert_with(Map::new);
        if let Some(j) = named.get(k).and_then(Value::as_u64) {
            return usize::try_from(j).ok();
        }
        named.insert(k.to_string(), Value::from(n));
        self.hashes.push(h);
        None
    }

    /// Looks for `k` (hash `h`) in the table; when it is not there, takes the empty slot found
    /// for the member about to be added. `Err` when the look passed too many members.
    fn probe(&mut self, k: &str, h: u64) -> Result<Option<usize>, ()> {
        let mask = self.slots.len() - 1;
        #[allow(clippy::cast_possible_truncation)]
        let mut at = (h as usize) & mask;
        for _ in 0..Self::MAX_PROBE {
            let slot = self.slots[at];
            if slot == 0 {
                self.slots[at] = u32::try_from(self.items.len() + 1).map_err(|_| ())?;
                return Ok(None);
            }
            let i = slot as usize - 1;
            if self.hashes.get(i) == Some(&h) && self.items.get(i).is_some_and(|e| e.0 == k) {
                return Ok(Some(i));
            }
            at = (at + 1) & mask;
        }
        Err(())
    }

    /// A table of `len` slots (a power of two) for the members so far; past a look too long,
    /// the keys are named instead.
    fn rebuild(&mut self, len: usize) {
        let len = len.max(Self::FIRST_SLOTS);
        self.slots = vec![0; len];
        let mask = len - 1;
        for (i, &h) in self.hashes.iter().enumerate() {
            #[allow(clippy::cast_possible_truncation)]
            let mut at = (h as usize) & mask;
            let mut steps = 0;
            while self.slots[at] != 0 {
                steps += 1;
                if steps >= Self::MAX_PROBE {
                    self.name_all();
                    return;
                }
                at = (at + 1) & mask;
            }
            self.slots[at] = u32::try_from(i + 1).unwrap_or(u32::MAX);
        }
    }

    /// Stops using the table: every key so far, to its member's place.
    fn name_all(&mut self) {
        let mut named = Map::new();
        for (i, (k, _)) in self.items.iter().enumerate() {
            named.insert(k.clone(), Value::from(i));
        }
        self.named = Some(named);
        self.slots = Vec::new();
    }

    /// The map of the members.
    fn into_map(self) -> Map<String, Value> {
        if self.items.len() <= Self::FEW {
            let mut m = Map::new();
            for (k, v) in self.items {
                m.insert(k, v);
            }
            m
        } else {
            // Sorted, then built in one pass (each key is there once).
            self.items.into_iter().collect()
        }
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

    /// The inverse of an odd `m` modulo 2^64 (Newton's iteration).
    fn inverse(m: u64) -> u64 {
        let mut x = m;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(x)));
        }
        x
    }

    fn unshift(x: u64, s: u32) -> u64 {
        let mut y = x;
        for _ in 0..(64 / s + 1) {
            y = x ^ (y >> s);
        }
        y
    }

    /// The inverse of [`mix`].
    fn unmix(x: u64) -> u64 {
        let x = unshift(x, 31).wrapping_mul(inverse(0x94D0_49BB_1331_11EB));
        let x = unshift(x, 27).wrapping_mul(inverse(0xBF58_476D_1CE4_E5B9));
        unshift(x, 30)
    }

    /// `count` keys of 16 printable bytes whose hash is `target`, as an answer can be made to
    /// hold (the hash has no secret).
    fn keys_hashing_to(target: u64, count: usize) -> Vec<String> {
        let ki = inverse(K);
        let raw = unmix(target);
        let x = ((raw.wrapping_mul(ki)) ^ 16).rotate_right(23);
        let h2 = x.wrapping_mul(ki).rotate_right(23);
        let mut out = Vec::new();
        let mut seed = 0u64;
        while out.len() < count {
            seed += 1;
            let mut w1 = [0u8; 8];
            let mut s = seed;
            for b in &mut w1 {
                *b = b'a' + u8::try_from(s % 26).unwrap_or(0);
                s /= 26;
            }
            let h1 = absorb(0, u64::from_le_bytes(w1));
            let w2 = (h2.wrapping_mul(ki) ^ h1.rotate_left(23)).to_le_bytes();
            if w2
                .iter()
                .all(|&c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\')
            {
                let key: Vec<u8> = w1.iter().chain(w2.iter()).copied().collect();
                out.push(String::from_utf8(key).unwrap_or_default());
            }
        }
        out
    }

    /// Keys made to share one hash, each given five times after eight others: each is held
    /// once, found through the table while they are few and by name once they crowd it, and the
    /// reading is serde_json's.
    #[test]
    fn keys_made_to_share_one_hash_are_each_held_once() {
        let target = StrHash::of("k0").finish();
        for (count, named) in [(10, false), (Entries::MAX_PROBE + 50, true)] {
            let keys = keys_hashing_to(target, count);
            assert!(keys.iter().all(|k| StrHash::of(k).finish() == target));
            let mut e = Entries::default();
            for i in 0..8 {
                e.insert(format!("f{i}"), Value::from(i));
            }
            e.insert("k0".into(), Value::from(0));
            for round in 0..5 {
                for (i, k) in keys.iter().enumerate() {
                    e.insert(k.clone(), Value::from(round * 1000 + i));
                    // Every member's hash is kept, in the table or by name: a member without
                    // one would make the next insert hash every key again.
                    assert_eq!(e.hashes.len(), e.items.len());
                }
            }
            assert_eq!(e.items.len(), 9 + count, "each key is held once");
            assert_eq!(e.named.is_some(), named, "{count} keys");
            let m = e.into_map();
            assert_eq!(
                m.get(&keys[count - 1]),
                Some(&Value::from(4000 + count - 1))
            );
            let members: Vec<String> = (0..2)
                .flat_map(|round| {
                    keys.iter()
                        .enumerate()
                        .map(move |(i, k)| format!("\"{k}\": {}", round * 1000 + i))
                })
                .collect();
            let text = format!("{{\"k0\": 0, {}}}", members.join(", "));
            let strict: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            assert_eq!(super::super::read(&text, 0).map(|r| r.value), Some(strict));
        }
    }

    /// A table made again whose members crowd one part of it stops being used, and every key
    /// so far is found by name.
    #[test]
    fn a_crowded_table_made_again_names_every_key() {
        let mut e = Entries::default();
        let n = Entries::MAX_PROBE + 10;
        for i in 0..n {
            e.items.push((format!("k{i}"), Value::from(i)));
            e.hashes.push(7);
        }
        e.rebuild(n.next_power_of_two() * 2);
        assert!(e.named.is_some());
        e.insert("k3".into(), Value::from(-1));
        e.insert("new".into(), Value::from(1));
        assert_eq!(e.items.len(), n + 1);
        assert_eq!(e.into_map().get("k3"), Some(&Value::from(-1)));
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
