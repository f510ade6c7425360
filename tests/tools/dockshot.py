#!/usr/bin/env python3
# Reads screenshots of a dock (test_dock.sh): what changed against the
# screenshot taken before the watch, and whether that is a progress bar, a
# count badge, or nothing.
#
#   dockshot.py drawn SHOT            the dock is drawn (enough pixels not black)
#   dockshot.py same A B              A and B are the same picture
#   dockshot.py bar BEFORE SHOT [N]   a progress bar (filled over N columns or more) and no badge
#   dockshot.py badge BEFORE SHOT     a count badge and no progress bar
#   dockshot.py clear BEFORE SHOT     nothing changed
#
# Prints one JSON line of what it measured; exits 0 when it holds, 1 when not.
#
# What Plank 0.11.89 (its Default theme) draws, as measured under Xvfb: the
# badge is a red disc (about 23 px across for a 48 px icon, some 350 pixels
# of pure red: R above 150, G and B below 110) with the count in white (the
# digit 1: 18 pixels), at the icon's top right; the progress bar is a flat
# strip (about 38 x 7 px) at the icon's bottom, dark grey where empty and
# light grey where full. Neither red nor light grey is in the icon, nor
# anywhere in the picture before.
import json
import sys

from PIL import Image, ImageChops

CHANGED = 40  # a channel differing by more than this: the pixel changed


def load(path):
    return Image.open(path).convert("RGB")


def is_red(p):
    r, g, b = p
    return r >= 150 and g <= 110 and b <= 110 and r - max(g, b) >= 80


def bbox(points):
    if not points:
        return None
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return (min(xs), min(ys), max(xs), max(ys))


def measure(before, shot):
    if before.size != shot.size:
        raise SystemExit("dockshot: the pictures differ in size: %r, %r" % (before.size, shot.size))
    w = shot.width
    diff = ImageChops.difference(before, shot).getdata()
    now, was = shot.getdata(), before.getdata()
    changed, red = [], []
    for i, d in enumerate(diff):
        if max(d) > CHANGED:
            pt = (i % w, i // w)
            changed.append(pt)
            if is_red(now[i]) and not is_red(was[i]):
                red.append(pt)
    rb = bbox(red)
    # What changed beside the badge (and its white digit and rim, within
    # 4 px of its red): the bar, if anything.
    if rb:
        other = [p for p in changed if not (rb[0] - 4 <= p[0] <= rb[2] + 4 and rb[1] - 4 <= p[1] <= rb[3] + 4)]
    else:
        other = changed
    ob = bbox(other)
    # The count's digits: white on the red.
    digit = 0
    if rb:
        digit = sum(1 for (x, y) in changed if rb[0] <= x <= rb[2] and rb[1] <= y <= rb[3] and min(now[y * w + x]) >= 200)
    # The bar's filled part: the columns of it drawn light.
    fill = len({x for (x, y) in other if min(now[y * w + x]) >= 150})
    m = {"changed": len(changed), "red": len(red), "red_box": rb, "digit": digit, "other": len(other), "other_box": ob,
         "fill": fill}
    badge = len(red) >= 100 and rb[2] - rb[0] < 48 and rb[3] - rb[1] < 48 and digit >= 10
    bar = False
    if ob and len(other) >= 30:
        bw, bh = ob[2] - ob[0] + 1, ob[3] - ob[1] + 1
        bar = bw >= 20 and bw >= 3 * bh and bh <= 14
    m.update(badge=badge, bar=bar)
    return m


def main(argv):
    if len(argv) == 3 and argv[1] == "drawn":
        shot = load(argv[2])
        lit = sum(1 for p in shot.getdata() if max(p) > 40)
        print(json.dumps({"lit": lit}))
        return 0 if lit >= 500 else 1
    if len(argv) == 4 and argv[1] == "same":
        d = ImageChops.difference(load(argv[2]), load(argv[3])).getbbox()
        print(json.dumps({"differ": d}))
        return 0 if d is None else 1
    if (len(argv) == 4 and argv[1] in ("bar", "badge", "clear")) or (len(argv) == 5 and argv[1] == "bar"):
        m = measure(load(argv[2]), load(argv[3]))
        print(json.dumps(m))
        if argv[1] == "bar":
            ok = m["bar"] and m["red"] == 0 and m["fill"] >= (int(argv[4]) if len(argv) == 5 else 0)
        elif argv[1] == "badge":
            ok = m["badge"] and m["other"] < 15
        else:
            ok = m["changed"] <= 10
        return 0 if ok else 1
    print("usage: dockshot.py drawn SHOT | same A B | bar BEFORE SHOT [N] | badge|clear BEFORE SHOT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
