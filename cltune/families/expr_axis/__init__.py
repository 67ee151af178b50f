"""cltune.families.expr_axis"""
