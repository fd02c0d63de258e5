"""Writes the person_detect inputs of this directory from TFLM's own test images.

TFLM's person_detection test feeds the model the bytes of its test bitmaps as
its Makefile turns them into C arrays (generate_cc_arrays.py: the image's
pixels, as PIL's `tobytes()` gives them, top row first), copied into the int8
input tensor unchanged. This does the same without PIL: the 96x96 8-bit
bitmaps store their rows bottom first.

    python3 make_inputs.py /path/to/tflite-micro
"""

import pathlib
import struct
import sys

SIDE = 96


def pixels(bitmap):
    data = bitmap.read_bytes()
    offset, = struct.unpack_from("<I", data, 10)
    width, height, _, bits = struct.unpack_from("<iiHH", data, 18)
    assert (width, abs(height), bits) == (SIDE, SIDE, 8), f"{bitmap}: {width}x{height}x{bits}"
    rows = [data[offset + r * SIDE : offset + (r + 1) * SIDE] for r in range(SIDE)]
    return b"".join(reversed(rows) if height > 0 else rows)


def main(checkout):
    testdata = pathlib.Path(checkout) / "tensorflow/lite/micro/examples/person_detection/testdata"
    here = pathlib.Path(__file__).parent
    for name in ["person", "no_person"]:
        (here / f"{name}.int8").write_bytes(pixels(testdata / f"{name}.bmp"))


if __name__ == "__main__":
    main(sys.argv[1])
