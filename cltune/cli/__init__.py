"""cltune.cli"""
