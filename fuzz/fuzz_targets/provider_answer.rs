//! Provider answers, whatever a peer sends: an arbitrary status, headers and body
//! through each provider's answer reader (APNs, FCM, HMS for batches of 0 to 3
//! tokens) and the OAuth token-answer reader. Input: two bytes of status (big
//! endian, modulo 1000), header lines `name: value` up to an empty line, then the
//! body. Checked besides "no panic": one outcome per token; every delay usable
//! with the clock once capped; an access token's life within 60 s..24 h; an
//! auth error that repeats at most short codes of what the endpoint wrote.
#![no_main]
use herald_actors::providers::{apns, auth_http, fcm, hms, retry_after, Outcome};
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};

const TOKENS: [&str; 3] = ["tok-a", "dead-b", "tok-c"];

fn check(o: &Outcome) {
    if let Outcome::Retry { after: Some(after), .. } = o {
        // What the channel does with it: cap it, then add it to the clock.
        assert!(Instant::now().checked_add((*after).min(Duration::from_secs(86_400))).is_some());
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((status, rest)) = data.split_first_chunk::<2>() else { return };
    let status = u16::from_be_bytes(*status) % 1000;
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &[][..]),
    };
    let mut headers = http::HeaderMap::new();
    for line in head.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        let name = http::HeaderName::from_bytes(&line[..colon]);
        let value = http::HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    check(&apns::parse_response(status, &headers, body));
    check(&fcm::parse_response(status, &headers, body));
    for n in 0..=TOKENS.len() {
        let outcomes = hms::parse_response(status, &headers, body, &TOKENS[..n]);
        assert_eq!(outcomes.len(), n, "one outcome per token");
        outcomes.iter().for_each(check);
    }
    if let Some(after) = retry_after(&headers) {
        check(&Outcome::Retry { status, reason: String::new(), after: Some(after) });
    }
    match auth_http::read_token_answer(status, body) {
        Ok((token, expires_in)) => {
            assert!(!token.is_empty());
            assert!((auth_http::MIN_EXPIRES_IN..=auth_http::MAX_EXPIRES_IN).contains(&expires_in));
            assert!(Instant::now().checked_add(auth_http::usable_for(expires_in)).is_some());
        }
        Err(e) => assert!(e.reason.len() <= 140, "an auth error repeats at most short codes: {}", e.reason),
    }
});
