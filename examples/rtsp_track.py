#!/usr/bin/env python3
"""Tracks objects on an RTSP stream with nccmatch mode=track, reading the element's `nccmatch` bus messages.

    rtspsrc location=URL latency=MS ! decodebin ! videoconvert ! video/x-raw,format=GRAY8
        ! nccmatch templates=FILE[,FILE...] mode=track ! fakesink   (--show: ! autovideosink)

prints one line per frame (frame time, each track's id, state, position and score; the tracks
lost and ended in that frame). The element keeps the tracks: each match carries `track-id`
(an id that lasts while the object is followed, never reused) and `track-state` (new, tracked,
reacquired); --mode detect shows the plain per-frame matches instead (each template's best). With --serve, or without a URL, it serves its own stream
in-process (GstRtspServer: videotestsrc pattern=ball ! x264enc tune=zerolatency ! rtph264pay on a
free port of 127.0.0.1), cuts the ball's template from a frame of the same source, tracks it and
checks each position against the ball's known path and, in track mode, that the ball keeps one
track id over the whole stream; exits 77 (skip) when the server library, x264enc or an H.264
decoder is missing.

    python3 examples/rtsp_track.py rtsp://camera/stream --template cup.png [--frames N] [--show]
    python3 examples/rtsp_track.py --serve --frames 60
(from a build folder: meson devenv -C build python3 examples/rtsp_track.py ...)

Latency: track mode holds no frame (each frame's search windows come from the frame before); in
detect mode frames-in-flight=1 (the default here) pushes each frame as soon as it is matched, while
2-3 overlap the GPU upload of one frame with the matching of the previous at one frame duration of
latency each. rtspsrc's jitter buffer (--latency) usually dominates: lower it on a good network.

Exit status: 0 done (with --serve: the ball followed its path), 1 stream or tracking failure
(error, timeout, no frames), 2 bad arguments (missing template file), 77 --serve cannot run here.
Needs python3-gi, python3-gst-1.0, gstreamer1.0-plugins-good/-bad, an H.264 decoder
(gstreamer1.0-libav), and for --serve gir1.2-gst-rtsp-server-1.0 and gstreamer1.0-plugins-ugly.
"""
import argparse
import math
import os
import sys
import tempfile
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

SKIP = 77

# The served stream: videotestsrc's ball (radius 20) moves on a known path, one step per frame.
WIDTH, HEIGHT, FPS, BALL_RADIUS, SIDE = 320, 240, 30, 20, 40
RAW_CAPS = f"video/x-raw,width={WIDTH},height={HEIGHT},framerate={FPS}/1"
SERVED_LAUNCH = (f"( videotestsrc pattern=ball is-live=true ! {RAW_CAPS} ! "
                 f"x264enc tune=zerolatency speed-preset=ultrafast key-int-max={FPS} ! "
                 "rtph264pay name=pay0 pt=96 config-interval=1 )")


def ball_centre(n):
    """Where videotestsrc pattern=ball (motion=wavy, animation-mode=frames) centres the ball in frame n."""
    x = BALL_RADIUS + (0.5 + 0.5 * math.sin(2 * math.pi * n / 200)) * (WIDTH - 2 * BALL_RADIUS)
    y = BALL_RADIUS + (0.5 + 0.5 * math.sin(2 * math.pi * math.sqrt(2) * n / 200)) * (HEIGHT - 2 * BALL_RADIUS)
    return x, y


def fail(message, code=1):
    print(f"rtsp_track: {message}", file=sys.stderr)
    return code


def missing_elements(names):
    return [n for n in names if Gst.ElementFactory.find(n) is None]


def have_h264_decoder():
    decoders = Gst.ElementFactory.list_get_elements(
        Gst.ELEMENT_FACTORY_TYPE_DECODER | Gst.ELEMENT_FACTORY_TYPE_MEDIA_VIDEO, Gst.Rank.MARGINAL)
    return bool(Gst.ElementFactory.list_filter(
        decoders, Gst.Caps.from_string("video/x-h264"), Gst.PadDirection.SINK, False))


def serve_prerequisites_missing():
    """Why --serve cannot run here, or None."""
    try:
        gi.require_version("GstRtspServer", "1.0")
        from gi.repository import GstRtspServer  # noqa: F401
    except (ValueError, ImportError):
        return "GstRtspServer introspection missing (Debian: gir1.2-gst-rtsp-server-1.0)"
    missing = missing_elements(["videotestsrc", "x264enc", "rtph264pay", "rtspsrc", "rtph264depay"])
    if missing:
        return (f"missing elements {', '.join(missing)} (Debian: gstreamer1.0-plugins-ugly has x264enc, "
                "gstreamer1.0-plugins-good the RTP/RTSP elements)")
    if not have_h264_decoder():
        return "no H.264 decoder (Debian: gstreamer1.0-libav)"
    return None


