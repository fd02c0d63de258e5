"""Writes the micro_speech features of this directory from TFLM's own test audio.

TFLM's micro_speech example turns audio into features with a model of its
own (audio_preprocessor_int8.tflite: 30 ms windows every 20 ms, 40 int8
features each); the features of a 1 s clip are the keyword model's input.
This runs that model on TFLM's Python interpreter, as the example's
evaluate.py does, for the clips in the example's testdata, and checks that
the keyword model (micro_speech_quantized.tflite) names each clip's class.

    pip install tflite-micro numpy
    python3 make_inputs.py /path/to/tflite-micro
"""

import pathlib
import sys
import wave

import numpy as np
from tflite_micro import runtime

WINDOW, STRIDE, FRAMES = 480, 320, 49
CLASSES = ["silence", "unknown", "yes", "no"]
CLIPS = {"yes_1000ms": "yes", "no_1000ms": "no"}


def features(preprocessor, clip):
    with wave.open(str(clip)) as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    preprocessor.reset()  # its noise estimates start afresh for every clip
    out = np.zeros((FRAMES, 40), dtype=np.int8)
    for frame in range(FRAMES):
        window = samples[frame * STRIDE : frame * STRIDE + WINDOW].reshape(1, -1)
        preprocessor.set_input(window, 0)
        preprocessor.invoke()
        out[frame] = preprocessor.get_output(0).reshape(-1)
    return out


def main(checkout):
    example = pathlib.Path(checkout) / "tensorflow/lite/micro/examples/micro_speech"
    here = pathlib.Path(__file__).parent
    preprocessor = runtime.Interpreter.from_file(example / "models/audio_preprocessor_int8.tflite")
    keyword = runtime.Interpreter.from_file(here / "micro_speech_quantized.tflite")
    for clip, expected in CLIPS.items():
        data = features(preprocessor, example / "testdata" / f"{clip}.wav")
        keyword.set_input(data.reshape(1, -1), 0)
        keyword.invoke()
        answer = CLASSES[int(np.argmax(keyword.get_output(0)))]
        assert answer == expected, f"{clip}: the keyword model says {answer}"
        data.tofile(here / f"{clip}.features")
        print(f"{clip}.features: {data.size} int8 features, class {answer}")


if __name__ == "__main__":
    main(sys.argv[1])
