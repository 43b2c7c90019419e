"""``pad_sequence`` (PackedSequence is not supported yet)."""

from ... import _C

_f = _C._torch_functions


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shapes (L_i, *) into (L_max, B, *) (or (B, L_max, *) with
    ``batch_first``), filling with ``padding_value`` after (or before, ``padding_side="left"``)
    each sequence."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    max_len = max(s.size(0) for s in sequences)
    trailing = list(sequences[0].shape)[1:]
    out = _f["full"]([len(sequences), max_len] + trailing, padding_value, dtype=sequences[0].dtype,
                     device=sequences[0].device)
    rows = []
    for s in sequences:
        pad = max_len - s.size(0)
        if pad == 0:
            rows.append(s)
            continue
        filler = out[0, :pad]
        rows.append(_f["cat"]([s, filler] if padding_side == "right" else [filler, s]))
    out = _f["stack"](rows)
    return out if batch_first else out.transpose(0, 1)
