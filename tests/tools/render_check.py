#!/usr/bin/python3
"""Checks that an HTML page or SVG file renders in a real browser: headless
Chromium takes a screenshot, which must not be blank, and dumps the DOM, whose
text must hold the texts asked for. For the dump-context report and plots
(dumpwatch report, NAME.svg).

usage: render_check.py screenshot FILE.html|FILE.svg OUT.png
           [--expect TEXT]... [--literal TEXT]... [--no-element TAG]...
           [--min-ink PERCENT] [--timeout SECONDS] [--chromium PATH]

  --expect TEXT     the page's text (the DOM's text nodes, <style> and <script>
                    left out) holds TEXT, runs of white space counted as one
  --literal TEXT    the page's text holds TEXT exactly, character for
                    character (markup in a name must show as text: "<b>x</b>")
  --no-element TAG  the DOM holds no element TAG (e.g. script)
  --min-ink PERCENT the screenshot is blank unless more than PERCENT of its
                    pixels (default 1) differ from the background (its most
                    common colour); it must also have more than 2 colours

The window is 1200x1600 for a page; an SVG is shot in a window of its own
size (its width and height attributes, else its viewBox), so the share of
ink is of the plot, not of an empty window around it.

Prints one line: "render_check: ok: ..." or "render_check: FAIL: why".
Exit status: 0 ok, 1 a check failed (or Chromium failed), 2 bad usage,
77 Chromium or PIL is not installed (a test can skip).

Chromium runs with --no-sandbox (it refuses to run as root otherwise), a
fresh --user-data-dir and HOME in a temporary directory, and under a timeout
after which its whole process group is killed.
"""

import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

WINDOW = (1200, 1600)
# A screenshot is blank unless more than --min-ink of its pixels differ from
# the background colour (its most common one) and it has more than this many
# colours.
MIN_COLOURS = 2


def verdict(ok, text):
    print("render_check: %s: %s" % ("ok" if ok else "FAIL", text))
    return 0 if ok else 1


class TextCollector(HTMLParser):
    """The text nodes of a document, as the DOM's textContent would join
    them, leaving out <style> and <script>; and every element's tag name."""

    SKIP = {"style", "script"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.tags = set()
        self.skip_depth = 0

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag.lower())
        if tag.lower() in self.SKIP:
            self.skip_depth += 1

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag.lower())

    def handle_endtag(self, tag):
        if tag.lower() in self.SKIP and self.skip_depth > 0:
            self.skip_depth -= 1

    def handle_data(self, data):
        if self.skip_depth == 0:
            self.parts.append(data)

    def text(self):
        return "".join(self.parts)


def run_chromium(chromium, args, timeout, workdir):
    """Runs Chromium with args; returns (returncode, stdout, stderr).
    On timeout kills its process group and raises TimeoutError."""
    env = dict(os.environ)
    env["HOME"] = os.path.join(workdir, "home")
    os.makedirs(env["HOME"], exist_ok=True)
    profile = tempfile.mkdtemp(prefix="profile-", dir=workdir)
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--no-default-browser-check", "--disable-extensions",
           "--user-data-dir=" + profile] + args
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise TimeoutError("chromium did not finish within %gs" % timeout)
    # Helpers Chromium started in its session may outlive it briefly.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.returncode, out, err


