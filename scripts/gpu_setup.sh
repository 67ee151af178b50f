#!/usr/bin/env bash
# Source on the lent GPU machine (see docs/benchmarks.md): installs the carried wheels and the
# project into /tmp/site and registers NVIDIA's OpenCL library with the ICD loader.
#   source scripts/gpu_setup.sh
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,4p' "${BASH_SOURCE[0]}" | cut -c3-
    return 0 2>/dev/null || exit 0
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index --upgrade --target /tmp/site . || return 1
mkdir -p /tmp/icd
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null || true
export OCL_ICD_VENDORS=/tmp/icd PYTHONUNBUFFERED=1 PATH=/tmp/site/bin:$PATH  # the console script
alias cltune="python3 -m cltune"
cd /tmp && python3 -c "import cltune; print('cltune from', cltune.__file__)"; cd - >/dev/null
