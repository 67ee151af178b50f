# shellcheck shell=bash
# .ci/opencl-env.sh -- make every CPU OpenCL implementation visible to pyopencl.
#
# Usage (source it, do not execute it):
#     VENV=/path/to/venv source .ci/opencl-env.sh      # or: activate the venv, then
#     source .ci/opencl-env.sh                          # (uses $VIRTUAL_ENV)
#
# Afterwards pyopencl.get_platforms() lists, on this Debian 12 machine:
#   * "Portable Computing Language", version "OpenCL 3.0 PoCL 3.1+debian ..."
#       Debian's pocl-opencl-icd (/etc/OpenCL/vendors/pocl.icd)
#   * "Intel(R) OpenCL", version "OpenCL 3.1 LINUX"
#       Intel's CPU runtime from PyPI (intel-opencl-rt)
#   * "Portable Computing Language", version "OpenCL 3.0 PoCL 3.0-rc2 ..."
#       pyopencl's bundled PoCL (PyPI pocl-binary-distribution, i.e. pyopencl[pocl]).
#       pyopencl's own ICD loader always adds pyopencl/.libs/*.icd on top of
#       OCL_ICD_VENDORS, so nothing here is needed for it.
#   Both PoCLs have the same platform name: tell them apart by platform.version
#   (or device.driver_version: "3.1+debian" vs "3.0-rc2").
#
# What it does:
#   * writes an ICD folder ($CLTUNE_ICD_DIR, default /tmp/cltune-icd) holding
#       intel-cpu.icd  -> the real absolute path of the venv's libintelocl.so
#                         (the .icd file shipped by intel-opencl-rt points at
#                         /opt/anaconda1anaconda2anaconda3/lib/libintelocl.so, which
#                         does not exist), and
#       copies of /etc/OpenCL/vendors/*.icd, except any Oclgrind one;
#   * exports OCL_ICD_VENDORS=<that folder> (pyopencl's bundled ocl-icd loader
#     honours OCL_ICD_VENDORS but ignores OCL_ICD_FILENAMES);
#   * prepends $VENV/lib to LD_LIBRARY_PATH (libimf.so, libsvml.so, libtbb.so ...).
#
# Oclgrind is deliberately NOT in the folder: it is a slow simulator that would
# show up as a fourth platform (of type ALL) in every test. Use it only through
# tests/support/oclgrind.py. Set CLTUNE_ICD_WITH_OCLGRIND=1 to add it anyway.
#
# Returns non-zero (without exiting the caller's shell) when the venv or the
# Intel runtime cannot be found; set CLTUNE_ICD_ALLOW_NO_INTEL=1 to go on
# without Intel's runtime.

_cltune_ocl_env() {
    local venv="${VENV:-${VIRTUAL_ENV:-}}"
    if [[ -z "$venv" || ! -d "$venv" ]]; then
        echo "opencl-env.sh: set VENV or activate a venv (got '${venv}')" >&2
        return 1
    fi
    venv="$(cd "$venv" && pwd -P)"

    local icd_dir="${CLTUNE_ICD_DIR:-/tmp/cltune-icd}"
    mkdir -p "$icd_dir" || return 1
    rm -f "$icd_dir"/*.icd

    # Intel CPU runtime: normally $VENV/lib/libintelocl.so (a symlink to
    # libintelocl.so.<version>); search the venv if the layout ever changes.
    local intel_lib=""
    if [[ -e "$venv/lib/libintelocl.so" ]]; then
        intel_lib="$venv/lib/libintelocl.so"
    else
        intel_lib="$(find "$venv" \( -name 'libintelocl.so' -o -name 'libintelocl.so.*' \) \
                      \( -type f -o -type l \) 2>/dev/null | grep -v -- '-gdb.py' | sort | head -n 1 || true)"
    fi
    if [[ -n "$intel_lib" ]]; then
        intel_lib="$(readlink -f "$intel_lib")"
        printf '%s\n' "$intel_lib" > "$icd_dir/intel-cpu.icd"
    elif [[ "${CLTUNE_ICD_ALLOW_NO_INTEL:-0}" != 1 ]]; then
        echo "opencl-env.sh: libintelocl.so not found under $venv (pip install intel-opencl-rt)" >&2
        return 1
    else
        echo "opencl-env.sh: warning: no Intel OpenCL runtime in $venv" >&2
    fi

    # System ICDs (Debian's PoCL: pocl.icd -> libpocl.so.2.10.0), minus Oclgrind.
    local f
    for f in /etc/OpenCL/vendors/*.icd; do
        [[ -e "$f" ]] || continue
        if grep -qi oclgrind "$f" || [[ "$(basename "$f")" == *oclgrind* ]]; then
            echo "opencl-env.sh: note: skipping Oclgrind ICD $f" >&2
            continue
        fi
        cp "$f" "$icd_dir/"
    done
    if [[ "${CLTUNE_ICD_WITH_OCLGRIND:-0}" == 1 ]]; then
        local og
        for og in /usr/lib/oclgrind/liboclgrind-rt-icd.so /usr/lib/x86_64-linux-gnu/liboclgrind-rt-icd.so; do
            if [[ -e "$og" ]]; then printf '%s\n' "$og" > "$icd_dir/oclgrind.icd"; break; fi
        done
    fi

    export OCL_ICD_VENDORS="$icd_dir"
    case ":${LD_LIBRARY_PATH:-}:" in
        *":$venv/lib:"*) ;;
        *) export LD_LIBRARY_PATH="$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
    echo "opencl-env.sh: OCL_ICD_VENDORS=$OCL_ICD_VENDORS ($(cd "$icd_dir" && echo *.icd))" >&2
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    echo "opencl-env.sh: this file must be sourced, not executed" >&2
    exit 2
fi
_cltune_ocl_env
_cltune_ocl_env_rc=$?
unset -f _cltune_ocl_env
return "$_cltune_ocl_env_rc"
