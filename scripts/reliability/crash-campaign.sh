#!/bin/sh
# The simulated power-loss campaign of the engine at scale: a million power cuts by default.
#   scripts/reliability/crash-campaign.sh [CRASHES] [THREADS] [FIRST_SEED]
# Each run is one database on the simulated disk through 10 power cuts, with ENOSPC/EIO faults,
# option changes between opens, checkpoints, merges, recycling and index builds; after each cut
# every acknowledged write is checked (see packages/engine/core/tests/support/campaign.rs).
# Prints the figures (simulated crashes, acknowledged writes checked, lost: 0); exits 1 on a loss.
set -eu
cd "$(dirname "$0")/../../packages/engine"
exec cargo run --release --quiet -p wharf-engine --example crash_campaign -- "${1:-1000000}" ${2:+"$2"} ${3:+"$3"}
