#!/usr/bin/env bash
# Small schedules must match their reviewed golden JSON dumps exactly.
set -eu
BUILD=${BUILD:-build} bash scripts/update-golden.sh --check
