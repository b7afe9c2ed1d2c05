//! The simulated power-loss campaign (see `support/campaign.rs`): at least 10,000 power cuts per
//! run of `cargo test --release`, in two halves that run in parallel. Set WHARF_CAMPAIGN_RUNS to
//! change the runs per half; `examples/crash_campaign.rs` runs any number (a million: see
//! `scripts/reliability/crash-campaign.sh`).

mod support;

use support::campaign::{run, Figures};

const LIVES: usize = 10;

fn half(first_seed: u64) -> Figures {
    let runs: u64 = std::env::var("WHARF_CAMPAIGN_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let mut figures = Figures::default();
    for seed in first_seed..first_seed + runs {
        run(seed, LIVES, &mut figures);
    }
    println!("power-loss campaign, seeds {first_seed}..{}: {figures}", first_seed + runs);
    assert_eq!(figures.lost, 0);
    assert!(figures.crashes >= runs * LIVES as u64);
    assert!(figures.faults_struck > 0 && figures.failed_opens > 0, "{figures}");
    // Faults met every kind of call that changes the disk, on every kind of file.
    for call in [
        "write journal",
        "fdatasync journal",
        "create journal",
        "write run",
        "fdatasync run",
        "write manifest",
        "fdatasync manifest",
        "sync directory",
    ] {
        assert!(figures.struck_calls.get(call).is_some_and(|n| *n > 0), "no fault struck `{call}`: {figures}");
    }
    assert!(figures.checkpoints > 0 && figures.merges > 0 && figures.segments_recycled > 0, "{figures}");
    figures
}

#[test]
fn power_cuts_lose_no_acknowledged_write_seeds_from_1() {
    half(1);
}

#[test]
fn power_cuts_lose_no_acknowledged_write_seeds_from_1_000_000() {
    half(1_000_000);
}
