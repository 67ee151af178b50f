"""cltune.tuning"""
