"""A minimal application using cltune — copy this.

    python scripts/example_app.py            # any OpenCL device (PYOPENCL_CTX picks one)
    python scripts/example_app.py --help

The reducer is created once and reused: the tuning database is read once, kernels are built on
the first call for each size bucket (and cached on disk by pyopencl), and every later call is
one or two kernel enqueues. Keep inputs on the device; a numpy array is uploaded on every call.
"""

import argparse
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from cltune import get_reducer


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                            epilog="Pick the device with PYOPENCL_CTX (e.g. PYOPENCL_CTX=0)."
                            ).parse_args()
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    with warnings.catch_warnings():
        # never tuned here? cltune warns once and uses a config derived from the device limits
        warnings.simplefilter("default")
        reduce_sum = get_reducer(queue)                      # op="sum", dtype=np.float32
        reduce_max = get_reducer(queue, op="max")
        dot = get_reducer(queue, op="dot")

    x = cla.to_device(queue, np.random.default_rng(0).random(10**6 + 3, dtype=np.float32))
    total = reduce_sum(x)                                    # 0-d device array, no host sync
    biggest = reduce_max(x[5:])                              # views with offsets work as is
    norm2 = dot(x, x)
    print("sum", total.get(), "max of x[5:]", biggest.get(), "x.x", norm2.get())

    out = cla.empty(queue, (), np.float32)                   # reuse a result buffer
    event = reduce_sum(x, out=out).events[-1]                # compose with your own commands
    event.wait()
    print("again", out.get())
    print(reduce_sum.explain(x.size))                        # which config, and why


if __name__ == "__main__":
    main()
