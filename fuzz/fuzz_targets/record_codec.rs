//! The codec of stored records: arbitrary bytes decoded as every record kind never
//! panic, and whatever decodes round-trips stably.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    herald_storage::round_trip_every_record(data);
});
