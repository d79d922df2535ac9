//! The one codec for stored values: a format byte followed by postcard.
//!
//! postcard is compact (a client record is a few dozen bytes) and fast, but not
//! self-describing, so record structs must not use `skip_serializing_if` or
//! `flatten`, and a change of a record's shape bumps [`FORMAT`] with a migration
//! in `decode`.

use crate::{Error, Result};
use serde::{de::DeserializeOwned, Serialize};

/// Current format of every stored value.
const FORMAT: u8 = 1;

pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    postcard::to_extend(value, vec![FORMAT]).map_err(|e| Error::Codec(e.to_string()))
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    match bytes.split_first() {
        Some((&FORMAT, rest)) => postcard::from_bytes(rest).map_err(|e| Error::Codec(e.to_string())),
        Some((v, _)) => Err(Error::Codec(format!("unknown format {v}"))),
        None => Err(Error::Codec("empty value".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct R {
        a: String,
        b: Option<u64>,
        c: Vec<bool>,
    }

    #[test]
    fn round_trips_and_rejects_unknown_formats() {
        let r = R { a: "x".into(), b: Some(7), c: vec![true] };
        let bytes = encode(&r).unwrap();
        assert_eq!(bytes[0], FORMAT);
        assert_eq!(decode::<R>(&bytes).unwrap(), r);
        let mut bad = bytes.clone();
        bad[0] = 99;
        assert!(matches!(decode::<R>(&bad), Err(Error::Codec(_))));
        assert!(decode::<R>(&[]).is_err());
        assert!(decode::<R>(&bytes[..2]).is_err());
    }
}
