//! The send API's body: strict JSON decoding, then validation into a target and a
//! notification. Any input either passes or is refused with a 4xx, never a panic or a 5xx.
#![no_main]
use herald::models::push::PushNotificationEvent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let checked = herald::http::decode_json::<PushNotificationEvent>(data)
        .and_then(|event| event.into_parts("acme", "01ARZ3NDEKTSV4RRFFQ69G5FAV".to_string()));
    if let Err(e) = checked {
        assert!(e.status.is_client_error(), "{}: {}", e.status, e.message);
    }
});
