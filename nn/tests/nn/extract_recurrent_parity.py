"""Copies the recurrent and attention cases of the shared PyTorch parity file into the repository.

The cases (`lstm`, `gru`, `rnn`, `mha`, `transformer_encoder_layer`) were computed by PyTorch
(see ../shared/parity/MODULES.md); `recurrent.rs` reads this copy so that `cargo test` passes in
a clone with nothing beside it. Run from the repository root with ../shared beside it:

    python3 nn/tests/nn/extract_recurrent_parity.py

Only the standard library is needed: a safetensors file is an 8-byte little-endian header length,
a JSON header of dtypes, shapes and byte ranges, then the data.
"""
import json
import pathlib
import struct

IDS = ["lstm", "gru", "rnn", "mha", "transformer_encoder_layer"]
root = pathlib.Path(__file__).resolve().parents[3]
src = root.parent / "shared" / "parity" / "modules.safetensors"
dst = pathlib.Path(__file__).with_name("recurrent_parity.safetensors")

blob = src.read_bytes()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8 : 8 + n])
data = blob[8 + n :]
keys = sorted(k for k in header if k != "__metadata__" and k.split(".")[0].split(":")[0] in IDS)
out_header, chunks, offset = {}, [], 0
for k in keys:
    begin, end = header[k]["data_offsets"]
    chunks.append(data[begin:end])
    out_header[k] = {"dtype": header[k]["dtype"], "shape": header[k]["shape"], "data_offsets": [offset, offset + end - begin]}
    offset += end - begin
out_header["__metadata__"] = {"source": "shared/parity/modules.safetensors", "cases": ",".join(IDS)}
text = json.dumps(out_header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
dst.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
print(f"{dst}: {len(keys)} tensors, {offset} bytes of data")
