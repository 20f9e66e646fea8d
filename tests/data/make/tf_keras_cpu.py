"""Make the TensorFlow 2 / Keras CPU input-pipeline fixtures.

Produces (copied into tests/data/, the logdir is a temp dir and is removed):

  tests/data/tf_keras_cpu_slow_map.xplane.pb   (variant "slow_map")
  tests/data/tf_keras_cpu_fast.xplane.pb       (variant "fast")

What the program does, for each variant:
  * writes 4 small TFRecord files (256 tf.train.Examples each: a 256-float
    feature "x" and an int64 "y" in [0, 10)) into a temp dir;
  * builds tf.data: TFRecordDataset(files) -> map(parse_single_example,
    num_parallel_calls=1) -> batch(64, drop_remainder) -> [slow_map only:
    map(tf.py_function that sleeps 25 ms per batch, num_parallel_calls=1)]
    -> repeat() -> prefetch(1);
  * trains a small Keras MLP (256 -> 512 -> 512 -> 10, Adam) with
    model.fit(ds, epochs=1, steps_per_epoch=16);
  * a callback starts tf.profiler.experimental at batch 3 and stops it after
    batch 14, so 12 training steps (step_num 3..14) are profiled; each of those
    batches is wrapped in tf.profiler.experimental.Trace("train", step_num=i,
    _r=1) (Keras 3 does not mark steps in fit(); its TensorBoard callback only
    emits "Profiled batch" with step_num and no _r).

Run (from the repo root):

  python3 -m venv /tmp/fx-tf
  /tmp/fx-tf/bin/pip install tensorflow-cpu==2.21.0     # brings keras 3.15.1
  /tmp/fx-tf/bin/python tests/data/make/tf_keras_cpu.py            # both
  /tmp/fx-tf/bin/python tests/data/make/tf_keras_cpu.py slow_map   # one

Seeds are fixed (keras.utils.set_random_seed(0), numpy seed 0) and the sleep
is fixed; timings of course vary from run to run.
"""
import glob
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)

N_FILES, PER_FILE, DIM, BATCH = 4, 256, 256, 64
FIRST, LAST, STEPS = 3, 14, 16     # profile steps FIRST..LAST of STEPS
SLEEP_S = 0.025                    # slow_map: per-batch sleep in the map stage


def write_tfrecords(d):
    rng = np.random.default_rng(0)
    files = []
    for f in range(N_FILES):
        path = os.path.join(d, f"part-{f:02d}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for _ in range(PER_FILE):
                x = rng.standard_normal(DIM).astype(np.float32)
                y = int(rng.integers(0, 10))
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y])),
                }))
                w.write(ex.SerializeToString())
        files.append(path)
    return files


FEATURES = {
    "x": tf.io.FixedLenFeature([DIM], tf.float32),
    "y": tf.io.FixedLenFeature([1], tf.int64),
}


def parse(rec):
    ex = tf.io.parse_single_example(rec, FEATURES)
    return ex["x"], ex["y"]


def slow(x, y):
    def _sleep(x):
        time.sleep(SLEEP_S)
        return x
    x2 = tf.py_function(_sleep, [x], tf.float32)
    x2.set_shape(x.shape)
    return x2, y


def make_ds(files, slow_map):
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(parse, num_parallel_calls=1)
    ds = ds.batch(BATCH, drop_remainder=True)
    if slow_map:
        ds = ds.map(slow, num_parallel_calls=1)
    return ds.repeat().prefetch(1)


class ProfileSteps(keras.callbacks.Callback):
    """Profile batches FIRST..LAST, each wrapped in a step-marked Trace."""

    def __init__(self, logdir):
        super().__init__()
        self.logdir, self.trace = logdir, None

    def on_train_batch_begin(self, batch, logs=None):
        if batch == FIRST:
            tf.profiler.experimental.start(self.logdir)
        if FIRST <= batch <= LAST:
            self.trace = tf.profiler.experimental.Trace(
                "train", step_num=batch, _r=1)
            self.trace.__enter__()

    def on_train_batch_end(self, batch, logs=None):
        if self.trace is not None:
            self.trace.__exit__(None, None, None)
            self.trace = None
        if batch == LAST:
            tf.profiler.experimental.stop()


def run(variant):
    keras.utils.set_random_seed(0)
    tmp = tempfile.mkdtemp(prefix=f"fx-tf-{variant}-")
    try:
        files = write_tfrecords(tmp)
        ds = make_ds(files, slow_map=(variant == "slow_map"))
        model = keras.Sequential([
            keras.Input((DIM,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(10),
        ])
        model.compile(optimizer="adam",
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        logdir = os.path.join(tmp, "logdir")
        model.fit(ds, epochs=1, steps_per_epoch=STEPS, verbose=0,
                  callbacks=[ProfileSteps(logdir)])
        found = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
        assert len(found) == 1, found
        out = os.path.join(DATA, f"tf_keras_cpu_{variant}.xplane.pb")
        shutil.copyfile(found[0], out)
        print(out, os.path.getsize(out), "bytes")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    for v in (sys.argv[1:] or ["slow_map", "fast"]):
        assert v in ("slow_map", "fast"), v
        run(v)
