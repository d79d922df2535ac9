//! The one codec for stored values: a format byte followed by postcard.
//!
//! postcard is compact (a client record is a few dozen bytes) and fast, but not
//! self-describing, so record structs must not use `skip_serializing_if` or
//! `flatten`, and a change of a record's shape bumps [`FORMAT`] with a migration
//! in `decode`.

use crate::{Error, Result};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// Current format of every stored value.
const FORMAT: u8 = 1;

pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    postcard::to_extend(value, vec![FORMAT]).map_err(|e| Error::Codec(e.to_string()))
}

/// The record in `bytes`; a `T` that borrows (a view of a record's first
/// fields, see [`Skipped`]) reads its strings in place.
pub(crate) fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T> {
    match bytes.split_first() {
        Some((&FORMAT, rest)) => postcard::from_bytes(rest).map_err(|e| Error::Codec(e.to_string())),
        Some((v, _)) => Err(Error::Codec(format!("unknown format {v}"))),
        None => Err(Error::Codec("empty value".into())),
    }
}

/// A sequence field of a record view, read past without keeping it: postcard
/// is not self-describing, so a view must still read every field before the
/// ones it keeps. Each element is decoded as `T` (`&str` for strings, so
/// nothing is allocated) and dropped.
pub(crate) struct Skipped<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Skipped<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Elements<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Elements<T> {
            type Value = Skipped<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sequence")
            }
            // postcard yields the count the length prefix gives; each element takes a byte or
            // more, so a forged length ends at the record's end, with an error.
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
                while seq.next_element::<T>()?.is_some() {}
                Ok(Skipped(std::marker::PhantomData))
            }
        }
        d.deserialize_seq(Elements(std::marker::PhantomData))
    }
}

/// Decodes `bytes` as every stored record kind. Each kind that accepts them must
/// re-encode to bytes that decode and encode again identically (a stable round
/// trip), and a client's state view must read what its whole record holds;
/// a violation panics. Returns how many kinds accepted. For the fuzzer.
// Fuzz-only: a panic here is the fuzzer's finding (an unstable round trip),
// and the sum counts at most one per record kind.
#[allow(clippy::panic, clippy::arithmetic_side_effects)]
pub fn round_trip_every_record(bytes: &[u8]) -> usize {
    fn one<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> usize {
        let Ok(value) = decode::<T>(bytes) else { return 0 };
        let once = encode(&value).unwrap_or_else(|e| panic!("{} re-encodes: {e}", std::any::type_name::<T>()));
        let again =
            decode::<T>(&once).unwrap_or_else(|e| panic!("{} decodes its encoding: {e}", std::any::type_name::<T>()));
        let twice = encode(&again).unwrap_or_else(|e| panic!("{} re-encodes: {e}", std::any::type_name::<T>()));
        assert_eq!(once, twice, "{} round trip", std::any::type_name::<T>());
        1
    }
    use crate::*;
    // What a send reads of a client (a view of its first fields) agrees with the whole record.
    if let Ok(client) = decode::<clients::Client>(bytes) {
        let state = clients::ClientState::of(bytes).unwrap_or_else(|e| panic!("a client's state does not decode: {e}"));
        assert_eq!(
            (state.app_name.as_str(), state.locked, state.not_before_ms),
            (client.app_name.as_str(), client.is_locked(), client.not_before_ms),
            "a client's state"
        );
    }
    one::<apps::App>(bytes)
        + one::<catalogue::Service>(bytes)
        + one::<clients::Client>(bytes)
        + one::<deliveries::ClientOutcome>(bytes)
        + one::<deliveries::Counts>(bytes)
        + one::<deliveries::Report>(bytes)
        + one::<deliveries::Job>(bytes)
        + one::<deliveries::SendRecord>(bytes)
        + one::<deliveries::BatchRecord>(bytes)
        + one::<idempotency::Record>(bytes)
        + one::<schedules::Schedule>(bytes)
        + one::<identity::Address>(bytes)
        + one::<identity::Session>(bytes)
        + one::<identity::LoginFailure>(bytes)
        + one::<identity::LdapComponent>(bytes)
        + one::<identity::OtpCounter>(bytes)
        + one::<identity::OtpPolicy>(bytes)
        + one::<limits::TenantLimits>(bytes)
        + one::<limits::DayCount>(bytes)
        + one::<links::Link>(bytes)
        + one::<nonces::Nonce>(bytes)
        + one::<properties::Property>(bytes)
        + one::<provider_tokens::ProviderToken>(bytes)
        + one::<push_tokens::PushToken>(bytes)
        + one::<push_tokens::TokenRef>(bytes)
        + one::<settings::LoginConfig>(bytes)
        + one::<tenants::Tenant>(bytes)
        + one::<users::User>(bytes)
        + one::<versions::Version>(bytes)
        + one::<versions::Policy>(bytes)
        + one::<versions::Vote>(bytes)
        + one::<web_push::WebPushKeys>(bytes)
        + one::<webhooks::Webhook>(bytes)
        + one::<webhooks::OutboxEntry>(bytes)
        + one::<webhooks::Attempt>(bytes)
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
    fn stored_records_round_trip() {
        let client = crate::clients::Client { id: "c1".into(), app_name: "shop".into(), ..Default::default() };
        assert!(round_trip_every_record(&encode(&client).unwrap()) >= 1);
        assert_eq!(round_trip_every_record(&[]), 0);
        assert_eq!(round_trip_every_record(&[9, 1, 2]), 0, "unknown format");
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
