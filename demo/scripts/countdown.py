# An animated birthday countdown: 11 s at 30 fps. Frames are drawn with
# Pillow and piped raw into ffmpeg (H.264, yuv420p, plays in browsers).
import math, random, subprocess
from PIL import Image, ImageDraw, ImageFont

W, H, FPS, SECONDS = 640, 360, 30, 11
big = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 150)
small = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 54)
random.seed(7)
confetti = [(random.uniform(0, W), random.uniform(-H, 0), random.uniform(60, 160),
             random.choice([(242, 165, 65), (209, 73, 91), (0, 121, 140), (237, 174, 73), (255, 255, 255)]))
            for _ in range(120)]
ff = subprocess.Popen(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                       "-s", "%dx%d" % (W, H), "-r", str(FPS), "-i", "-", "-c:v", "libx264",
                       "-preset", "veryfast", "-pix_fmt", "yuv420p", "-r", str(FPS),
                       "-movflags", "+faststart", "/testbed/output/countdown.mp4"], stdin=subprocess.PIPE)
for f in range(FPS * SECONDS):
    t = f / FPS
    img = Image.new("RGB", (W, H), (15, 42, 68))
    d = ImageDraw.Draw(img)
    if t < 10:
        n = 10 - int(t)
        frac = t - int(t)
        r = int(120 + 40 * math.sin(frac * math.pi))
        d.ellipse([W / 2 - r, H / 2 - r, W / 2 + r, H / 2 + r], outline=(242, 165, 65), width=8)
        d.arc([W / 2 - r - 20, H / 2 - r - 20, W / 2 + r + 20, H / 2 + r + 20], -90, -90 + 360 * (1 - frac),
              fill=(209, 73, 91), width=6)
        d.text((W / 2, H / 2), str(n), font=big, fill=(255, 255, 255), anchor="mm")
    else:
        for x, y0, v, c in confetti:
            y = (y0 + v * (t - 10) * 3) % (H + 20)
            d.rectangle([x, y, x + 6, y + 10], fill=c)
        d.text((W / 2, H / 2), "Happy Birthday!", font=small, fill=(242, 165, 65), anchor="mm")
    ff.stdin.write(img.tobytes())
ff.stdin.close()
if ff.wait() != 0:
    raise SystemExit("ffmpeg failed")
print("countdown.mp4: %d frames at %d fps" % (FPS * SECONDS, FPS))
