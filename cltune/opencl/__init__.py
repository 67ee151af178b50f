"""cltune.opencl"""
