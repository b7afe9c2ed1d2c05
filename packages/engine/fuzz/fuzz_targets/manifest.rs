#![no_main]
// Body and property: `wharf_engine::fuzzing::manifest`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| wharf_engine::fuzzing::manifest(data));
