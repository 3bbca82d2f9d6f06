#!/usr/bin/env bash
# Includes in synth/ and runtime/ point down the layers only (see
# scripts/check-layers.sh and docs/layout.md).
set -u
cd "$(dirname "$0")/../.."
bash scripts/check-layers.sh
