"""cltune.core"""