def svg_window(path):
    """The window an SVG file is shot in: its own size in whole pixels, from
    its root's width and height (plain or px numbers), else its viewBox;
    WINDOW when neither says."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return WINDOW

    def px(value):
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(px)?\s*", value or "")
        return float(m.group(1)) if m else None

    w, h = px(root.get("width")), px(root.get("height"))
    if not (w and h):
        box = (root.get("viewBox") or "").replace(",", " ").split()
        try:
            w, h = float(box[2]), float(box[3])
        except (IndexError, ValueError):
            return WINDOW
    if not (1 <= w <= 10000 and 1 <= h <= 10000):
        return WINDOW
    return (int(round(w)), int(round(h)))


def check_png(path, min_ink):
    """(ok, description) of whether the PNG at path is not blank."""
    from PIL import Image

    with Image.open(path) as im:
        rgb = im.convert("RGB")
        w, h = rgb.size
        colours = rgb.getcolors(maxcolors=w * h)
    total = w * h
    if not colours or total == 0:
        return False, "%s: an empty image" % path
    background_count, background = max(colours)
    ink = (total - background_count) / total
    desc = "%dx%d, %.1f%% not background #%02x%02x%02x, %d colours" % (
        w, h, 100 * ink, background[0], background[1], background[2], len(colours))
    if ink <= min_ink or len(colours) <= MIN_COLOURS:
        return False, "%s looks blank (%s)" % (path, desc)
    return True, desc


def normalize(s):
    return " ".join(s.split())


def screenshot(opts):
    if opts.chromium:
        chromium = shutil.which(opts.chromium)
        if not chromium:
            return verdict(False, "--chromium %s: not an executable" % opts.chromium)
    else:
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("render_check: SKIP: chromium is not installed")
        return 77
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("render_check: SKIP: python3-pil is not installed")
        return 77
    src = pathlib.Path(opts.file).resolve()
    if not src.is_file():
        return verdict(False, "%s: no such file" % opts.file)
    url = src.as_uri()
    window = svg_window(str(src)) if src.suffix.lower() == ".svg" else WINDOW
    out_png = pathlib.Path(opts.out).resolve()
    if out_png.exists():
        out_png.unlink()

    with tempfile.TemporaryDirectory(prefix="render_check-") as work:
        try:
            rc, _, err = run_chromium(chromium, ["--window-size=%d,%d" % window, "--screenshot=" + str(out_png), url],
                                      opts.timeout, work)
        except TimeoutError as e:
            return verdict(False, "screenshot of %s: %s" % (opts.file, e))
        if rc != 0 or not out_png.is_file():
            last = (err.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            return verdict(False, "screenshot of %s: chromium exited %d without %s: %s" % (opts.file, rc, out_png,
                                                                                          last))
        ok, png_desc = check_png(str(out_png), opts.min_ink / 100.0)
        if not ok:
            return verdict(False, png_desc)

        try:
            rc, dom, err = run_chromium(chromium, ["--dump-dom", url], opts.timeout, work)
        except TimeoutError as e:
            return verdict(False, "DOM of %s: %s" % (opts.file, e))
        if rc != 0 or not dom.strip():
            last = (err.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            return verdict(False, "DOM of %s: chromium exited %d with no DOM: %s" % (opts.file, rc, last))

    parser = TextCollector()
    parser.feed(dom.decode("utf-8", errors="replace"))
    parser.close()
    text = parser.text()
    flat = normalize(text)
    for tag in opts.no_element:
        if tag.lower() in parser.tags:
            return verdict(False, "%s: the DOM holds a <%s> element" % (opts.file, tag))
    for want in opts.expect:
        if normalize(want) not in flat:
            return verdict(False, "%s: the text does not hold %r" % (opts.file, want))
    for want in opts.literal:
        if want not in text:
            return verdict(False, "%s: the text does not hold exactly %r" % (opts.file, want))
    checks = len(opts.expect) + len(opts.literal) + len(opts.no_element)
    return verdict(True, "%s: screenshot %s (%s); %d text check%s passed" % (
        opts.file, out_png, png_desc, checks, "" if checks == 1 else "s"))


def main(argv):
    ap = argparse.ArgumentParser(prog="render_check.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sp = sub.add_parser("screenshot", help="screenshot FILE and check its DOM text")
    sp.add_argument("file", help="the .html or .svg file")
    sp.add_argument("out", help="where the PNG goes")
    sp.add_argument("--expect", action="append", default=[], metavar="TEXT",
                    help="the text holds TEXT (white space runs as one)")
    sp.add_argument("--literal", action="append", default=[], metavar="TEXT",
                    help="the text holds TEXT exactly")
    sp.add_argument("--no-element", action="append", default=[], metavar="TAG",
                    help="the DOM holds no element TAG")
    sp.add_argument("--min-ink", type=float, default=1.0, metavar="PERCENT",
                    help="share of pixels that must differ from the background (default 1)")
    sp.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                    help="per Chromium run (default 60)")
    sp.add_argument("--chromium", metavar="PATH", help="the browser (default: chromium on PATH)")
    opts = ap.parse_args(argv)
    if opts.command == "screenshot":
        return screenshot(opts)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
