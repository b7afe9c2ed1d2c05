#![no_main]
// Body and property: `wharf_engine::fuzzing::csv`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| wharf_engine::fuzzing::csv(data));
