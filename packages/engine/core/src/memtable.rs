//! A table's changes since its last checkpoint, by key, in key order.
//!
//! Imports usually arrive in key order (sequential ids, a sorted export). In a B-tree every such
//! key is the largest yet: a lookup walks down the right edge comparing it with every key of every
//! node on the way (a 1M-entry `BTreeMap`: ~60 comparisons), and the insert after it walks down
//! again. So keys
//! larger than all before them are appended to a sorted `Vec` instead, where the lookup is one
//! comparison with its last key and the insert a push (RocksDB's memtable insert hint does the
//! same for its skiplist). Keys that arrive out of order go to a `BTreeMap`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;

use crate::doc::Doc;
use crate::key::{Key, KeyRange};

/// An entry's value: a document, or `None` for a delete.
pub(crate) type Entry = Option<Doc>;

#[derive(Default)]
pub(crate) struct Memtable {
    /// Keys that were each larger than every key before them, in order.
    tail: Vec<(Key, Entry)>,
    /// The other keys. Each is smaller than the tail's last key (when it came, and so still), so
    /// a key above the tail's last is in neither.
    body: BTreeMap<Key, Entry>,
}

impl Memtable {
    pub fn len(&self) -> usize {
        self.tail.len() + self.body.len()
    }

    /// The first key always goes to the tail, so the body is empty while the tail is.
    pub fn is_empty(&self) -> bool {
        self.tail.is_empty()
    }

    pub fn get(&self, key: &Key) -> Option<&Entry> {
        let (first, last) = (&self.tail.first()?.0, &self.tail.last()?.0);
        if key > last {
            return None;
        }
        if key >= first {
            if let Ok(i) = self.tail.binary_search_by(|(k, _)| k.cmp(key)) {
                return Some(&self.tail[i].1);
            }
        }
        self.body.get(key)
    }

    /// Sets `key`'s entry; returns the one it replaced.
    pub fn insert(&mut self, key: Key, entry: Entry) -> Option<Entry> {
        match self.tail.last() {
            None => {}
            Some((last, _)) if key > *last => {}
            Some(_) => {
                return match self.tail.binary_search_by(|(k, _)| k.cmp(&key)) {
                    Ok(i) => Some(std::mem::replace(&mut self.tail[i].1, entry)),
                    Err(_) => self.body.insert(key, entry),
                };
            }
        }
        self.tail.push((key, entry));
        None
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        Merge::new(self.tail.iter().map(|(k, e)| (k, e)), self.body.iter(), false)
    }

    /// Entries within `range`, in key order or reversed.
    pub fn range<'a>(&'a self, range: &KeyRange, reverse: bool) -> Box<dyn Iterator<Item = (&'a Key, &'a Entry)> + 'a> {
        let start = match &range.lower {
            Bound::Included(l) => self.tail.partition_point(|(k, _)| k < l),
            Bound::Excluded(l) => self.tail.partition_point(|(k, _)| k <= l),
            Bound::Unbounded => 0,
        };
        let end = match &range.upper {
            Bound::Included(u) => self.tail.partition_point(|(k, _)| k <= u),
            Bound::Excluded(u) => self.tail.partition_point(|(k, _)| k < u),
            Bound::Unbounded => self.tail.len(),
        };
        let tail = self.tail[start..end.max(start)].iter().map(|(k, e)| (k, e));
        let body = self.body.range((range.lower.clone(), range.upper.clone()));
        if reverse {
            Box::new(Merge::new(tail.rev(), body.rev(), true))
        } else {
            Box::new(Merge::new(tail, body, false))
        }
    }
}

/// Two sorted streams with no key in common, as one.
struct Merge<'a, A: Iterator<Item = (&'a Key, &'a Entry)>, B: Iterator<Item = (&'a Key, &'a Entry)>> {
    a: Peekable<A>,
    b: Peekable<B>,
    /// Wanted order of the first stream's head against the second's.
    first: Ordering,
}

impl<'a, A: Iterator<Item = (&'a Key, &'a Entry)>, B: Iterator<Item = (&'a Key, &'a Entry)>> Merge<'a, A, B> {
    fn new(a: A, b: B, reverse: bool) -> Self {
        Merge { a: a.peekable(), b: b.peekable(), first: if reverse { Ordering::Greater } else { Ordering::Less } }
    }
}

impl<'a, A: Iterator<Item = (&'a Key, &'a Entry)>, B: Iterator<Item = (&'a Key, &'a Entry)>> Iterator
    for Merge<'a, A, B>
{
    type Item = (&'a Key, &'a Entry);
    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some((ka, _)), Some((kb, _))) if ka.cmp(kb) != self.first => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn doc(n: u32) -> Entry {
        Some(n.to_string().into())
    }

    /// Keys in order, out of order and repeated: the memtable answers as a `BTreeMap` does.
    #[test]
    fn a_memtable_answers_as_an_ordered_map_whatever_order_keys_come_in() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..20 {
            let (mut m, mut model) = (Memtable::default(), BTreeMap::new());
            let mut next = 0u32;
            for i in 0..2000u32 {
                // Mostly increasing keys, as an import's, with jumps back and repeats mixed in.
                let k = match (round % 4, rng.gen_range(0..10)) {
                    (0, _) | (_, 0..=6) => {
                        next += rng.gen_range(1..4);
                        next
                    }
                    (1, _) => rng.gen_range(0..next + 1),
                    _ => next.saturating_sub(rng.gen_range(0..50)),
                };
                let key = Key::from(format!("k{k:06}").as_str());
                assert_eq!(m.insert(key.clone(), doc(i)), model.insert(key, doc(i)));
            }
            assert_eq!(m.len(), model.len());
            let pairs = |it: &mut dyn Iterator<Item = (&Key, &Entry)>| {
                it.map(|(k, e)| (k.clone(), e.clone())).collect::<Vec<_>>()
            };
            assert_eq!(pairs(&mut m.iter()), pairs(&mut model.iter()));
            for k in 0..next + 2 {
                let key = Key::from(format!("k{k:06}").as_str());
                assert_eq!(m.get(&key), model.get(&key), "key {key:?}");
            }
            for _ in 0..50 {
                let (a, b) = (rng.gen_range(0..next + 2), rng.gen_range(0..next + 2));
                let (lo, hi) =
                    (Key::from(format!("k{:06}", a.min(b)).as_str()), Key::from(format!("k{:06}", a.max(b)).as_str()));
                let range = KeyRange { lower: Bound::Excluded(lo.clone()), upper: Bound::Included(hi.clone()) };
                let want = pairs(&mut model.range((Bound::Excluded(lo), Bound::Included(hi))));
                assert_eq!(pairs(&mut m.range(&range, false)), want);
                let mut reversed = want.clone();
                reversed.reverse();
                assert_eq!(pairs(&mut m.range(&range, true)), reversed);
            }
        }
    }
}
