//! Keys: the tenant id, then each part, separated by NUL bytes.
//!
//! Tenant ids are `[a-z0-9-]`, and the API rejects control characters in every
//! id that reaches a key, so a NUL never occurs inside a part: a prefix scan over
//! `tenant \0` holds exactly that tenant's records.

/// A key as built: on the stack up to 64 bytes (nearly all keys), so that a
/// read or write does not allocate for its key.
pub(crate) type Key = smallvec::SmallVec<[u8; 64]>;

/// The key of `parts`; typed as text so that callers' `&String`s coerce.
pub(crate) fn key(parts: &[&str]) -> Key {
    key_bytes(parts)
}

/// [`key`] of parts that are bytes already (as read back from another key).
pub(crate) fn key_bytes<P: AsRef<[u8]>>(parts: &[P]) -> Key {
    let mut k = Key::with_capacity(parts.iter().fold(0, |n, p| n.saturating_add(p.as_ref().len()).saturating_add(1)));
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            k.push(0);
        }
        k.extend_from_slice(p.as_ref());
    }
    k
}

/// [`prefix`] of parts that are bytes already.
pub(crate) fn prefix_bytes<P: AsRef<[u8]>>(parts: &[P]) -> Key {
    // `key_bytes` reserves a byte per part: one more than its separators, for this one.
    let mut k = key_bytes(parts);
    k.push(0);
    k
}

/// The prefix of every key that starts with `parts`.
pub(crate) fn prefix(parts: &[&str]) -> Key {
    prefix_bytes(parts)
}

/// The first part of a key (the tenant), as text.
pub(crate) fn first_part(k: &[u8]) -> String {
    let end = k.iter().position(|b| *b == 0).unwrap_or(k.len());
    String::from_utf8_lossy(&k[..end]).into_owned()
}

/// The last part of a key, as text.
pub(crate) fn last_part(k: &[u8]) -> String {
    let last = k.rsplit(|b| *b == 0).next().unwrap_or(k);
    String::from_utf8_lossy(last).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_prefixes_do_not_overlap() {
        let a = key(&["acme", "x"]);
        assert!(a.starts_with(&prefix(&["acme"])));
        assert!(!a.starts_with(&prefix(&["acm"])));
        assert!(!key(&["acme-2", "x"]).starts_with(&prefix(&["acme"])));
        assert_eq!(last_part(&a), "x");
    }

    /// A key past the 64 bytes kept on the stack is the same bytes (on the heap).
    #[test]
    fn a_long_key_is_whole() {
        let long = "c".repeat(100);
        let k = key(&["acme", &long, "x"]);
        assert!(k.spilled(), "a 107-byte key lives on the heap");
        assert_eq!(k.as_slice(), [b"acme".as_slice(), b"\0", long.as_bytes(), b"\0x"].concat());
        let p = prefix(&["acme", &long]);
        assert_eq!(p.as_slice(), [b"acme".as_slice(), b"\0", long.as_bytes(), b"\0"].concat());
        assert_eq!(p.capacity(), p.len(), "the prefix's separator was reserved with the key");
        assert!(!prefix(&["acme", "shop"]).spilled(), "a short prefix stays on the stack");
    }
}
