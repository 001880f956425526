"""A DDP Reducer's buckets, as DDP's own logging data tells them, for the
bucket allreduces the RecordFunction callback sees (Note [Collectives through
RecordFunction] in csrc/collectives.cpp).

At construction the logging data holds each bucket's byte size; which
parameter is in which bucket appears only after DDP rebuilt its buckets
(after the first backward, in the order gradients became ready), and 1.13
and 2.6 log it one forward later still. Read at the start of a backward of
the DDP that prepared it, until the rebuilt buckets are known: a few calls
per Reducer, never one per step after that."""

from . import _C

# Calls after the rebuild before giving up on the rebuilt members (DDP logs
# them at its next forward; a sampled logger may never): bounded work.
_TRIES_AFTER_REBUILD = 3


def _ints(text):
    return [int(x) for x in text.replace(",", " ").split()]


def _read(ddp):
    try:
        return ddp._get_ddp_logging_data()
    except Exception:   # an older DDP, or one whose logger is gone
        return {}


def before_backward(ddp):
    """Hands `ddp`'s buckets to the bridge when something new is known.
    State in the DDP's __dict__: None (not read), "sized" (sizes from
    construction), a count of reads since the rebuild, or "done"."""
    d = ddp.__dict__
    owner = d.get("_hookscope_reducer")
    state = d.get("_hookscope_buckets")
    if not owner or state == "done":
        return
    rebuilt = getattr(ddp, "_has_rebuilt_buckets", False)
    if state == "sized" and not rebuilt:
        return
    if isinstance(state, int) and state >= _TRIES_AFTER_REBUILD:
        object.__setattr__(ddp, "_hookscope_buckets", "done")
        return
    data = _read(ddp)
    members = data.get("rebuilt_per_bucket_param_indices")
    if members and data.get("rebuilt_bucket_sizes"):
        buckets = [_ints(b) for b in members.split(",")]
        _C.set_buckets(owner, _ints(data["rebuilt_bucket_sizes"]), buckets)
        object.__setattr__(ddp, "_hookscope_buckets", "done")
    elif not rebuilt:
        # Until the rebuild: sizes only (a bucket's allreduce is still told
        # from the others by its size; its parameters are not known).
        _C.set_buckets(owner, _ints(data.get("bucket_sizes", "")), [])
        object.__setattr__(ddp, "_hookscope_buckets", "sized")
    else:
        # Rebuilt, not logged yet: the old sizes are wrong now; buckets are
        # told by their order alone until the members appear.
        _C.set_buckets(owner, [], [])
        object.__setattr__(ddp, "_hookscope_buckets", (state if isinstance(state, int) else 0) + 1)
