#!/usr/bin/env python3
# needs: build/stowaway
"""stowaway flame: the SVG is well-formed with frames proportional to their
values; the HTML page is rendered in headless Chromium, checked on the
screenshot (not blank, frame colours, search highlight width) and on the
DOM after scripted search, click-to-zoom and reset."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.dom.minidom
import zlib
from checks import check_terse, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "stowaway")
TESTDATA = os.path.join(ROOT, "src", "cli", "testdata")
WIDTH = 1200
FLAME_WIDTH = WIDTH - 20  # the page's side margins


def check(name, ok, detail=""):
    return check_terse(name, ok, str(detail)[:600])


def chromium(tmp, *args):
    profile = tempfile.mkdtemp(prefix="chromium.", dir=tmp)
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile,
           "--window-size=%d,400" % WIDTH, "--hide-scrollbars"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def read_png(path):
    """RGB rows of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return rows


def longest_run(row, colour, tolerance=12):
    best = run = 0
    for px in row:
        if all(abs(px[i] - colour[i]) <= tolerance for i in range(3)):
            run += 1
            best = max(best, run)
        else:
            run = 0
    return best


def inject(html, script):
    return html.replace("</body>", "<script>\n" + script + "\n</script>\n</body>")


SEARCH = """
const box=document.getElementById('search');
box.value='^parse$'; box.dispatchEvent(new Event('input'));
"""

INTERACT = """
const result={};
const frames=()=>Array.from(document.querySelectorAll('#flame .f'));
const find=n=>frames().find(d=>d.textContent===n);
const box=document.getElementById('search');
result.initial=frames().length;
box.value='^parse$'; box.dispatchEvent(new Event('input'));
result.matched=document.getElementById('matched').textContent;
result.highlighted=frames().filter(d=>d.classList.contains('hl')).map(d=>d.textContent);
box.value=''; box.dispatchEvent(new Event('input'));
result.after_clear=frames().filter(d=>d.classList.contains('hl')).length;
find('render').dispatchEvent(new MouseEvent('click',{bubbles:true}));
const W=document.getElementById('flame').clientWidth;
result.flame_width=W;
result.render_width=parseFloat(find('render').style.width);
result.zoomed_names=frames().map(d=>d.textContent).sort();
result.ancestors=frames().filter(d=>d.classList.contains('anc')).map(d=>d.textContent).sort();
find('render').dispatchEvent(new MouseEvent('mouseover',{bubbles:true}));
result.details=document.getElementById('details').textContent;
document.getElementById('reset').click();
result.after_reset=frames().length;
const pre=document.createElement('pre'); pre.id='result'; pre.textContent=JSON.stringify(result);
document.body.appendChild(pre);
"""


def main():
    tmp = tempfile.mkdtemp(prefix="stowaway-cli-flame.")
    try:
        body(tmp)
    finally:
        shutil.rmtree(tmp)
    sys.exit(status())


