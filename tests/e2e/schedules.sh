#!/usr/bin/env bash
# The checked-in artifacts regenerate byte for byte and pass the verifier.
set -eu
BUILD=${BUILD:-build}
CCSYNTH=$BUILD/bin/ccsynth bash scripts/gen-schedules.sh --check schedules
