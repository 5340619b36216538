"""Reads the .npy files sinkscope writes (little-endian float32 '<f4' or int32 '<i4', C order, version 1.0)
with the standard library alone, so that the CLI tests check numbers without NumPy. Returns
(shape, flat tuple of values)."""
import struct


def npy(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<H", raw[8:10])[0]
    header = raw[10:10 + n].decode()
    shape = tuple(int(s) for s in header.split("'shape': (")[1].split(")")[0].split(",") if s.strip())
    code = "i" if "<i4" in header else "f"
    data = raw[10 + n:]
    return shape, struct.unpack("<%d%s" % (len(data) // 4, code), data)
