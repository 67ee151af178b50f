"""cltune.isolation"""
