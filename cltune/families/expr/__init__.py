"""cltune.families.expr"""
