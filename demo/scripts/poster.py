# A conference poster from /testbed/input/poster.json: SVG with svgwrite,
# rendered to PNG with CairoSVG.
import json, textwrap
import cairosvg, svgwrite

spec = json.load(open("/testbed/input/poster.json", encoding="utf-8"))
W, H = 1200, 1700
bg, accent, fg = spec["colors"]["background"], spec["colors"]["accent"], spec["colors"]["text"]
d = svgwrite.Drawing("/testbed/output/poster.svg", size=(W, H))
d.add(d.rect((0, 0), (W, H), fill=bg))
d.add(d.rect((0, 0), (W, 18), fill=accent))
y = 120
for line in textwrap.wrap(spec["title"], 34):
    d.add(d.text(line, insert=(60, y), fill=fg, font_size=56, font_family="DejaVu Sans", font_weight="bold"))
    y += 68
d.add(d.text(spec["subtitle"], insert=(60, y + 10), fill=accent, font_size=30, font_family="DejaVu Sans"))
y += 70
d.add(d.text(", ".join(spec["authors"]) + " - " + spec["affiliation"], insert=(60, y), fill=fg,
             font_size=22, font_family="DejaVu Sans", opacity=0.85))
y += 50
col_w, gap = (W - 3 * 60) // 2, 60
for i, sec in enumerate(spec["sections"]):
    x = 60 + (i % 2) * (col_w + gap)
    top = y + (i // 2) * 420
    d.add(d.rect((x, top), (col_w, 380), rx=18, fill="#ffffff", fill_opacity=0.08, stroke=accent, stroke_width=2))
    d.add(d.text(sec["heading"], insert=(x + 28, top + 60), fill=accent, font_size=36,
                 font_family="DejaVu Sans", font_weight="bold"))
    for j, line in enumerate(textwrap.wrap(sec["body"], 30)):
        d.add(d.text(line, insert=(x + 28, top + 120 + j * 38), fill=fg, font_size=26, font_family="DejaVu Sans"))
ny = y + 2 * 420 + 40
for i, (label, value) in enumerate(spec["numbers"]):
    cx = 60 + 180 + i * 360
    d.add(d.circle((cx, ny + 120), 110, fill=accent))
    d.add(d.text(value, insert=(cx, ny + 140), fill=bg, font_size=72, font_family="DejaVu Sans",
                 font_weight="bold", text_anchor="middle"))
    d.add(d.text(label, insert=(cx, ny + 270), fill=fg, font_size=26, font_family="DejaVu Sans", text_anchor="middle"))
d.save()
cairosvg.svg2png(url="/testbed/output/poster.svg", write_to="/testbed/output/poster.png",
                 output_width=W, output_height=H)
print("poster.svg and poster.png (%dx%d)" % (W, H))