def body(tmp):
    pb = os.path.join(tmp, "known.pb")
    with open(os.path.join(TESTDATA, "known_base.txtpb"), "rb") as f:
        data = subprocess.run(["protoc", "--proto_path=" + os.path.join(ROOT, "tests"), "--encode=perftools.profiles.Profile",
                               "profile.proto"], input=f.read(), capture_output=True, check=True).stdout
    with open(pb, "wb") as f:
        f.write(data)

    # SVG: well-formed, one rect per frame, widths proportional to values.
    svg = os.path.join(tmp, "f.svg")
    r = subprocess.run([CLI, "flame", pb, "-o", svg], capture_output=True, text=True)
    check("svg_written", r.returncode == 0, r.stderr)
    try:
        doc = xml.dom.minidom.parse(svg)
        check("svg_well_formed", True)
    except Exception as e:  # noqa: BLE001
        check("svg_well_formed", False, e)
        return
    widths = {}
    for g in doc.getElementsByTagName("g"):
        title = g.getElementsByTagName("title")[0].firstChild.data
        rect = g.getElementsByTagName("rect")[0]
        widths.setdefault(title.split(" ")[0], []).append(float(rect.getAttribute("width")))
    check("svg_frame_count", sum(len(v) for v in widths.values()) == 7, widths)
    check("svg_widths", abs(widths["all"][0] - FLAME_WIDTH) < 0.1 and abs(widths["parse"][0] - FLAME_WIDTH * 140 / 210) < 0.1
          and abs(widths["render"][0] - FLAME_WIDTH * 50 / 210) < 0.1 and sorted(widths["serve"]) ==
          sorted([round(FLAME_WIDTH * 190 / 210, 2), round(FLAME_WIDTH * 10 / 210, 2)]), widths)
    with open(svg) as f:
        text = f.read()
    check("svg_self_contained", "<script" not in text and "http://www.w3.org/2000/svg" in text and
          not re.search(r"(href|src)=\"http", text))

    # HTML: self-contained page.
    page = os.path.join(tmp, "f.html")
    r = subprocess.run([CLI, "flame", "--html", pb, "-o", page, "--title", "known <profile>"], capture_output=True, text=True)
    check("html_written", r.returncode == 0, r.stderr)
    with open(page) as f:
        html = f.read()
    check("html_self_contained", not re.search(r"(src|href)=|https?://(?!www\.w3)", html) and "<title>known &lt;profile&gt;</title>" in html)

    # Screenshot of the page as is: not blank, frames drawn in warm colours.
    shot = os.path.join(tmp, "plain.png")
    r = chromium(tmp, "--screenshot=" + shot, "file://" + page)
    check("chromium_screenshot", os.path.exists(shot), r.stderr[-400:])
    if not os.path.exists(shot):
        return
    rows = read_png(shot)
    colours = {px for row in rows for px in row}
    warm = sum(1 for row in rows for px in row if px[0] >= 195 and px[2] <= 70 and px[1] >= 75)
    check("screenshot_not_blank", len(colours) > 20, len(colours))
    check("screenshot_frames_painted", warm > FLAME_WIDTH * 15 * 4, warm)
    widest = max(longest_run(row, row[600], 0) for row in rows[40:200] if row[600][0] >= 195 and row[600][2] <= 70)
    check("screenshot_root_full_width", abs(widest - FLAME_WIDTH) <= 3, widest)

    # Screenshot after a scripted search: the match is highlighted in
    # magenta over exactly parse's share of the width.
    searched = os.path.join(tmp, "search.html")
    with open(searched, "w") as f:
        f.write(inject(html, SEARCH))
    shot2 = os.path.join(tmp, "search.png")
    chromium(tmp, "--screenshot=" + shot2, "file://" + searched)
    rows = read_png(shot2)
    magenta = max(longest_run(row, (0xe0, 0x40, 0xfb)) for row in rows)
    want = FLAME_WIDTH * 140 / 210
    check("screenshot_search_highlight_width", abs(magenta - want) <= 3, "%d vs %.1f" % (magenta, want))

    # Behaviour: search, click to zoom, hover details, reset (DOM after the script).
    interact = os.path.join(tmp, "interact.html")
    with open(interact, "w") as f:
        f.write(inject(html, INTERACT))
    r = chromium(tmp, "--dump-dom", "file://" + interact)
    m = re.search(r'<pre id="result">(.*?)</pre>', r.stdout, re.S)
    check("dom_dumped", m is not None, r.stdout[-400:] + r.stderr[-400:])
    if not m:
        return
    res = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    check("dom_initial_frames", res["initial"] == 7, res)
    check("dom_search_matched_share", res["matched"] == "matched 66.67%", res)
    check("dom_search_highlights", res["highlighted"] == ["parse"], res)
    check("dom_search_cleared", res["after_clear"] == 0, res)
    check("dom_zoom_fills_width", abs(res["render_width"] - res["flame_width"]) < 0.5 and res["flame_width"] > 1000, res)
    check("dom_zoom_hides_others", res["zoomed_names"] == ["all", "main", "render", "serve"], res)
    check("dom_zoom_ancestors", res["ancestors"] == ["all", "main", "serve"], res)
    check("dom_hover_details", res["details"] == "render: 50.00ms (23.81% of cpu)", res)
    check("dom_reset", res["after_reset"] == 7, res)


if __name__ == "__main__":
    main()
