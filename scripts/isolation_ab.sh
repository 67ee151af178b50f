#!/usr/bin/env bash
# What the evaluation worker costs, from the repo root (docs/isolation.md). On the lent GPU:
#   source scripts/gpu_setup.sh && bash scripts/isolation_ab.sh [BASE_WHEEL_DIR]
# On a CPU host, in the venv where this checkout is installed:
#   DEVICE=0:0 SIZES=2^16,2^20 PARTS=tune bash scripts/isolation_ab.sh
# The same tune (sum/float32, 2 size classes x 30 trials, the random sampler with one seed, so
# that both evaluate the same configs) with this checkout and with the cltune wheel in
# BASE_WHEEL_DIR (default .whl/base: the version before the worker), alternated A B A B A B in
# one run; then scripts/isolation_cost.py and tests/test_isolation.py on the device (PARTS=tune
# runs only the tunes). Make the base wheel with `pip wheel --no-deps -w .whl/base <checkout>`.
set -u
case "${1:-}" in
-h|--help) sed -n '2,10p' "$0" | cut -c3-; exit 0 ;;
esac
BASE=${1:-.whl/base}
OUT=${OUT:-/tmp/cltune-out}
DEVICE=${DEVICE:-NVIDIA}
SIZES=${SIZES:-2^16,2^24}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_base \
    "$BASE"/cltune-*.whl || exit 1
tune() {  # tune TAG ROUND PYTHONPATH
    local f="$OUT/tune-$1-$2" t0 t1
    rm -f "$f.db" "$f-st.db"
    t0=$(date +%s.%N)
    (cd /tmp && PYTHONPATH="$3" CLTUNE_CACHE_DIR="$OUT/cache-$1" COLUMNS=200 timeout 280 \
        python3 -m cltune tune --device "$DEVICE" --sizes "$SIZES" --trials 30 --timeout 250 \
        --sampler random --seed 0 \
        --db "$f.db" --storage "sqlite:///$f-st.db") > "$f.log" 2>&1
    local rc=$?
    t1=$(date +%s.%N)
    echo "$1 round $2 rc=$rc wall $(python3 -c "print(f'{$t1 - $t0:.1f}')") s" | tee -a "$OUT/tune-walls.txt"
}
for r in 1 2 3; do
    tune after "$r" "/tmp/site"
    tune before "$r" "/tmp/site_base:/tmp/site"
done
[ "${PARTS:-all}" = tune ] && exit 0
(cd /tmp && PYTHONPATH=/tmp/site python3 "$OLDPWD/scripts/isolation_cost.py" --device "$DEVICE" \
    --repeats 3) 2>&1 | grep -v -i warn | tee "$OUT/isolation-cost.txt"
CLTUNE_TEST_DEVICE=$DEVICE timeout 300 python3 -m pytest -q -p no:cacheprovider -o addopts="" \
    tests/test_isolation.py 2>&1 | tail -8 | tee "$OUT/test-isolation.txt"
