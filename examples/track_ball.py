#!/usr/bin/env python3
"""Tracks videotestsrc's moving ball with nccmatch from Python, reading the element's bus messages.

It finds the ball in the first frame, asks the element to cut its template from that frame (the
`grab-template` action signal: no image file), then runs
    videotestsrc pattern=ball ! GRAY8 ! nccmatch ! fakesink
and prints, per frame, where the ball was found. Exits 1 if any frame has no match.

With --follow it tracks as a tracker would: each match moves the element's search-region to a
window around it (a margin of one template size), so the next frame is searched there only; a
frame without a match widens the search to the whole frame again. The region is moved from a
synchronous bus handler, which runs in the streaming thread as the match is posted, so it applies
to the very next frame.

    python3 examples/track_ball.py [--frames N] [--device auto|cpu|cuda] [--follow]
(from a build folder: meson devenv -C build python3 examples/track_ball.py)
Needs python3-gi and python3-gst-1.0 (Debian 12), and the nccmatch plugin on GST_PLUGIN_PATH.
"""
import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

WIDTH, HEIGHT, SIDE = 320, 240, 40
CAPS = f"video/x-raw,format=GRAY8,width={WIDTH},height={HEIGHT},framerate=30/1"


def first_frame():
    """The first GRAY8 frame of the source, as bytes (row stride == WIDTH, a multiple of 4)."""
    pipeline = Gst.parse_launch(f"videotestsrc pattern=ball num-buffers=1 ! {CAPS} ! appsink name=sink sync=false")
    pipeline.set_state(Gst.State.PLAYING)
    sample = pipeline.get_by_name("sink").emit("pull-sample")
    buffer = sample.get_buffer()
    data = buffer.extract_dup(0, buffer.get_size())
    pipeline.set_state(Gst.State.NULL)
    return data


def ball_box(frame):
    """The top-left of a SIDE x SIDE box centred on the bright pixels' centroid."""
    xs = ys = count = 0
    for i, v in enumerate(frame[: WIDTH * HEIGHT]):
        if v > 128:
            xs += i % WIDTH
            ys += i // WIDTH
            count += 1
    if count == 0:
        raise SystemExit("no ball in the first frame")
    x0 = min(max(xs // count - SIDE // 2, 0), WIDTH - SIDE)
    y0 = min(max(ys // count - SIDE // 2, 0), HEIGHT - SIDE)
    return x0, y0


def follow_matches(bus, message, match, regions):
    """Synchronous bus handler: moves the search region to a window around the new match, and
    notes per frame timestamp the region the next frame will be searched in."""
    s = message.get_structure()
    if s is None or s.get_name() != "nccmatch":
        return
    matches = list(s.get_value("matches").array)
    region = ""  # lost: the whole frame again
    if matches:
        m = matches[0]
        x, y, w, h = (m.get_value(k) for k in ("x", "y", "width", "height"))
        x0, y0 = max(x - w, 0), max(y - h, 0)
        region = f"{x0},{y0},{x + 2 * w - x0},{y + 2 * h - y0}"
    match.set_property("search-region", region)
    regions[s.get_value("timestamp")] = region or "whole frame"


def track(box, frames, device, follow):
    """Runs the pipeline, the template cut from its first frame at `box`; returns the list of
    (frame, x, y, score) of the best match per frame."""
    pipeline = Gst.parse_launch(
        f"videotestsrc pattern=ball num-buffers={frames} ! {CAPS} ! nccmatch name=match "
        f"threshold=0.9 max-matches=1 display=false frames-in-flight=1 device={device} ! fakesink")
    if not pipeline.get_by_name("match").emit("grab-template", "ball", box[0], box[1], SIDE, SIDE):
        raise SystemExit("grab-template refused the box")
    bus = pipeline.get_bus()
    regions = {}
    if follow:
        bus.enable_sync_message_emission()
        bus.connect("sync-message::element", follow_matches, pipeline.get_by_name("match"), regions)
    pipeline.set_state(Gst.State.PLAYING)
    found = []
    frame = 0
    try:
        while True:
            msg = bus.timed_pop_filtered(
                10 * Gst.SECOND, Gst.MessageType.ERROR | Gst.MessageType.EOS | Gst.MessageType.ELEMENT)
            if msg is None:
                raise SystemExit("no message for 10 s")
            if msg.type == Gst.MessageType.ERROR:
                err, debug = msg.parse_error()
                raise SystemExit(f"pipeline error: {err.message} ({debug})")
            if msg.type == Gst.MessageType.EOS:
                return found
            s = msg.get_structure()
            if s.get_name() != "nccmatch":
                continue
            seconds = s.get_value("timestamp") / Gst.SECOND
            matches = list(s.get_value("matches").array)
            if matches:
                m = matches[0]
                found.append((frame, m.get_value("x"), m.get_value("y"), m.get_value("score")))
                region = regions.get(s.get_value("timestamp"), "?")
                print(f"frame {frame:3d}  t={seconds:6.3f}s  ball at ({m.get_value('sub-x'):7.2f}, "
                      f"{m.get_value('sub-y'):7.2f})  score {m.get_value('score'):.3f}"
                      + (f"  next search {region}" if follow else ""))
            else:
                print(f"frame {frame:3d}  t={seconds:6.3f}s  no match")
            frame += 1
    finally:
        pipeline.set_state(Gst.State.NULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--follow", action="store_true", help="search only around the last match")
    args = parser.parse_args()
    Gst.init(None)
    x0, y0 = ball_box(first_frame())
    print(f"template: {SIDE}x{SIDE} grabbed at ({x0}, {y0}) of the first frame")
    found = track((x0, y0), args.frames, args.device, args.follow)
    if not found or found[0][1:3] != (x0, y0):
        print("the first frame's match is not where the template was cut", file=sys.stderr)
        return 1
    if len(found) != args.frames:
        print(f"ball found in {len(found)} of {args.frames} frames", file=sys.stderr)
        return 1
    print(f"ball found in all {args.frames} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
