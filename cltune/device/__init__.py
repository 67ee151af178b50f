"""cltune.device"""
