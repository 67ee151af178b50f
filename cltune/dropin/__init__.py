"""pyopencl applications on cltune's kernels without a changed line (`switch.use_in_pyopencl`,
`python -m cltune.dropin app.py`)."""
