//! Keys: the tenant id, then each part, separated by NUL bytes.
//!
//! Tenant ids are `[a-z0-9-]`, and the API rejects control characters in every
//! id that reaches a key, so a NUL never occurs inside a part: a prefix scan over
//! `tenant \0` holds exactly that tenant's records.

/// The key of `parts`; typed as text so that callers' `&String`s coerce.
pub(crate) fn key(parts: &[&str]) -> Vec<u8> {
    key_bytes(parts)
}

/// [`key`] of parts that are bytes already (as read back from another key).
pub(crate) fn key_bytes<P: AsRef<[u8]>>(parts: &[P]) -> Vec<u8> {
    let mut k = Vec::with_capacity(parts.iter().fold(0, |n, p| n.saturating_add(p.as_ref().len()).saturating_add(1)));
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            k.push(0);
        }
        k.extend_from_slice(p.as_ref());
    }
    k
}

/// [`prefix`] of parts that are bytes already.
pub(crate) fn prefix_bytes<P: AsRef<[u8]>>(parts: &[P]) -> Vec<u8> {
    let mut k = key_bytes(parts);
    k.push(0);
    k
}

/// The prefix of every key that starts with `parts`.
pub(crate) fn prefix(parts: &[&str]) -> Vec<u8> {
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
}