class LocalServer:
    """An RTSP server on a free port of 127.0.0.1, run by a GLib main loop in its own thread."""

    def __init__(self, launch):
        gi.require_version("GstRtspServer", "1.0")
        from gi.repository import GstRtspServer
        self.context = GLib.MainContext()
        self.server = GstRtspServer.RTSPServer(address="127.0.0.1", service="0")
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch)
        self.server.get_mount_points().add_factory("/ball", factory)
        self.source_id = self.server.attach(self.context)
        if self.source_id == 0:
            raise RuntimeError("the RTSP server could not bind 127.0.0.1")
        self.url = f"rtsp://127.0.0.1:{self.server.get_bound_port()}/ball"
        self.loop = GLib.MainLoop(self.context)
        self.thread = threading.Thread(target=self.loop.run, daemon=True)
        self.thread.start()

    def stop(self):
        self.loop.quit()
        self.thread.join(timeout=5)


def first_raw_frame():
    """Frame 0 of the served source, uncompressed, as GRAY8 bytes (row stride == WIDTH)."""
    pipeline = Gst.parse_launch(f"videotestsrc pattern=ball num-buffers=1 ! {RAW_CAPS},format=GRAY8 ! "
                                "appsink name=sink sync=false")
    pipeline.set_state(Gst.State.PLAYING)
    sample = pipeline.get_by_name("sink").emit("try-pull-sample", 10 * Gst.SECOND)
    pipeline.set_state(Gst.State.NULL)
    if sample is None:
        raise RuntimeError("videotestsrc gave no frame")
    buffer = sample.get_buffer()
    return buffer.extract_dup(0, buffer.get_size())


