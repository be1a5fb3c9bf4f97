# A 3-day Tokyo itinerary as one self-contained HTML page with Leaflet.
# The sandbox has no network, so Leaflet (Debian's libjs-leaflet) is inlined
# and there is no tile layer: the route is drawn over a plain background.
import json

LEAFLET = "/usr/share/javascript/leaflet/"
js = open(LEAFLET + "leaflet.js", encoding="utf-8").read()
css = open(LEAFLET + "leaflet.css", encoding="utf-8").read()

days = [
    {"day": "Day 1 - Classic Tokyo", "color": "#d1495b", "stops": [
        ["Senso-ji Temple", 35.7148, 139.7967, "Morning: Asakusa's oldest temple and Nakamise street"],
        ["Tokyo Skytree", 35.7101, 139.8107, "Late morning: city views from 350 m"],
        ["Ueno Park", 35.7156, 139.7745, "Afternoon: museums and Shinobazu pond"],
        ["Akihabara", 35.6984, 139.7731, "Evening: electronics and arcades"]]},
    {"day": "Day 2 - West side", "color": "#00798c", "stops": [
        ["Meiji Jingu", 35.6764, 139.6993, "Morning: forest shrine"],
        ["Harajuku - Takeshita St", 35.6717, 139.7030, "Late morning: street fashion"],
        ["Shibuya Crossing", 35.6595, 139.7005, "Afternoon: the scramble"],
        ["Shinjuku Gyoen", 35.6852, 139.7101, "Evening walk, then Omoide Yokocho"]]},
    {"day": "Day 3 - Bay and gardens", "color": "#edae49", "stops": [
        ["Tsukiji Outer Market", 35.6655, 139.7707, "Breakfast: sushi and tamagoyaki"],
        ["Hamarikyu Gardens", 35.6600, 139.7633, "Tea house on the pond"],
        ["teamLab Planets", 35.6491, 139.7898, "Afternoon: digital art"],
        ["Odaiba Seaside Park", 35.6298, 139.7745, "Sunset over Rainbow Bridge"]]},
]

page = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>3 days in Tokyo</title>
<style>%(css)s
html, body { margin: 0; height: 100%%; font: 14px system-ui, sans-serif; }
#map { position: absolute; inset: 0 0 0 260px; background: #dfe8ef; }
#side { position: absolute; inset: 0 auto 0 0; width: 260px; overflow: auto; padding: 12px; box-sizing: border-box; background: #fff; }
#side h1 { font-size: 18px; margin: 0 0 8px; }
.day { margin: 10px 0; } .day h2 { font-size: 15px; margin: 0 0 4px; cursor: pointer; }
.day li { margin: 2px 0; } .note { color: #666; font-size: 12px; }
</style></head><body>
<div id="side"><h1>3 days in Tokyo</h1><p class="note">Offline map: routes and stops are drawn without map tiles.</p><div id="days"></div></div>
<div id="map"></div>
<script>%(js)s</script>
<script>
var DAYS = %(days)s;
var map = L.map('map', {zoomControl: true});
var all = [];
DAYS.forEach(function (d, i) {
  var pts = d.stops.map(function (s) { return [s[1], s[2]]; });
  all = all.concat(pts);
  L.polyline(pts, {color: d.color, weight: 4}).addTo(map);
  d.stops.forEach(function (s, j) {
    L.circleMarker([s[1], s[2]], {radius: 8, color: d.color, fillOpacity: 0.9})
      .bindPopup('<b>' + (j + 1) + '. ' + s[0] + '</b><br>' + s[3]).addTo(map);
  });
  var box = document.createElement('div'); box.className = 'day';
  var h = document.createElement('h2'); h.textContent = d.day; h.style.color = d.color;
  h.onclick = function () { map.fitBounds(L.latLngBounds(pts).pad(0.3)); };
  var ol = document.createElement('ol');
  d.stops.forEach(function (s) { var li = document.createElement('li'); li.textContent = s[0] + ' - ' + s[3]; ol.appendChild(li); });
  box.appendChild(h); box.appendChild(ol); document.getElementById('days').appendChild(box);
});
map.fitBounds(L.latLngBounds(all).pad(0.1));
</script></body></html>
""" % {"css": css, "js": js, "days": json.dumps(days)}

open("/testbed/output/map.html", "w", encoding="utf-8").write(page)
print("map.html: %d bytes, %d stops over %d days" % (len(page), sum(len(d["stops"]) for d in days), len(days)))
