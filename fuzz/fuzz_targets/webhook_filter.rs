//! The webhook filter grammar (boolean expressions over conditions): parsed, then
//! evaluated against an event where every attribute is present, and one where none is.
#![no_main]
use herald_actors::filter::Expr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(e) = Expr::parse(text) {
        let _ = e.matches(&|attr: &str| Some(attr.to_string()));
        let _ = e.matches(&|_: &str| None);
    }
});