def cut_ball_template(frame, path):
    """Writes a SIDE x SIDE PGM around the bright pixels; returns the ball centre inside it."""
    xs = ys = count = 0
    for y in range(HEIGHT):
        row = frame[y * WIDTH:(y + 1) * WIDTH]
        if max(row) <= 128:
            continue
        for x, v in enumerate(row):
            if v > 128:
                xs, ys, count = xs + x, ys + y, count + 1
    if count == 0:
        raise RuntimeError("no ball in the first frame")
    cx, cy = xs / count, ys / count
    x0 = min(max(round(cx) - SIDE // 2, 0), WIDTH - SIDE)
    y0 = min(max(round(cy) - SIDE // 2, 0), HEIGHT - SIDE)
    rows = b"".join(frame[(y0 + r) * WIDTH + x0:(y0 + r) * WIDTH + x0 + SIDE] for r in range(SIDE))
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (SIDE, SIDE) + rows)
    return cx - x0, cy - y0


def client_launch(args):
    """The client pipeline; location and templates are set on the parsed elements (no quoting)."""
    protocols = " protocols=tcp" if args.tcp else ""
    sink = ("videoconvert ! autovideosink sync=false" if args.show else "fakesink sync=false")
    # tcp-timeout (µs) bounds the connect to an unreachable host; the bus loop bounds the rest.
    return (f"rtspsrc name=src latency={args.latency}{protocols} "
            f"tcp-timeout={args.timeout * 1000000} ! decodebin ! videoconvert ! "
            f"video/x-raw,format={args.format} ! "
            f"nccmatch name=match threshold={args.threshold} max-matches={args.max_matches} mode={args.mode} "
            f"frames-in-flight={args.frames_in_flight} device={args.device} "
            f"display={'true' if args.show else 'false'} ! {sink}")


class Tracker:
    """Turns the element's per-frame `nccmatch` messages into printed lines.

    Track mode: one entry per track (id, state, position, score), and the ids lost and ended in
    the frame. Detect mode: each template's best match, and when a template is lost and found."""

    def __init__(self, names, mode):
        self.names = names
        self.mode = mode
        self.visible = {name: None for name in names}  # None: not seen yet
        self.track = []  # (frame, pts in s, {name: (sub-x, sub-y, score)}) with each name's best
        self.ids = {name: [] for name in names}  # track mode: each name's track id per frame seen

    def on_frame(self, structure):
        frame = len(self.track)
        seconds = structure.get_value("timestamp") / Gst.SECOND
        best = {}
        parts = []
        for m in structure.get_value("matches").array:
            name = m.get_value("name")
            x, y, score = m.get_value("sub-x"), m.get_value("sub-y"), m.get_value("score")
            if self.mode == "track":
                track_id, state = m.get_value("track-id"), m.get_value("track-state")
                parts.append(f"{name}#{track_id} {state:10s} ({x:7.2f}, {y:7.2f}) {score:.3f}")
                if name not in best:
                    self.ids[name].append(track_id)
            if name not in best:  # best first
                best[name] = (x, y, score)
        if self.mode == "track":
            lost = list(structure.get_value("lost-tracks").array)
            ended = list(structure.get_value("ended-tracks").array)
            extra = (f"  lost {lost}" if lost else "") + (f"  ended {ended}" if ended else "")
            print(f"frame {frame:4d}  t={seconds:8.3f}s  " + ("  ".join(parts) or "-") + extra)
        else:
            for name in self.names:
                if name in best:
                    x, y, score = best[name]
                    parts.append(f"{name} ({x:7.2f}, {y:7.2f}) {score:.3f}")
                else:
                    parts.append(f"{name} -")
            print(f"frame {frame:4d}  t={seconds:8.3f}s  " + "  ".join(parts))
            for name in self.names:
                now = name in best
                if now and self.visible[name] is not True:
                    print(f"  found {name} at ({best[name][0]:.1f}, {best[name][1]:.1f})")
                elif not now and self.visible[name] is True:
                    print(f"  lost {name}")
                self.visible[name] = now
        self.track.append((frame, seconds, best))


def run_pipeline(url, templates, args, tracker):
    """Plays the client until args.frames frames (0: until EOS); returns an error text or None."""
    frames, timeout = args.frames, args.timeout
    pipeline = Gst.parse_launch(client_launch(args))
    pipeline.get_by_name("src").set_property("location", url)
    pipeline.get_by_name("match").set_property("templates", ",".join(templates))
    bus = pipeline.get_bus()
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        msg = bus.pop_filtered(Gst.MessageType.ERROR)
        pipeline.set_state(Gst.State.NULL)
        return msg.parse_error()[0].message if msg else "the pipeline could not start"
    wanted = Gst.MessageType.ERROR | Gst.MessageType.EOS | Gst.MessageType.ELEMENT
    try:
        deadline = time.monotonic() + timeout  # other element messages do not extend the wait for a frame
        while frames == 0 or len(tracker.track) < frames:
            left = deadline - time.monotonic()
            msg = bus.timed_pop_filtered(int(max(left, 0) * Gst.SECOND), wanted) if left > 0 else None
            if msg is None:
                what = "first frame" if not tracker.track else "next frame"
                return f"no {what} within {timeout} s"
            if msg.type == Gst.MessageType.ERROR:
                err, debug = msg.parse_error()
                return f"{msg.src.get_name()}: {err.message}" + (f" ({debug})" if debug else "")
            if msg.type == Gst.MessageType.EOS:
                return None if tracker.track else "the stream ended before any frame"
            s = msg.get_structure()
            if s is not None and s.get_name() == "nccmatch":
                tracker.on_frame(s)
                deadline = time.monotonic() + timeout
        return None
    finally:
        pipeline.set_state(Gst.State.NULL)


def follows_ball_path(track, offset, tolerance=3.0, search=600):
    """How many frames put the ball within `tolerance` px of its path, at the best start frame.

    The stream's first frame is some frame k of the source; a later frame is k plus its time since
    the first in frame intervals. The interval is the median one seen, not 1/FPS: rtspsrc's jitter
    buffer corrects the sender's clock skew, which stretches timestamps by a percent or so. One
    frame of slack either way absorbs that jitter; the ball moves 4-5 px a frame, more than the
    tolerance, so the check still fails for a position that is off the path or out of time.
    k is found by trying every start in [0, search)."""
    times = [seconds for _, seconds, _ in track]
    intervals = sorted(b - a for a, b in zip(times, times[1:]) if b > a)
    interval = intervals[len(intervals) // 2] if intervals else 1 / FPS
    steps = [(round((seconds - times[0]) / interval), best["ball"]) for _, seconds, best in track
             if "ball" in best]

    def near(point, n):
        ex, ey = ball_centre(n)
        return abs(point[0] - ex) <= tolerance and abs(point[1] - ey) <= tolerance

    def fits(k):
        return sum(any(near((m[0] + offset[0], m[1] + offset[1]), k + step + slack) for slack in (0, -1, 1))
                   for step, m in steps)

    start = max(range(search), key=fits)
    return fits(start), start


def serve_and_track(args):
    reason = serve_prerequisites_missing()
    if reason:
        print(f"rtsp_track: skipped: {reason}", file=sys.stderr)
        return SKIP
    with tempfile.TemporaryDirectory() as folder:
        if args.template:
            templates, offset = args.template, None
        else:
            templates = [os.path.join(folder, "ball.pgm")]
            offset = cut_ball_template(first_raw_frame(), templates[0])
            print(f"template: {SIDE}x{SIDE} ball cut from frame 0, ball centre at "
                  f"({offset[0]:.1f}, {offset[1]:.1f}) in it")
        server = LocalServer(SERVED_LAUNCH)
        print(f"serving {server.url}")
        args.tcp = True  # interleaved in the RTSP connection: no UDP ports to open
        tracker = Tracker([template_name(t) for t in templates], args.mode)
        try:
            error = run_pipeline(server.url, templates, args, tracker)
        finally:
            server.stop()
    if error:
        return fail(error)
    if offset is None:
        return 0
    good, start = follows_ball_path(tracker.track, offset)
    total = len(tracker.track)
    print(f"ball on its path in {good} of {total} frames (stream starts at source frame {start})")
    if good < 0.9 * total or total < args.frames:
        return fail(f"the ball was on its path in only {good} of {total} frames")
    if args.mode == "track":
        ids = sorted(set(tracker.ids["ball"]))
        print(f"ball track ids over the stream: {ids}")
        if len(ids) != 1:
            return fail(f"the ball's track id changed over the stream: {ids}")
    return 0


def template_name(path):
    return os.path.splitext(os.path.basename(path))[0]


def track_url(args):
    missing = missing_elements(["rtspsrc", "decodebin", "videoconvert", "nccmatch"])
    if missing:
        return fail(f"missing elements: {', '.join(missing)}")
    tracker = Tracker([template_name(t) for t in args.template], args.mode)
    error = run_pipeline(args.url, args.template, args, tracker)
    if error:
        return fail(f"{args.url}: {error}")
    for name in tracker.names:
        seen = sum(name in best for _, _, best in tracker.track)
        print(f"{name}: found in {seen} of {len(tracker.track)} frames")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", nargs="?", help="rtsp://host[:port]/path (omit, or --serve, for a local stream)")
    parser.add_argument("--template", action="append", default=[],
                        help="image to find (PNG, JPEG, PGM...); repeat for several; with --serve: optional")
    parser.add_argument("--serve", action="store_true", help="serve videotestsrc's ball in-process and track it")
    parser.add_argument("--frames", type=int, default=None, help="stop after N frames (default: 60 with --serve, "
                        "else run until the stream ends)")
    parser.add_argument("--show", action="store_true", help="draw the matches and show the video")
    parser.add_argument("--latency", type=int, default=None, help="rtspsrc jitter buffer in ms "
                        "(default 200; 50 with --serve)")
    parser.add_argument("--tcp", action="store_true", help="RTP interleaved over the RTSP connection")
    parser.add_argument("--threshold", type=float, default=0.8, help="lowest NCC score of a match (default 0.8)")
    parser.add_argument("--mode", default="track", choices=["track", "detect"],
                        help="element property: track (default: ids that last) or detect (each frame on its own)")
    parser.add_argument("--max-matches", type=int, default=4,
                        help="element property: objects of one template per frame (default 4; the served ball is one)")
    parser.add_argument("--format", default="GRAY8", choices=["GRAY8", "NV12", "I420"])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--frames-in-flight", type=int, default=1, choices=[0, 1, 2, 3],
                        help="element property, detect mode: 1 (default) for the lowest latency; 0 auto; 2-3 "
                        "overlap GPU upload and matching at one frame of latency each (track mode holds none)")
    parser.add_argument("--timeout", type=int, default=10, help="seconds to wait for the connection and "
                        "for each frame (default 10)")
    args = parser.parse_args()
    serve = args.serve or args.url is None
    if args.frames is None:
        args.frames = 60 if serve else 0
    if args.latency is None:
        args.latency = 50 if serve else 200
    if args.frames < 0 or args.timeout <= 0 or (serve and args.frames == 0):
        return fail("--frames must be >= 0 (> 0 with --serve) and --timeout > 0", 2)
    if args.max_matches < 1:
        return fail("--max-matches must be >= 1", 2)
    if args.show and sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                              or os.environ.get("WAYLAND_DISPLAY")):
        return fail("--show needs a display (DISPLAY or WAYLAND_DISPLAY is not set)", 2)
    if not serve and not args.template:
        return fail("a URL needs at least one --template", 2)
    for path in args.template:
        if not os.path.isfile(path):
            return fail(f"template file not found: {path}", 2)
    args.template = [os.path.abspath(t) for t in args.template]
    if any("," in t for t in args.template):
        return fail("template paths may not contain ',' (the element's list separator)", 2)
    Gst.init(None)
    if Gst.ElementFactory.find("nccmatch") is None:
        return fail("the nccmatch element is not found: set GST_PLUGIN_PATH to the plugin's build folder "
                    "or run under meson devenv")
    try:
        return serve_and_track(args) if serve else track_url(args)
    except KeyboardInterrupt:
        return fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
