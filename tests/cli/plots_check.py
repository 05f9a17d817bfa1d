#!/usr/bin/env python3
"""End-to-end checks of trainsim's pictures, with python3's standard library only.

Usage: plots_check.py TRAINSIM SOURCE_DIR MODE    (MODE: svg | png | html | chromium)

  svg       `sweep --plot x.svg` is well-formed XML (xml.etree) with one point marker per point that ran
            and one line per series, titles and tick labels.
  png       `sweep --plot x.png` (rsvg-convert) is a PNG that is not blank.
  html      `run --html` parses (html.parser), has no external resources, and shows the report's figures.
  chromium  headless Chromium renders the HTML report; its screenshot is not blank.

Exit 0: pass; 1: fail; 77: skipped because a tool (rsvg-convert, chromium) is not installed.
"""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SKIP = 77
SVG = "{http://www.w3.org/2000/svg}"


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        fail(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def png_pixels(path):
    """Decodes an 8-bit, non-interlaced RGB or RGBA PNG; returns (width, height, channels, rows)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace != 0:
        fail(f"{path}: unsupported PNG layout (depth {depth}, color type {color}, interlace {interlace})")
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, channels, rows


def non_white_fraction(path):
    width, height, channels, rows = png_pixels(path)
    dark = 0
    for line in rows:
        for x in range(0, len(line), channels):
            alpha = line[x + 3] if channels == 4 else 255
            if alpha > 0 and min(line[x], line[x + 1], line[x + 2]) < 200:
                dark += 1
    return width, height, dark / (width * height)


def sweep(trainsim, src, tmp, plot):
    scenario = os.path.join(src, "scenarios", "gpt3-6.7b-a100-8.json")
    out = run([trainsim, "sweep", scenario, "--set-range", "training.micro_batch=1,2,3,4", "--format", "json",
               "--plot", plot])
    return json.loads(out)


def check_svg(trainsim, src, tmp):
    path = os.path.join(tmp, "sweep.svg")
    result = sweep(trainsim, src, tmp, path)
    ran = [p for p in result["points"] if "error" not in p]
    if len(result["points"]) != 4 or len(ran) != 3:
        fail(f"expected 4 points, 3 of them runnable (3 does not divide the batch): {result['points']}")
    root = ET.parse(path).getroot()  # raises on malformed XML
    if root.tag != SVG + "svg":
        fail(f"root element is {root.tag}")
    points = [c for c in root.iter(SVG + "circle") if c.get("class") == "point"]
    # Panel 1: tokens/s (3 points); panel 2: MFU and efficiency (3 points each).
    if len(points) != 9:
        fail(f"expected 9 point markers, found {len(points)}")
    lines = list(root.iter(SVG + "polyline"))
    if len(lines) != 3:
        fail(f"expected 3 curves, found {len(lines)}")
    texts = [t.text or "" for t in root.iter(SVG + "text")]
    for needed in ("tokens/s", "%", "training.micro_batch (log2 scale)"):
        if needed not in texts:
            fail(f"no text '{needed}' in the SVG (axis titles): {texts}")
    if not any("throughput" in t for t in texts):
        fail("no panel title with 'throughput'")
    print(f"svg ok: {len(points)} points, {len(lines)} curves, {os.path.getsize(path)} bytes")


def check_png(trainsim, src, tmp):
    if shutil.which("rsvg-convert") is None:
        print("SKIP: rsvg-convert (Debian package librsvg2-bin) is not installed")
        sys.exit(SKIP)
    path = os.path.join(tmp, "sweep.png")
    sweep(trainsim, src, tmp, path)
    width, height, dark = non_white_fraction(path)
    if dark < 0.005:
        fail(f"{path} ({width}x{height}) is blank: {dark:.4%} non-white pixels")
    print(f"png ok: {width}x{height}, {dark:.2%} non-white pixels")


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.external, self.stack = {}, [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name in ("src",) or (tag == "link" and name == "href"):
                self.external.append(f"<{tag} {name}={value}>")
        if tag not in ("meta", "br", "img", "link", "input", "hr"):
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            fail(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def html_report(trainsim, src, tmp, backend="analytic"):
    path = os.path.join(tmp, "report.html")
    scenario = os.path.join(src, "scenarios", "gpt3-6.7b-a100-8.json")
    report = json.loads(run([trainsim, "run", scenario, "--backend", backend, "--format", "json", "--html", path,
                             "--timeline", os.path.join(tmp, "tl.json")]))
    return path, report


def check_html(trainsim, src, tmp):
    path, report = html_report(trainsim, src, tmp, "simgrid")
    page = Page()
    page.feed(open(path, encoding="utf-8").read())
    page.close()
    if page.stack:
        fail(f"unclosed elements: {page.stack}")
    if page.external:
        fail(f"external resources: {page.external}")
    if page.tags.get("svg", 0) != 2 or page.tags.get("style", 0) != 1:
        fail(f"expected 2 inline SVG charts and 1 style element: {page.tags}")
    text = "".join(page.text)
    expected = [report["scenario"], f"{report['iteration_time_s']:.4f} s", f"{report['tokens_per_s']:.0f} tokens/s",
                f"{100 * report['mfu']:.1f}%", "tl.json", "Most utilized links",
                report["network"]["top_links"][0]["link"],
                # issue 28: the band beside the iteration time and the envelope's summary
                f"{report['bands']['iteration_time_s']['low']:.4f} s - {report['bands']['iteration_time_s']['high']:.4f} s",
                report["envelope"]["summary"]]
    for needed in expected:
        if needed not in text:
            fail(f"'{needed}' not in the HTML text")
    print(f"html ok: {os.path.getsize(path)} bytes, {page.tags.get('tr', 0)} table rows")


def check_chromium(trainsim, src, tmp):
    browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser is None:
        print("SKIP: no chromium binary (Debian package chromium) on PATH")
        sys.exit(SKIP)
    path, _ = html_report(trainsim, src, tmp)
    shot = os.path.join(tmp, "shot.png")
    profile = os.path.join(tmp, "profile")
    # --no-sandbox: the test may run as root (containers), where Chromium's sandbox refuses to start.
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        f"--user-data-dir={profile}", "--hide-scrollbars", "--window-size=1000,1300",
                        f"--screenshot={shot}", "file://" + os.path.abspath(path)],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not os.path.exists(shot):
        fail(f"{browser} failed (exit {p.returncode}): {p.stderr.strip()[-2000:]}")
    width, height, dark = non_white_fraction(shot)
    if dark < 0.01:
        fail(f"screenshot {width}x{height} is blank: {dark:.4%} non-white pixels")
    print(f"chromium ok: screenshot {width}x{height}, {dark:.2%} non-white pixels")


def main():
    trainsim, src, mode = sys.argv[1:4]
    checks = {"svg": check_svg, "png": check_png, "html": check_html, "chromium": check_chromium}
    with tempfile.TemporaryDirectory() as tmp:
        checks[mode](trainsim, src, tmp)


if __name__ == "__main__":
    main()
