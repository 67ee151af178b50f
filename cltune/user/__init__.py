"""An application's own OpenCL kernels, tuned through Kernel Tuner's interface (#45):
`tune_kernel`, `run_kernel` and `PythonKernel` with Kernel Tuner's signatures and meanings,
every candidate built, checked and timed in the device's evaluation worker, the results kept in
cltune's database (family `kernel`) and served at run time by `PythonKernel`."""
