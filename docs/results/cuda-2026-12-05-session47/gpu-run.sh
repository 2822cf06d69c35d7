#!/bin/bash
# Forty-seventh session: the issue-14 validation (session 44's gpu-run.sh: every
# cuda/gpu test, the squares and the 16-bit class sets), but only on an H200, the card
# the issue's bars name; on any other card it stops after naming it.
cd "$(dirname "$0")/../../.."
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
case "$name" in
  *H200*) exec bash docs/results/cuda-2026-12-05-session44/gpu-run.sh ;;
  *) echo "not an H200: nothing run"; exit 0 ;;
esac
