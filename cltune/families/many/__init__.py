"""Many small reductions in one launch (`r.many([x1, ..., xk])`, `cltune.norm_many`)."""
