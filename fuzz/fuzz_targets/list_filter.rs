//! The `filter=` grammar of list routes: one condition, parsed and then matched
//! against a present and a missing attribute.
#![no_main]
use herald_actors::filter::Condition;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(c) = Condition::parse(text) {
        let _ = c.matches(Some("value"));
        let _ = c.matches(Some(text));
        let _ = c.matches(None);
    }
});
