#!/usr/bin/env bash
# Writes the synthetic CIFAR-10 stand-in that models/cifar10_quick reads:
# data/cifar10/{cifar10_train_lmdb,cifar10_test_lmdb,mean.binaryproto}.
#   bench/make_synthetic_cifar10.sh [TRAIN_COUNT=50000] [TEST_COUNT=10000]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -f data/cifar10/mean.binaryproto && -f data/cifar10/cifar10_train_lmdb/data.mdb && $# -eq 0 ]]; then
  echo "data/cifar10 exists"
  exit 0
fi
"$(bench/compile.sh make_synthetic_cifar10)" data/cifar10 "$@"
