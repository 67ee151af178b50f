"""cltune.families.axis"""
