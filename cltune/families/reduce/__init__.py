"""cltune.families.reduce"""
