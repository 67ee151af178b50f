"""cltune.families"""
