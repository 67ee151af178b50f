"""cltune.stats"""
