"""Copies the recurrent and attention cases of the shared PyTorch parity file into the repository.

The cases (`lstm`, `gru`, `rnn`, `mha`, `transformer_encoder_layer`) were computed by PyTorch
(see MODULES.md in the parity material); `recurrent.rs` reads this copy so that `cargo test` passes in
a clone with nothing beside it. Run by hand with the path of the shared material's
`parity/modules.safetensors`:

    python3 nn/tests/nn/extract_recurrent_parity.py PATH/TO/parity/modules.safetensors

Only the standard library is needed: a safetensors file is an 8-byte little-endian header length,
a JSON header of dtypes, shapes and byte ranges, then the data.
"""
import json
import pathlib
import struct
import sys

IDS = ["lstm", "gru", "rnn", "mha", "transformer_encoder_layer"]
if len(sys.argv) != 2:
    sys.exit(f"usage: {sys.argv[0]} PATH/TO/parity/modules.safetensors")
src = pathlib.Path(sys.argv[1])
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
out_header["__metadata__"] = {"source": "parity/modules.safetensors", "cases": ",".join(IDS)}
text = json.dumps(out_header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
dst.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
print(f"{dst}: {len(keys)} tensors, {offset} bytes of data")
